# check_symbols.cmake — fails when the public static library defines a global symbol that
# is not part of the API (kiln_*): internals must be local there, as they are hidden in
# the shared library, so programs may use names such as sha256 or host_alloc themselves.
# Run by ctest: cmake -DNM=<nm> -DLIB=<libkiln.a> -P check_symbols.cmake
execute_process(COMMAND ${NM} -g --defined-only ${LIB} OUTPUT_VARIABLE out
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${NM} could not read ${LIB}")
endif()
string(REPLACE "\n" ";" lines "${out}")
set(api 0)
set(bad "")
foreach(line IN LISTS lines)
  # "<address> <type> <name>"; archive member headers and blank lines have no type.
  if(NOT line MATCHES "^[0-9a-fA-F]+ [A-Za-z] (.+)$")
    continue()
  endif()
  set(name ${CMAKE_MATCH_1})
  if(name MATCHES "^kiln_")
    math(EXPR api "${api} + 1")
  else()
    list(APPEND bad ${name})
  endif()
endforeach()
if(bad)
  list(LENGTH bad n)
  string(REPLACE ";" " " bad "${bad}")
  message(FATAL_ERROR "${LIB} defines ${n} global symbols outside the kiln_ API: ${bad}")
endif()
if(api LESS 50)
  message(FATAL_ERROR "${LIB} defines only ${api} kiln_ symbols: is it the library?")
endif()
message(STATUS "${LIB}: ${api} global symbols, all kiln_")

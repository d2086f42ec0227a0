# check_deprecated.cmake — a program that uses an old name of kiln.h's "Deprecated names"
# section gets a warning naming the replacement, where the compiler can say so: deprecated
# functions and the old type name with GCC and clang, the old enum values (macros) with
# clang 14 and later only (GCC cannot mark a macro). Compiles tests/deprecated_warns.c.
# Run by ctest: cmake -DCC=<compiler> -DCC_ID=<CMAKE_C_COMPILER_ID> -DSRC=<source dir>
#               -P check_deprecated.cmake
if(NOT CC_ID MATCHES "^(GNU|Clang|AppleClang)$")
  # cmake -P cannot exit 77: ctest reads this line instead (SKIP_REGULAR_EXPRESSION)
  message("SKIP: ${CC_ID} is not a compiler kiln.h marks deprecated names for")
  return()
endif()
execute_process(COMMAND ${CC} -std=c11 -fsyntax-only -I${SRC}/include
                        ${SRC}/tests/deprecated_warns.c
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "deprecated_warns.c does not compile with ${CC}:\n${err}")
endif()
set(want "use kiln_cmp" "use kiln_array_destroy" "use kiln_dtype_itemsize")
execute_process(COMMAND ${CC} -dM -E -x c /dev/null OUTPUT_VARIABLE macros)
if(macros MATCHES "#define __clang_major__ ([0-9]+)" AND CMAKE_MATCH_1 GREATER_EQUAL 14)
  list(APPEND want "use KILN_DTYPE_F32")
endif()
foreach(w IN LISTS want)
  string(FIND "${err}" "${w}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "no deprecation warning saying '${w}' from ${CC}:\n${err}")
  endif()
endforeach()
list(LENGTH want n)
message(STATUS "${CC}: ${n} deprecation warnings, each naming the replacement")

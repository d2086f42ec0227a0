# embed_text.cmake — turns a text file into a C string constant, at build time, with CMake
# alone (no xxd, no Python): cmake -DIN=<file> -DOUT=<file.c> -DNAME=<identifier>
#   -DHEADER=<header to include> -P embed_text.cmake
#
# The runtime preludes of src/codegen/prelude/ are written as the C and CUDA they are; this
# makes each one `const char NAME[]` holding its text byte for byte, but for the lines whose
# first non-blank characters are `//`: those are notes for whoever reads the file in the tree,
# and are left out (the generated source, and so every kernel cache key, stays as it was).
# Every other character is kept; `"` and `?` are escaped, and `\`, `;`, `[`, `]` (which
# CMake's lists would escape, split on or group by) are written as octal escapes before the
# text is split into lines. The file must end with a newline.
file(READ "${IN}" text)
string(LENGTH "${text}" n)
if(n EQUAL 0)
  message(FATAL_ERROR "embed_text: ${IN} is empty")
endif()
math(EXPR last "${n} - 1")
string(SUBSTRING "${text}" ${last} 1 tail)
if(NOT tail STREQUAL "\n")
  message(FATAL_ERROR "embed_text: ${IN} does not end with a newline")
endif()
string(SUBSTRING "${text}" 0 ${last} text)
string(REPLACE "\\" "\\134" text "${text}")
string(REPLACE "\"" "\\\"" text "${text}")
string(REPLACE "?" "\\?" text "${text}")
string(REPLACE "\t" "\\t" text "${text}")
string(REPLACE ";" "\\073" text "${text}")
string(REPLACE "[" "\\133" text "${text}")
string(REPLACE "]" "\\135" text "${text}")
string(REPLACE "\n" ";" lines "${text}")
set(body "")
foreach(line IN LISTS lines)
  if(line MATCHES "^[ ]*//")
    continue()
  endif()
  string(APPEND body "    \"${line}\\n\"\n")
endforeach()
get_filename_component(src "${IN}" NAME)
file(WRITE "${OUT}.tmp"
     "/* generated from prelude/${src} by cmake/embed_text.cmake: edit that file, not this */\n"
     "#include \"${HEADER}\"\n\n"
     "const char ${NAME}[] =\n${body};\n")
# rewritten only when it changed, so that an unchanged prelude rebuilds nothing
configure_file("${OUT}.tmp" "${OUT}" COPYONLY)
file(REMOVE "${OUT}.tmp")

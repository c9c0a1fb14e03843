# cmake -DAR=ar -DIN=build/libmeshlm_lib.a -DOUT=rest.a -DPARSERS=a.cpp,b.cpp -P this file
# A copy of the g++ build's library without its parsers' objects (cmake/fuzz.cmake): a fuzz
# target must take every parser from clang, and an archive member that the linker pulls in for
# one symbol of the rest brings all of its own definitions with it.
cmake_minimum_required(VERSION 3.25)  # the policies: IN_LIST
execute_process(COMMAND ${AR} t ${IN} OUTPUT_VARIABLE members COMMAND_ERROR_IS_FATAL ANY)
string(REPLACE "\n" ";" members "${members}")
string(REPLACE "," ";" PARSERS "${PARSERS}")
set(drop "")
foreach(m IN LISTS members)
  string(REGEX REPLACE "\\.o$" "" source "${m}")
  # unity batches of parsers (cmake/build_speed.cmake), or a parser compiled alone
  if(m MATCHES "^unity_.*_parsers_[0-9]+_cxx\\.cxx\\.o$" OR source IN_LIST PARSERS)
    list(APPEND drop ${m})
  endif()
endforeach()
file(COPY_FILE ${IN} ${OUT}.tmp)
if(drop)
  execute_process(COMMAND ${AR} d ${OUT}.tmp ${drop} COMMAND_ERROR_IS_FATAL ANY)
endif()
file(RENAME ${OUT}.tmp ${OUT})

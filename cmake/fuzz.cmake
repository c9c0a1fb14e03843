# The libFuzzer build (scripts/fuzz.sh; docs/reliability.md "Fuzzing"): -DMESHLM_FUZZ=ON with
# clang and -DMESHLM_SANITIZE=address (cmake/sanitize.cmake: ASan + UBSan, -O1 -g). The fuzz/
# targets link libFuzzer's main (-fsanitize=fuzzer), one executable per parser:
# build-fuzz/fuzz/fuzz_<target>. Without it, the same target sources are built into one replay
# driver that the test suite runs (fuzz/CMakeLists.txt).
#
# What clang builds: the parsers' own sources (MESHLM_FUZZ_SOURCES_REGEX), with
# coverage (-fsanitize=fuzzer-no-link), ASan and UBSan. The rest -- kernels, model, engine,
# optimizer, trainer, the code the parsers hand their results to -- comes uninstrumented from the
# ordinary g++ build's libmeshlm_lib.a and libmeshlm_kernels.a (MESHLM_FUZZ_GXX_BUILD, build/ by
# default; scripts/fuzz.sh builds them first): an eighth of the sources for clang to compile, and
# libFuzzer's coverage counts the parsers only. The archives are linked as one group, the clang
# objects first, so a parser's symbols come from its instrumented object.
option(MESHLM_FUZZ "Build the libFuzzer targets of fuzz/ (clang, with MESHLM_SANITIZE=address)" OFF)

# The parsers' sources. Also read by the ordinary build (cmake/build_speed.cmake): its unity
# batches keep them apart from the rest, so a fuzz target linking a batch of the rest from
# build/ never gets a second, uninstrumented definition of a parser.
set(MESHLM_FUZZ_SOURCES_REGEX
    "/cli/(config|config_[a-z_]+|overrides|suggest|validators|yaml_documents)\\.cpp$"
    "|/io/(safetensors(_set)?|checkpoint|shard_format)\\.cpp$"
    "|/data/(tokenizer|bpe_tokenizer|byte_tokenizer_json|spm_tokenizer|pretokenize)\\.cpp$"
    "|/data/(shard|loader|prepare|corpus_reader|chat_template)\\.cpp$|/data/(jinja|hf)/"
    "|/infer/(server|http_front|request_fields|chat_request)\\.cpp$")
string(JOIN "" MESHLM_FUZZ_SOURCES_REGEX ${MESHLM_FUZZ_SOURCES_REGEX})

if(MESHLM_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "MESHLM_FUZZ needs clang (libFuzzer): -DCMAKE_CXX_COMPILER=clang++-14")
  endif()
  if(NOT MESHLM_SANITIZE STREQUAL "address")
    message(FATAL_ERROR "MESHLM_FUZZ needs -DMESHLM_SANITIZE=address (ASan + UBSan find the bugs)")
  endif()
  message(STATUS "libFuzzer build: fuzz/ targets only")
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-fsanitize=fuzzer-no-link>)
  set(MESHLM_FUZZ_GXX_BUILD "${PROJECT_SOURCE_DIR}/build" CACHE PATH
      "The g++ build whose libmeshlm_lib.a supplies the uninstrumented rest of the library")
  foreach(lib libmeshlm_lib.a libmeshlm_kernels.a)
    if(NOT EXISTS "${MESHLM_FUZZ_GXX_BUILD}/${lib}")
      message(FATAL_ERROR "MESHLM_FUZZ: ${MESHLM_FUZZ_GXX_BUILD}/${lib} not found; build "
                          "meshlm_lib there first (scripts/fuzz.sh does)")
    endif()
  endforeach()
  # The rest of the g++ library, its parsers' objects taken out (cmake/fuzz_rest_archive.cmake).
  file(GLOB_RECURSE parsers CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/meshlm/*.cpp)
  list(FILTER parsers INCLUDE REGEX "${MESHLM_FUZZ_SOURCES_REGEX}")
  list(TRANSFORM parsers REPLACE ".*/" "")
  string(JOIN "," parsers ${parsers})
  set(rest ${PROJECT_BINARY_DIR}/gxx/libmeshlm_rest.a)
  add_custom_command(OUTPUT ${rest}
                     COMMAND ${CMAKE_COMMAND} -DAR=${CMAKE_AR}
                             -DIN=${MESHLM_FUZZ_GXX_BUILD}/libmeshlm_lib.a -DOUT=${rest}
                             "-DPARSERS=${parsers}"
                             -P ${PROJECT_SOURCE_DIR}/cmake/fuzz_rest_archive.cmake
                     DEPENDS ${MESHLM_FUZZ_GXX_BUILD}/libmeshlm_lib.a
                             ${PROJECT_SOURCE_DIR}/cmake/fuzz_rest_archive.cmake
                     COMMENT "The g++ library without its parsers" VERBATIM)
  add_custom_target(meshlm_gxx_rest DEPENDS ${rest})
  add_library(meshlm_gxx_lib STATIC IMPORTED)
  set_target_properties(meshlm_gxx_lib PROPERTIES IMPORTED_LOCATION ${rest})
endif()

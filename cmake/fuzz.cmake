# The libFuzzer build (scripts/fuzz.sh; docs/reliability.md "Fuzzing"): -DMESHLM_FUZZ=ON with
# clang and -DMESHLM_SANITIZE=address (cmake/sanitize.cmake: ASan + UBSan, -O1 -g). Every source
# gets libFuzzer's coverage instrumentation (-fsanitize=fuzzer-no-link); the fuzz/ targets link
# libFuzzer's main (-fsanitize=fuzzer), one executable per parser: build-fuzz/fuzz/fuzz_<target>.
# Without it, the same target sources are built into one replay driver that the test suite runs
# (fuzz/CMakeLists.txt).
option(MESHLM_FUZZ "Build the libFuzzer targets of fuzz/ (clang, with MESHLM_SANITIZE=address)" OFF)

if(MESHLM_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "MESHLM_FUZZ needs clang (libFuzzer): -DCMAKE_CXX_COMPILER=clang++-14")
  endif()
  if(NOT MESHLM_SANITIZE STREQUAL "address")
    message(FATAL_ERROR "MESHLM_FUZZ needs -DMESHLM_SANITIZE=address (ASan + UBSan find the bugs)")
  endif()
  message(STATUS "libFuzzer build: fuzz/ targets only")
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-fsanitize=fuzzer-no-link>)
endif()

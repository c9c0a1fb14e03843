# Sanitizer builds (scripts/test.sh --sanitize): -DMESHLM_SANITIZE=address builds everything,
# tests included, with AddressSanitizer + UndefinedBehaviorSanitizer (LeakSanitizer comes with
# ASan); -DMESHLM_SANITIZE=thread with ThreadSanitizer, clang and LLVM's OpenMP runtime
# (cmake/sanitize_thread.cmake). Any undefined behaviour aborts the test
# that hits it (-fno-sanitize-recover) instead of printing a line nobody reads.
# -O1 -g: fast enough to run the unit suite, with stack traces that name every frame.
set(MESHLM_SANITIZE "" CACHE STRING "Sanitizer build: address (ASan + UBSan) or thread (TSan)")
set_property(CACHE MESHLM_SANITIZE PROPERTY STRINGS "" address thread)

if(MESHLM_SANITIZE STREQUAL "address")
  set(MESHLM_SANITIZE_FLAGS -fsanitize=address,undefined -fno-sanitize-recover=undefined)
  # libstdc++'s bounds checks (operator[], front(), back()): they catch an index past size()
  # that still lies inside the vector's capacity, which ASan cannot see. ABI-compatible.
  add_compile_definitions(_GLIBCXX_ASSERTIONS)
elseif(MESHLM_SANITIZE STREQUAL "thread")
  set(MESHLM_SANITIZE_FLAGS -fsanitize=thread)
  include(${CMAKE_CURRENT_LIST_DIR}/sanitize_thread.cmake)
elseif(NOT MESHLM_SANITIZE STREQUAL "")
  message(FATAL_ERROR "MESHLM_SANITIZE=${MESHLM_SANITIZE}: expected address or thread")
endif()

if(MESHLM_SANITIZE)
  if(MESHLM_CUDA)
    message(FATAL_ERROR "MESHLM_SANITIZE does not combine with MESHLM_CUDA (host code only)")
  endif()
  message(STATUS "Sanitizer build: ${MESHLM_SANITIZE} (${MESHLM_SANITIZE_FLAGS})")
  # After the build type's flags on the command line, so -O1 wins over RelWithDebInfo's -O2.
  add_compile_options(${MESHLM_SANITIZE_FLAGS} -fno-omit-frame-pointer -O1 -g)
  add_link_options(${MESHLM_SANITIZE_FLAGS})
endif()

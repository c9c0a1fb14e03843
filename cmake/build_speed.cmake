# What makes a build from scratch fast (scripts/setup.sh builds meshlm alone; CI builds it all).
# Measured in bench/README.md "Build time".
#
# Unity batches: meshlm_lib's sources compile a directory at a time in batches, so CLI11,
# nlohmann/json and cpp-httplib (5 s of parsing each per source) and their template instances
# are compiled once per batch instead of once per source. A developer rebuilding one file all
# day can turn it off: -DMESHLM_UNITY=OFF.
option(MESHLM_UNITY "Compile meshlm_lib in unity batches (faster full builds)" ON)
if(MESHLM_UNITY AND NOT MESHLM_FUZZ)
  set_target_properties(meshlm_lib PROPERTIES UNITY_BUILD ON UNITY_BUILD_MODE GROUP)
  # GCC takes every included .cpp of a batch for a header and then warns about a class holding
  # a type of that file's anonymous namespace, which is fine in a .cpp.
  target_compile_options(meshlm_lib PRIVATE
                         $<$<COMPILE_LANG_AND_ID:CXX,GNU>:-Wno-subobject-linkage>)
  # One group per directory of src/meshlm (cli, data, infer, ...), split in groups of at most
  # MESHLM_UNITY_BATCH sources so both cores stay busy and a group's object stays small.
  set(MESHLM_UNITY_BATCH 8 CACHE STRING "Sources per unity batch of meshlm_lib")
  # A batch is one translation unit, so names in anonymous namespaces must differ between the
  # files of a directory. The tokenizer.json components name their classes after HF's types
  # (Strip, Replace, Sequence, ... in several of them): they compile alone.
  set(MESHLM_UNITY_ALONE "/data/hf/(decoders|normalizers|post_processors|pre_tokenizers)\\.cpp$")
  foreach(src IN LISTS MESHLM_LIB_SOURCES)
    if(src MATCHES "${MESHLM_UNITY_ALONE}")
      set_source_files_properties(${src} TARGET_DIRECTORY meshlm_lib PROPERTIES
                                  SKIP_UNITY_BUILD_INCLUSION ON)
      continue()
    endif()
    if(src MATCHES "/src/meshlm/([a-z_]+)/")
      set(dir ${CMAKE_MATCH_1})
    else()
      set(dir generated)
    endif()
    # The fuzz build takes the parsers from clang and the rest from here (cmake/fuzz.cmake):
    # a batch mixing both would define a parser twice in a fuzz target. Parsers batch by their
    # own directory (data/hf and data/jinja both name a `Json`).
    if(src MATCHES "${MESHLM_FUZZ_SOURCES_REGEX}" AND src MATCHES "/src/meshlm/([a-z_/]+)/[^/]+$")
      string(REPLACE "/" "_" dir "${CMAKE_MATCH_1}_parsers")
    endif()
    if(NOT DEFINED _unity_n_${dir})
      set(_unity_n_${dir} 0)
    endif()
    math(EXPR batch "${_unity_n_${dir}} / ${MESHLM_UNITY_BATCH}")
    math(EXPR _unity_n_${dir} "${_unity_n_${dir}} + 1")
    set_source_files_properties(${src} TARGET_DIRECTORY meshlm_lib PROPERTIES
                                UNITY_GROUP "${dir}_${batch}")
  endforeach()
endif()

# -O3 only for the kernels (the default for Release is -O2, CMakeLists.txt).
if(CMAKE_BUILD_TYPE STREQUAL "Release" AND NOT MESHLM_FUZZ)
  target_compile_options(meshlm_kernels PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-O3>)
endif()

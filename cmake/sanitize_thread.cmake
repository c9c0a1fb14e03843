# The TSan build's OpenMP (cmake/sanitize.cmake, -DMESHLM_SANITIZE=thread). TSan sees no
# synchronization inside an uninstrumented OpenMP runtime, so every barrier, reduction and
# fork/join of the kernels would look like a race. LLVM's libomp announces them through OMPT, and
# its Archer tool (libarcher.so, linked into every executable here) turns those events into
# happens-before edges for TSan. GNU's libgomp has no such interface, hence clang.
#
# oneDNN (libdnnl.so.2) is built against libgomp (DT_NEEDED libgomp.so.1), but libomp exports
# the GOMP_* and omp_* entry points with libgomp's symbol versions, and it comes first in the
# lookup order, so it already serves dnnl's parallel regions. To keep libgomp out of the
# process entirely, libgomp.so.1 is found (DT_RPATH, which also applies to dnnl's own
# dependencies) in build-tsan/omp-as-gomp/, a link to libomp.so.5: the loader sees the same file
# and loads it once. `LD_DEBUG=files` shows no libgomp.so.1 of its own.
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "MESHLM_SANITIZE=thread needs clang (LLVM's libomp and its Archer tool): "
                      "-DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14")
endif()
string(REGEX MATCH "^[0-9]+" llvm_major "${CMAKE_CXX_COMPILER_VERSION}")
find_library(MESHLM_LIBOMP NAMES libomp.so.5 omp HINTS /usr/lib/llvm-${llvm_major}/lib REQUIRED)
find_library(MESHLM_ARCHER archer HINTS /usr/lib/llvm-${llvm_major}/lib REQUIRED)
get_filename_component(libomp_file "${MESHLM_LIBOMP}" REALPATH)
set(omp_as_gomp ${PROJECT_BINARY_DIR}/omp-as-gomp)
file(MAKE_DIRECTORY ${omp_as_gomp})
file(CREATE_LINK ${libomp_file} ${omp_as_gomp}/libgomp.so.1 SYMBOLIC)
# FindOpenMP picks -fopenmp=libomp for clang; --no-as-needed keeps Archer, which no object
# references.
add_link_options(-Wl,--disable-new-dtags -Wl,-rpath,${omp_as_gomp} -Wl,--no-as-needed
                 ${MESHLM_ARCHER})
message(STATUS "TSan OpenMP: ${libomp_file} (also as libgomp.so.1), Archer ${MESHLM_ARCHER}")

# The CUDA backend (-DMESHLM_CUDA=ON): nvcc for kernels/cuda/*.cu, cuBLASLt for the GEMMs, NCCL
# for the collectives. Included from the top-level CMakeLists.txt before the libraries exist;
# meshlm_add_cuda_backend() adds the CUDA sources to them once they do.
#
# Targets sm_90 (H100) as machine code plus compute_90 PTX, which newer GPUs JIT-compile.
# Override with -DCMAKE_CUDA_ARCHITECTURES=... (e.g. "80-real;90-real;90-virtual").
if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
  set(CMAKE_CUDA_ARCHITECTURES 90-real 90-virtual)
endif()
if(NOT DEFINED CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX}
   AND EXISTS /usr/local/cuda/bin/nvcc)
  set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
endif()
enable_language(CUDA)
# C++20 like the host code. CMake 3.25 knows no C++20 flag for nvcc (12+ has one); without
# these it refuses the CXX_STANDARD that CUDA sources inherit.
if(NOT DEFINED CMAKE_CUDA20_STANDARD_COMPILE_OPTION OR CMAKE_CUDA20_STANDARD_COMPILE_OPTION STREQUAL "")
  set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
  set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
endif()
# One CUDA runtime, the shared one that CUDA::cudart and cuBLASLt use (CMake's default would
# add the static one beside it).
set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
set(CMAKE_CUDA_STANDARD 20)
set(CMAKE_CUDA_STANDARD_REQUIRED ON)
set(CMAKE_CUDA_FLAGS_RELEASE "-O3 -DNDEBUG")
find_package(CUDAToolkit REQUIRED)

# NCCL ships beside the toolkit here (/usr/local/cuda/include, lib64); elsewhere in the system
# paths (Debian's libnccl-dev) or under NCCL_ROOT.
find_path(MESHLM_NCCL_INCLUDE nccl.h HINTS $ENV{NCCL_ROOT}/include ${CUDAToolkit_INCLUDE_DIRS})
find_library(MESHLM_NCCL nccl HINTS $ENV{NCCL_ROOT}/lib ${CUDAToolkit_LIBRARY_DIR})
if(NOT MESHLM_NCCL_INCLUDE OR NOT MESHLM_NCCL)
  message(FATAL_ERROR "MESHLM_CUDA: NCCL not found (nccl.h, libnccl.so); set NCCL_ROOT")
endif()
message(STATUS "meshlm CUDA backend: CUDA ${CUDAToolkit_VERSION}, architectures "
               "${CMAKE_CUDA_ARCHITECTURES}, NCCL ${MESHLM_NCCL}")

function(meshlm_add_cuda_backend)
  file(GLOB MESHLM_CUDA_SOURCES CONFIGURE_DEPENDS
       ${PROJECT_SOURCE_DIR}/src/meshlm/kernels/cuda/*.cu
       ${PROJECT_SOURCE_DIR}/src/meshlm/kernels/cuda/*.cpp)
  file(GLOB_RECURSE MESHLM_CUDA_CPP CONFIGURE_DEPENDS
       ${PROJECT_SOURCE_DIR}/src/meshlm/core/*_cuda.cpp
       ${PROJECT_SOURCE_DIR}/src/meshlm/kernels/*_cuda.cpp)
  target_sources(meshlm_kernels PRIVATE ${MESHLM_CUDA_SOURCES} ${MESHLM_CUDA_CPP})
  target_compile_definitions(meshlm_kernels PUBLIC MESHLM_HAVE_CUDA)
  target_compile_options(meshlm_kernels PRIVATE
    $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra,-Wno-unused-parameter>)
  target_link_libraries(meshlm_kernels PUBLIC CUDA::cudart CUDA::cublasLt)

  # The NCCL communicator (parallel/), an object library of its own so that CI can compile it
  # without the rest of meshlm_lib; its objects go into meshlm_lib.
  add_library(meshlm_nccl OBJECT ${PROJECT_SOURCE_DIR}/src/meshlm/parallel/nccl_comm.cpp)
  target_include_directories(meshlm_nccl PUBLIC ${MESHLM_NCCL_INCLUDE})
  target_link_libraries(meshlm_nccl PUBLIC meshlm_kernels ${MESHLM_NCCL})
  target_link_libraries(meshlm_lib PUBLIC meshlm_nccl)
endfunction()

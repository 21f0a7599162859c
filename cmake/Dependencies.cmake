# Dependencies every layer builds on, found as DEPENDENCIES.md verified on
# Debian 12. The others are found REQUIRED in the CMakeLists of the code that
# uses them (frameworks/: oneDNN, Eigen, Torch; training/: HDF5, zlib;
# recipes/ and benchmarks/: CLI11; tests/: GTest; benchmarks/: Google
# Benchmark), so a target's dependencies are found beside it.

# Protobuf first: ONNXConfig.cmake does not find_dependency it.
find_package(Protobuf 3.21 REQUIRED)
find_package(ONNX REQUIRED)  # targets onnx, onnx_proto; ONNX_ML=1 ONNX_NAMESPACE=onnx
find_package(nlohmann_json 3.11 REQUIRED)
find_package(Threads REQUIRED)

set(DEEP500_HAVE_CUDA OFF)
if(DEEP500_WITH_CUDA)
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 90)  # H100/H200; "native" needs a GPU
    endif()
    set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
    enable_language(CUDA)
    set(CMAKE_CUDA_STANDARD 17)
    find_package(CUDAToolkit REQUIRED)
    find_path(CUDNN_INCLUDE_DIR cudnn.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
    find_library(CUDNN_LIBRARY cudnn HINTS ${CUDAToolkit_LIBRARY_DIR})
    find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
    find_library(NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR})
    if(CUDNN_LIBRARY AND CUDNN_INCLUDE_DIR AND NCCL_LIBRARY AND NCCL_INCLUDE_DIR)
      add_library(cudnn::cudnn SHARED IMPORTED)
      set_target_properties(cudnn::cudnn PROPERTIES IMPORTED_LOCATION ${CUDNN_LIBRARY}
                            INTERFACE_INCLUDE_DIRECTORIES ${CUDNN_INCLUDE_DIR})
      add_library(nccl::nccl SHARED IMPORTED)
      set_target_properties(nccl::nccl PROPERTIES IMPORTED_LOCATION ${NCCL_LIBRARY}
                            INTERFACE_INCLUDE_DIRECTORIES ${NCCL_INCLUDE_DIR})
      set(DEEP500_HAVE_CUDA ON)
    else()
      message(STATUS "deep500: CUDA found but cuDNN/NCCL missing; GPU backends off")
    endif()
  endif()
endif()
message(STATUS "deep500: onednn=${DEEP500_WITH_ONEDNN} eigen=${DEEP500_WITH_EIGEN} "
               "torch=${DEEP500_WITH_TORCH} cuda=${DEEP500_HAVE_CUDA}")

find_package(LLVM 14 REQUIRED CONFIG)
separate_arguments(AVIFLOW_LLVM_DEFINITIONS NATIVE_COMMAND ${LLVM_DEFINITIONS})
llvm_map_components_to_libnames(AVIFLOW_LLVM_LIBS support)
set(AVIFLOW_LLVM_TOOLS_DIR ${LLVM_TOOLS_BINARY_DIR})

find_package(fmt 9 REQUIRED CONFIG)
find_package(yaml-cpp 0.7 REQUIRED CONFIG)
find_package(CLI11 2 REQUIRED CONFIG)
find_package(Python3 REQUIRED COMPONENTS Interpreter)
# libcrypto only (runtime/crypto: SHA-256, AES-256-GCM); nothing links libssl.
find_package(OpenSSL 3 REQUIRED COMPONENTS Crypto)

# LLVM headers carry unused-parameter warnings; LLVM Support is linked
# statically (one copy of its globals, fast start-up).
add_library(aviflow_llvm INTERFACE)
target_include_directories(aviflow_llvm SYSTEM INTERFACE ${LLVM_INCLUDE_DIRS})
target_compile_definitions(aviflow_llvm INTERFACE ${AVIFLOW_LLVM_DEFINITIONS})
target_link_libraries(aviflow_llvm INTERFACE ${AVIFLOW_LLVM_LIBS})

include(CheckLanguage)
if(AVIFLOW_ENABLE_CUDA)
  check_language(CUDA)
endif()
if(AVIFLOW_ENABLE_CUDA AND CMAKE_CUDA_COMPILER)
  enable_language(CUDA)
  # CMake 3.25 knows no C++20 dialect for nvcc, which has had one since 12.0;
  # the kernels share the runtime's C++20 headers.
  if(NOT DEFINED CMAKE_CUDA20_STANDARD_COMPILE_OPTION AND CMAKE_CUDA_COMPILER_VERSION VERSION_GREATER_EQUAL 12.0)
    set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
    list(APPEND CMAKE_CUDA_COMPILE_FEATURES cuda_std_20)
    list(APPEND CMAKE_CUDA20_COMPILE_FEATURES cuda_std_20)
  endif()
  find_package(CUDAToolkit REQUIRED)
  find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
  find_library(NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR})
  set(AVIFLOW_HAVE_CUDA ON)
  message(STATUS "aviflowc: CUDA ${CUDAToolkit_VERSION} found; NCCL: ${NCCL_LIBRARY}")
else()
  set(AVIFLOW_HAVE_CUDA OFF)
  message(STATUS "aviflowc: no CUDA toolkit; CUDA targets are skipped")
endif()

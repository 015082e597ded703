# CUDA is optional: later runtime and kernel targets compile with it where the
# toolkit exists. Never link libcuda: binaries must start on machines without a
# driver, so only the runtime API (cudart, shared) is used.
option(AVIFLOW_ENABLE_CUDA "Compile CUDA targets when a toolkit is found" ON)
if(AVIFLOW_ENABLE_CUDA AND NOT DEFINED CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
  set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
endif()
if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
  # "native" fails where no GPU is present; name the architectures instead.
  set(CMAKE_CUDA_ARCHITECTURES "80;90")
endif()
set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)

# The CUDA kernels (kernels/) against the CPU references, where the toolkit is
# found. Without a GPU the GPU tests skip with CUDA's reason; a launch must
# then fail cleanly (kernels_test.cpp).
if(TARGET avf_kernels)
  add_executable(avf_kernels_tests kernels_test.cpp)
  target_link_libraries(avf_kernels_tests PRIVATE avf_kernels avf_cpu_kernels avf_optim GTest::gtest_main)
  add_test(NAME unit/kernels COMMAND avf_kernels_tests)
  # The binary must not need libcuda.so.1 (absent without a driver).
  avf_test_no_libcuda(unit/kernels_no_libcuda avf_kernels_tests "libcudart\\.so")
  # The kernel contract (kernel_contract.h) on the CUDA backend: skips, with
  # the reason, where GPU 0 cannot run the kernels.
  add_executable(avf_kernel_contract_cuda_tests kernel_contract_cuda_test.cpp)
  target_link_libraries(avf_kernel_contract_cuda_tests PRIVATE avf_kernels avf_cpu_kernels GTest::gtest_main)
  add_test(NAME unit/kernel_contract_cuda COMMAND avf_kernel_contract_cuda_tests)
endif()

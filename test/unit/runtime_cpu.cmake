# CPU kernels (runtime/cpu): gradients against finite differences in fp64.
add_executable(avf_cpu_kernels_tests cpu_kernels_test.cpp cpu_blas_core_test.cpp)
target_link_libraries(avf_cpu_kernels_tests PRIVATE avf_cpu_kernels GTest::gtest_main)
add_test(NAME unit/cpu_kernels COMMAND avf_cpu_kernels_tests)
# The kernel contract (kernel_contract.h) on the CPU backend, fp32 and bf16,
# against the fp64 kernels; kernels.cmake instantiates it for CUDA.
add_executable(avf_kernel_contract_cpu_tests kernel_contract_cpu_test.cpp)
target_link_libraries(avf_kernel_contract_cpu_tests PRIVATE avf_cpu_kernels GTest::gtest_main)
add_test(NAME unit/kernel_contract_cpu COMMAND avf_kernel_contract_cpu_tests)

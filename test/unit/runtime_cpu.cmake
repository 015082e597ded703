# CPU kernels (runtime/cpu): gradients against finite differences in fp64.
add_executable(avf_cpu_kernels_tests cpu_kernels_test.cpp cpu_blas_core_test.cpp)
target_link_libraries(avf_cpu_kernels_tests PRIVATE avf_cpu_kernels GTest::gtest_main)
add_test(NAME unit/cpu_kernels COMMAND avf_cpu_kernels_tests)

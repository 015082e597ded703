# The CPU communicator (runtime/comm): ranks are forked processes on
# 127.0.0.1 meeting through a rendezvous store in the parent. Timeouts are 1-2 s.
# comm_bf16_test.cpp: the bf16 conversions, in the same process;
# comm_errors_test.cpp: the communicators' error codes.
add_library(avf_forked_ranks STATIC forked_ranks.cpp)
target_link_libraries(avf_forked_ranks PUBLIC avf_comm GTest::gtest)
add_executable(avf_comm_tests comm_test.cpp comm_bf16_test.cpp comm_errors_test.cpp)
target_link_libraries(avf_comm_tests PRIVATE avf_forked_ranks GTest::gtest_main)
add_test(NAME unit/comm COMMAND avf_comm_tests)
set_tests_properties(unit/comm PROPERTIES TIMEOUT 60)

# The NCCL communicator (where the CUDA toolkit and NCCL are found). Every
# rank, and every CUDA call, runs in a forked child (a parent that touched
# CUDA could not fork working ranks). Without a GPU (this machine, CI) only
# the no-device tests run; the GPU tests skip with a message; the multi-rank
# ones need one GPU per rank (NCCL refuses two ranks on one device).
if(AVIFLOW_HAVE_CUDA AND TARGET avf_comm_nccl)
  add_executable(avf_comm_nccl_tests comm_nccl_test.cpp)
  target_link_libraries(avf_comm_nccl_tests PRIVATE avf_comm_nccl avf_forked_ranks GTest::gtest_main)
  add_test(NAME unit/comm_nccl COMMAND avf_comm_nccl_tests)
  set_tests_properties(unit/comm_nccl PROPERTIES TIMEOUT 300)
  # The binary must not need libcuda.so.1 (absent without a driver).
  avf_test_no_libcuda(unit/comm_nccl_no_libcuda avf_comm_nccl_tests "libnccl\\.so")
endif()

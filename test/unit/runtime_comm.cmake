# The CPU communicator (runtime/comm): ranks are forked processes on
# 127.0.0.1 meeting through a rendezvous store in the parent. Timeouts are 1-2 s.
# comm_bf16_test.cpp: the bf16 conversions, in the same process.
add_executable(avf_comm_tests comm_test.cpp comm_bf16_test.cpp)
target_link_libraries(avf_comm_tests PRIVATE avf_comm GTest::gtest_main)
add_test(NAME unit/comm COMMAND avf_comm_tests)
set_tests_properties(unit/comm PROPERTIES TIMEOUT 60)

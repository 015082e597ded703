# The rendezvous store (runtime/rendezvous): threads and forked processes on
# 127.0.0.1, hand-made frames on raw sockets. Timeouts are 200-500 ms.
add_executable(avf_rendezvous_tests rendezvous_test.cpp rendezvous_wire_test.cpp rendezvous_process_test.cpp
                                    rendezvous_membership_test.cpp)
target_link_libraries(avf_rendezvous_tests PRIVATE avf_rendezvous GTest::gtest_main)
add_test(NAME unit/rendezvous COMMAND avf_rendezvous_tests)
set_tests_properties(unit/rendezvous PROPERTIES TIMEOUT 60)

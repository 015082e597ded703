# Pipeline schedules (runtime/parallel): hand-written 1F1B, interleaved and
# GPipe tables, and the deadlock simulator over many (P, V, M).
add_executable(avf_schedule_tests schedule_test.cpp)
target_link_libraries(avf_schedule_tests PRIVATE avf_parallel_schedule GTest::gtest_main)
add_test(NAME unit/schedule COMMAND avf_schedule_tests)

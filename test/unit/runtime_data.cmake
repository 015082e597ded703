# Token shards (runtime/data): format, writer, reader.
add_executable(avf_data_tests data_test.cpp)
target_link_libraries(avf_data_tests PRIVATE avf_data GTest::gtest_main)
add_test(NAME unit/data COMMAND avf_data_tests)

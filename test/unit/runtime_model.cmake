# The transformer (runtime/model): parameter counts, whole-model gradients.
add_executable(avf_model_tests model_test.cpp)
target_link_libraries(avf_model_tests PRIVATE avf_model GTest::gtest_main)
add_test(NAME unit/model COMMAND avf_model_tests)

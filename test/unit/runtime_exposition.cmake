# Prometheus's text format and the /metrics endpoint (runtime/exposition),
# served to real sockets.
add_executable(avf_exposition_tests exposition_test.cpp)
target_link_libraries(avf_exposition_tests PRIVATE avf_exposition GTest::gtest_main)
add_test(NAME unit/exposition COMMAND avf_exposition_tests)

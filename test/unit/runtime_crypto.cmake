# SHA-256, key files and sealed files (runtime/crypto).
add_executable(avf_crypto_tests crypto_test.cpp)
target_link_libraries(avf_crypto_tests PRIVATE avf_crypto aviflow_llvm GTest::gtest_main)
add_test(NAME unit/crypto COMMAND avf_crypto_tests)

# Training: the optimizer (runtime/optim), a golden loss curve, checkpoints
# and metrics (runtime/train).
add_executable(avf_train_tests train_test.cpp checkpoint_parse_test.cpp)
target_link_libraries(avf_train_tests PRIVATE avf_train avf_optim avf_model aviflow_llvm GTest::gmock GTest::gtest_main)
target_compile_definitions(avf_train_tests PRIVATE AVF_TRAIN_GOLDEN="${CMAKE_CURRENT_SOURCE_DIR}/Inputs/train/gpt2_tiny_adamw.golden")
add_test(NAME unit/train COMMAND avf_train_tests)
set_tests_properties(unit/train PROPERTIES ENVIRONMENT "OPENBLAS_NUM_THREADS=1")

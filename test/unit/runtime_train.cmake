# Training: the optimizer (runtime/optim), a golden loss curve and metrics
# (runtime/train).
add_executable(avf_train_tests train_test.cpp)
target_link_libraries(avf_train_tests PRIVATE avf_train avf_optim avf_model aviflow_llvm GTest::gmock GTest::gtest_main)
target_compile_definitions(avf_train_tests PRIVATE AVF_TRAIN_GOLDEN="${CMAKE_CURRENT_SOURCE_DIR}/Inputs/train/gpt2_tiny_adamw.golden")
add_test(NAME unit/train COMMAND avf_train_tests)
set_tests_properties(unit/train PROPERTIES ENVIRONMENT "OPENBLAS_NUM_THREADS=1")

# Checkpoints (runtime/checkpoint): saved under one layout, loaded under any
# other; the index and the step directories against damaged files.
add_executable(avf_checkpoint_tests checkpoint_test.cpp)
target_link_libraries(avf_checkpoint_tests PRIVATE avf_checkpoint avf_model aviflow_llvm GTest::gmock GTest::gtest_main)
add_test(NAME unit/checkpoint COMMAND avf_checkpoint_tests)

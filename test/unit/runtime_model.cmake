# The transformer (runtime/model): parameter counts, whole-model gradients.
add_executable(avf_model_tests model_test.cpp)
target_link_libraries(avf_model_tests PRIVATE avf_model GTest::gtest_main)
add_test(NAME unit/model COMMAND avf_model_tests)

# The compute backend seam (runtime/backend): the model touches memory only
# through it.
add_executable(avf_backend_tests backend_test.cpp)
target_link_libraries(avf_backend_tests PRIVATE avf_model GTest::gtest_main)
add_test(NAME unit/backend COMMAND avf_backend_tests)

# The sharded transformer (tensor, sequence and pipeline parallel shards)
# against the whole model; tensor ranks are forked processes.
add_executable(avf_shard_tests shard_test.cpp)
target_link_libraries(avf_shard_tests PRIVATE avf_model avf_forked_ranks GTest::gtest_main)
add_test(NAME unit/shard COMMAND avf_shard_tests)
set_tests_properties(unit/shard PROPERTIES TIMEOUT 120 ENVIRONMENT "OMP_NUM_THREADS=1;OPENBLAS_NUM_THREADS=1")

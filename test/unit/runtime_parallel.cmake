# Hand-made valid plans of any (T, D, P, V) shape (plan_builder.h).
add_library(avf_plan_builder STATIC plan_builder.cpp)
target_link_libraries(avf_plan_builder PUBLIC avf_model avf_runplan avf_test_plan_groups fmt::fmt)

# Pipeline schedules (runtime/parallel): hand-written 1F1B, interleaved and
# GPipe tables, the shapes no schedule runs, the deadlock simulator over many
# (P, V, M), and the --print-schedule table of a hand-made plan.
add_executable(avf_schedule_tests schedule_test.cpp)
target_link_libraries(avf_schedule_tests PRIVATE avf_parallel_schedule avf_plan_builder GTest::gtest_main)
add_test(NAME unit/schedule COMMAND avf_schedule_tests)

# Process groups (runtime/parallel/groups.h): hand-made plans of several
# (T, D, P, V) shapes on forked ranks (avf_forked_ranks, runtime_comm.cmake,
# included before this file), every group's members and ring order, every
# pipeline link both ways at once; communicator failures of a stub world.
add_executable(avf_groups_tests groups_test.cpp)
target_link_libraries(avf_groups_tests PRIVATE avf_parallel_groups avf_plan_builder avf_forked_ranks GTest::gtest_main)
add_test(NAME unit/groups COMMAND avf_groups_tests)
set_tests_properties(unit/groups PROPERTIES TIMEOUT 60)

# The equivalence matrix (engine_test.cpp): every layout's ranks as forked
# processes against one rank on the same global batches.
add_executable(avf_engine_tests engine_test.cpp)
target_link_libraries(avf_engine_tests PRIVATE avf_parallel_engine avf_plan_builder avf_forked_ranks GTest::gtest_main)
# The GPU rows run on the CUDA backend where this build has it.
if(TARGET avf_kernels)
  target_sources(avf_engine_tests PRIVATE gpu_backends_cuda.cpp)
  target_link_libraries(avf_engine_tests PRIVATE avf_kernels)
else()
  target_sources(avf_engine_tests PRIVATE gpu_backends_none.cpp)
endif()
add_test(NAME unit/engine COMMAND avf_engine_tests)
set_tests_properties(unit/engine PROPERTIES TIMEOUT 300 ENVIRONMENT "OMP_NUM_THREADS=1;OPENBLAS_NUM_THREADS=1")

# avf-run's preflight (runtime/run): the port check against fake sysfs trees,
# the reports, the bandwidth arithmetic and the verdict.
add_executable(avf_preflight_tests preflight_ports_test.cpp preflight_report_test.cpp)
target_link_libraries(avf_preflight_tests PRIVATE avf_preflight GTest::gtest_main)
add_test(NAME unit/preflight COMMAND avf_preflight_tests)

# avf-run links the NCCL communicator where it is built, and must still
# start without a driver (no libcuda).
if(TARGET avf_comm_nccl)
  avf_test_no_libcuda(unit/avf_run_no_libcuda avf-run "libnccl\\.so")
endif()

# What a rank serves to Prometheus (runtime/train/exported_metrics.h): the
# families of runtime/plan_format/metrics.def from a hand-made plan, its
# labels and predictions; the starts counted in a run folder.
add_executable(avf_exported_metrics_tests exported_metrics_test.cpp)
target_link_libraries(avf_exported_metrics_tests PRIVATE avf_trainer avf_plan_builder GTest::gtest_main)
add_test(NAME unit/exported_metrics COMMAND avf_exported_metrics_tests)

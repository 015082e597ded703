# runtime/plan: the plan.json reader and rank identity (avf_runplan).
# Hermetic: the plans it reads are checked in under Inputs/runplan/.
# plan_groups: the ranks and groups of hand-made plans (also the parallel tests').
add_library(avf_test_plan_groups STATIC plan_groups.cpp)
target_link_libraries(avf_test_plan_groups PUBLIC avf_runplan)
add_executable(avf_runplan_tests runplan_test.cpp runplan_validate_test.cpp runplan_identity_test.cpp
                                 runplan_test_util.cpp)
target_link_libraries(avf_runplan_tests PRIVATE avf_runplan avf_test_plan_groups GTest::gmock GTest::gtest_main)
target_include_directories(avf_runplan_tests PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_compile_definitions(avf_runplan_tests PRIVATE AVF_RUNPLAN_INPUTS="${CMAKE_CURRENT_SOURCE_DIR}/Inputs/runplan")
# The JSON edits of the tests use llvm::json: C++17 under clang (see runtime/plan/CMakeLists.txt).
if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  set_source_files_properties(runplan_test_util.cpp PROPERTIES COMPILE_OPTIONS -std=c++17)
endif()
add_test(NAME unit/runplan COMMAND avf_runplan_tests WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/Inputs/runplan)

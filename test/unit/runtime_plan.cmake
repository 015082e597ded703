# runtime/plan: the plan.json reader and rank identity (avf_runplan).
# The plans it reads are what the compiler writes today: the build generates
# them from their .avf sources (the examples, and Inputs/runplan/*.avf) into
# the build tree, so no committed copy can drift from the compiler. Only the
# hand-written plans of Inputs/runplan/ (README there) are checked in.
# plan_groups: the ranks and groups of hand-made plans (also the parallel tests').
add_library(avf_test_plan_groups STATIC plan_groups.cpp)
target_link_libraries(avf_test_plan_groups PUBLIC avf_runplan)

set(runplan_generated ${CMAKE_CURRENT_BINARY_DIR}/Inputs/runplan)
set(runplan_fixtures)
foreach(source ${PROJECT_SOURCE_DIR}/examples/gpt2_tiny_local.avf ${PROJECT_SOURCE_DIR}/examples/hgx_h100_platform.avf
               ${PROJECT_SOURCE_DIR}/examples/llama7b_a100_128.avf
               ${CMAKE_CURRENT_SOURCE_DIR}/Inputs/runplan/gpt2_tiny_tied_pp.avf)
  get_filename_component(name ${source} NAME_WE)
  add_custom_command(OUTPUT ${runplan_generated}/${name}.json
    COMMAND ${CMAKE_COMMAND} -E make_directory ${runplan_generated}
    COMMAND aviflowc emit plan ${source} > ${runplan_generated}/${name}.json
    DEPENDS aviflowc avf_stdlib ${source}
    COMMENT "plan.json fixture ${name}.json from ${name}.avf")
  list(APPEND runplan_fixtures ${runplan_generated}/${name}.json)
endforeach()
add_custom_target(avf_runplan_fixtures DEPENDS ${runplan_fixtures})

add_executable(avf_runplan_tests runplan_test.cpp runplan_validate_test.cpp runplan_identity_test.cpp
                                 runplan_test_util.cpp)
add_dependencies(avf_runplan_tests avf_runplan_fixtures)
target_link_libraries(avf_runplan_tests PRIVATE avf_runplan avf_test_plan_groups GTest::gmock GTest::gtest_main)
target_include_directories(avf_runplan_tests PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_compile_definitions(avf_runplan_tests PRIVATE AVF_RUNPLAN_INPUTS="${CMAKE_CURRENT_SOURCE_DIR}/Inputs/runplan"
                                                     AVF_RUNPLAN_GENERATED="${runplan_generated}"
                                                     AVF_PLAN_V2_INPUTS="${PROJECT_SOURCE_DIR}/test/run/Inputs/plan_v2")
# The JSON edits of the tests use llvm::json: C++17 under clang (see runtime/plan/CMakeLists.txt).
if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  set_source_files_properties(runplan_test_util.cpp PROPERTIES COMPILE_OPTIONS -std=c++17)
endif()
add_test(NAME unit/runplan COMMAND avf_runplan_tests WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/Inputs/runplan)

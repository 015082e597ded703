# Hugging Face interop (runtime/interop): safetensors files, malformed ones
# refused, GPT-2 and Llama through transformers' layout and back, the same
# losses after an export and import, and docs/huggingface.md's table.
add_executable(avf_interop_tests interop_test.cpp interop_mapping_test.cpp interop_config_test.cpp)
target_link_libraries(avf_interop_tests PRIVATE avf_interop avf_model GTest::gtest_main)
target_compile_definitions(avf_interop_tests PRIVATE AVF_HF_DOC="${PROJECT_SOURCE_DIR}/docs/huggingface.md")
add_test(NAME unit/interop COMMAND avf_interop_tests)

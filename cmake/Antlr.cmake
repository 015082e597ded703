# The parser is generated at build time from grammar/Avf.g4 with Debian's
# ANTLR 4.7.2 tool and compiled against the 4.9 C++ runtime.
find_program(ANTLR4_TOOL NAMES antlr4 PATHS /usr/bin REQUIRED)
find_package(antlr4-runtime 4.9 REQUIRED CONFIG)

set(AVIFLOW_ANTLR_GEN ${CMAKE_BINARY_DIR}/antlr)
set(AVIFLOW_ANTLR_SRCS ${AVIFLOW_ANTLR_GEN}/AvfLexer.cpp ${AVIFLOW_ANTLR_GEN}/AvfParser.cpp)
add_custom_command(
  OUTPUT ${AVIFLOW_ANTLR_SRCS} ${AVIFLOW_ANTLR_GEN}/AvfLexer.h ${AVIFLOW_ANTLR_GEN}/AvfParser.h
  COMMAND ${ANTLR4_TOOL} -Dlanguage=Cpp -no-visitor -no-listener -Werror
          -package avf::antlrgen -Xexact-output-dir -o ${AVIFLOW_ANTLR_GEN}
          ${CMAKE_SOURCE_DIR}/grammar/Avf.g4
  DEPENDS ${CMAKE_SOURCE_DIR}/grammar/Avf.g4
  COMMENT "Generating the .avf parser with ANTLR"
  VERBATIM)

# clang 14 rejects one header that antlr4-runtime.h includes; a copy without it
# keeps clang, clang-tidy and the fuzz build working (g++ accepts either).
file(READ ${ANTLR4_INCLUDE_DIR}/antlr4-runtime.h _avf_umbrella)
string(REPLACE "#include \"misc/InterpreterDataReader.h\"" "" _avf_umbrella "${_avf_umbrella}")
file(WRITE ${CMAKE_BINARY_DIR}/antlr4-shim/antlr4-runtime.h.tmp "${_avf_umbrella}")
file(COPY_FILE ${CMAKE_BINARY_DIR}/antlr4-shim/antlr4-runtime.h.tmp
     ${CMAKE_BINARY_DIR}/antlr4-shim/antlr4-runtime.h ONLY_IF_DIFFERENT)

add_library(avf_antlrgen STATIC ${AVIFLOW_ANTLR_SRCS})
target_include_directories(avf_antlrgen SYSTEM PUBLIC
  ${AVIFLOW_ANTLR_GEN} ${CMAKE_BINARY_DIR}/antlr4-shim ${ANTLR4_INCLUDE_DIR})
target_link_libraries(avf_antlrgen PUBLIC antlr4_shared)
# ANTLR 4.7.2 writes u8"" literals that are char8_t in C++20.
set_target_properties(avf_antlrgen PROPERTIES CXX_STANDARD 17 POSITION_INDEPENDENT_CODE ON)
target_compile_options(avf_antlrgen PRIVATE -w)

// The hand-written scanner (compiler/lex/scanner.h) against the ANTLR lexer
// generated from grammar/Avf.g4: the same tokens, kinds and byte ranges on
// every .avf file of the repository and on random text made of the
// characters where the lexer rules meet.
#include "AvfLexer.h"
#include "antlr4-runtime.h"  // first: it #undefs EOF

#include <filesystem>
#include <fstream>
#include <random>

#include <gtest/gtest.h>

#include "lex/scanner.h"
#include "parse/antlr_tokens.h"

namespace avf::lex {
namespace {

// `kind begin end` per token, hidden tokens but an unclosed comment dropped.
auto ByAntlr(const std::string& text) -> std::string {
  // ANTLR indexes code points; map them back to bytes.
  std::vector<uint32_t> offsets;
  size_t first = 0;
  while (first < 6 && llvm::StringRef(text).substr(first).startswith("\xEF\xBB\xBF")) first += 3;
  for (size_t i = first; i < text.size(); ++i)
    if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) offsets.push_back(i);
  offsets.push_back(text.size());
  antlr4::ANTLRInputStream input(text.substr(first));
  antlrgen::AvfLexer lexer(&input);
  lexer.removeErrorListeners();
  std::string out;
  for (auto t = lexer.nextToken(); t->getType() != antlr4::Token::EOF; t = lexer.nextToken()) {
    if (t->getChannel() != antlr4::Token::DEFAULT_CHANNEL && t->getType() != antlrgen::AvfLexer::UNTERMINATED_COMMENT)
      continue;
    out += std::string(KindName(parse::KindOfAntlrType(t->getType()))) + " " +
           std::to_string(offsets[t->getStartIndex()]) + " " + std::to_string(offsets[t->getStopIndex() + 1]) + "\n";
  }
  return out;
}

auto ByScanner(const std::string& text) -> std::string {
  Scanner scanner(text);
  std::string out;
  for (const Token* t = scanner.Peek(); t; scanner.Next(), t = scanner.Peek())
    out += std::string(KindName(t->kind)) + " " + std::to_string(t->begin) + " " + std::to_string(t->end) + "\n";
  return out;
}

TEST(Scanner, EveryAvfFileOfTheRepository) {
  namespace fs = std::filesystem;
  size_t files = 0;
  for (const char* dir : {"examples", "stdlib", "test", "docs"}) {
    for (const auto& entry : fs::recursive_directory_iterator(fs::path(AVF_SOURCE_DIR) / dir)) {
      if (!entry.is_regular_file() || entry.path().extension() != ".avf") continue;
      std::ifstream in(entry.path(), std::ios::binary);
      std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      if (text.find('\0') != std::string::npos) continue;  // a binary input, refused before lexing
      EXPECT_EQ(ByScanner(text), ByAntlr(text)) << entry.path();
      ++files;
    }
  }
  EXPECT_GT(files, 150u);
}

TEST(Scanner, RandomTextWhereTheRulesMeet) {
  const std::vector<std::string> pieces = {"0",
                                           "1",
                                           "9",
                                           "_",
                                           ".",
                                           "e",
                                           "E",
                                           "+",
                                           "-",
                                           "%",
                                           "/",
                                           "*",
                                           "s",
                                           "GB",
                                           "x",
                                           "\"",
                                           "\\",
                                           "\r",
                                           "\n",
                                           "\r\n",
                                           " ",
                                           "\t",
                                           "\f",
                                           "#",
                                           "'",
                                           "{",
                                           "}",
                                           "[",
                                           "]",
                                           "(",
                                           ")",
                                           "=",
                                           ":",
                                           ";",
                                           ",",
                                           "job",
                                           "model",
                                           "import",
                                           "a_b",
                                           "\xC3\xA8",
                                           "\xE2\x80\x93",
                                           "\xEF\xBB\xBF",
                                           "//",
                                           "/*",
                                           "*/",
                                           "\x01"};
  // Numbers with units and exponents are where longest match matters most.
  const std::vector<std::string> numeric = {"1", "_", "e", "E", "+", "-", ".", "GB", "s", "/", "%", "x", " "};
  std::mt19937 rng(7);
  for (int round = 0; round < 40000; ++round) {
    const auto& alphabet = round % 2 ? pieces : numeric;
    std::string text;
    size_t length = rng() % 24;
    for (size_t i = 0; i < length; ++i) text += alphabet[rng() % alphabet.size()];
    ASSERT_EQ(ByScanner(text), ByAntlr(text)) << "text: " << testing::PrintToString(text);
  }
}

TEST(Scanner, SkipToStartsAgainThere) {
  Scanner scanner("a /* b\nc");
  ASSERT_EQ(scanner.Peek(1)->kind, TokenKind::UnterminatedComment);
  scanner.SkipTo(7);
  EXPECT_EQ(scanner.Peek()->kind, TokenKind::Identifier);
  EXPECT_EQ(scanner.Peek()->begin, 7u);
  scanner.Next();
  EXPECT_EQ(scanner.Peek(), nullptr);
}

}  // namespace
}  // namespace avf::lex

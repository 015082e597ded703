// The descent parser against the ANTLR parser (compiler/parse): on every .avf
// file of the repository and on hand-picked corners of the grammar, wherever
// the descent parser accepts a file both build the same AST, ranges included,
// and report the same diagnostics; wherever it gives up, ANTLR finds a syntax
// error (the descent parser never rejects a valid file). And Parse, which
// hands ANTLR only the parts of a file that fail, against ANTLR on the whole
// file, on the repository's files with syntax errors injected.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>

#include <gtest/gtest.h>

#include "ast/dump.h"
#include "lex/lex.h"
#include "parse/descent.h"
#include "parse/parse.h"
#include "source/source_set.h"

namespace avf::parse {
namespace {

// Every node with its kind, text and byte ranges, one per line.
class Describer {
 public:
  explicit Describer(const char* base) : base_(base) {}

  auto File(const ast::File& file) -> std::string {
    for (const ast::Import& i : file.imports) Line("import " + i.path, i.range) << At(i.statement) << "\n";
    for (const ast::Decl& d : file.decls) {
      std::string base = d.base ? ":" + std::string(d.base->text) : "";
      Line("decl " + std::string(d.keyword.text) + " " + std::string(d.name.text) + base, d.range)
          << At(d.keyword.range) << At(d.name.range) << (d.base ? At(d.base->range) : "") << "\n";
      Body(d.body, 1);
    }
    return out_.str();
  }

 private:
  auto At(llvm::SMRange r) const -> std::string {
    return " [" + std::to_string(r.Start.getPointer() - base_) + "," + std::to_string(r.End.getPointer() - base_) + ")";
  }
  auto Line(const std::string& what, llvm::SMRange r, int depth = 0) -> std::ostringstream& {
    out_ << std::string(depth * 2, ' ') << what << At(r);
    return out_;
  }

  void Body(const ast::Body& body, int depth) {
    Line("body", body.range, depth) << "\n";
    for (const ast::Field& f : body.fields) {
      Line("field " + std::string(f.name.text), f.range(), depth) << At(f.name.range) << "\n";
      if (f.record) Body(*f.record, depth + 1);
      if (f.value) Expr(*f.value, depth + 1);
    }
  }

  void Expr(const ast::Expr& e, int depth) {
    auto& line = Line("expr " + std::to_string(static_cast<int>(e.kind())), e.range(), depth);
    if (auto* n = llvm::dyn_cast<ast::NumberExpr>(&e)) line << " " << n->text() << " " << n->valid;
    if (auto* s = llvm::dyn_cast<ast::StringExpr>(&e)) line << " '" << s->value << "'";
    if (auto* b = llvm::dyn_cast<ast::BoolExpr>(&e)) line << " " << b->value;
    if (auto* n = llvm::dyn_cast<ast::NameExpr>(&e)) line << " " << n->name.text << At(n->name.range);
    if (auto* r = llvm::dyn_cast<ast::RecordExpr>(&e)) line << " " << r->type.text << At(r->type.range);
    if (auto* c = llvm::dyn_cast<ast::CallExpr>(&e)) line << " " << c->callee.text << At(c->callee.range);
    if (auto* m = llvm::dyn_cast<ast::MemberExpr>(&e))
      for (const ast::Name& n : m->members) line << " ." << n.text << At(n.range);
    if (auto* u = llvm::dyn_cast<ast::UnaryExpr>(&e))
      for (llvm::SMRange r : u->negations) line << " -" << At(r);
    line << "\n";
    if (auto* m = llvm::dyn_cast<ast::MemberExpr>(&e)) Expr(*m->base, depth + 1);
    if (auto* u = llvm::dyn_cast<ast::UnaryExpr>(&e)) Expr(*u->operand, depth + 1);
    if (auto* r = llvm::dyn_cast<ast::RecordExpr>(&e)) Body(*r->body, depth + 1);
    if (auto* c = llvm::dyn_cast<ast::CallExpr>(&e))
      for (const auto& a : c->args) Expr(*a, depth + 1);
    if (auto* l = llvm::dyn_cast<ast::ListExpr>(&e))
      for (const auto& x : l->elements) Expr(*x, depth + 1);
    if (auto* b = llvm::dyn_cast<ast::BinaryExpr>(&e)) {
      Expr(*b->first, depth + 1);
      for (const auto& step : b->rest) {
        Line("op " + std::string(ast::Spelling(step.op)), step.op_range, depth + 1) << "\n";
        Expr(*step.operand, depth + 1);
      }
    }
  }

  const char* base_;
  std::ostringstream out_;
};

auto DescribeDiagnostics(const diag::DiagnosticEngine& diags, const char* base) -> std::string {
  std::ostringstream out;
  auto at = [&](llvm::SMRange r) {
    return std::to_string(r.Start.getPointer() - base) + "," + std::to_string(r.End.getPointer() - base);
  };
  for (const diag::Diagnostic& d : diags.diagnostics()) {
    out << diag::Info(d.id).code << " " << d.message << " @" << (d.loc.getPointer() - base);
    for (llvm::SMRange r : d.ranges) out << " r" << at(r);
    for (const diag::FixIt& f : d.fixits) out << " fix" << at(f.range) << "'" << f.replacement << "'";
    for (const std::string& h : d.help) out << " help:" << h;
    for (const diag::SubDiagnostic& n : d.notes) out << " note@" << at(n.range) << ":" << n.message;
    out << "\n";
  }
  return out.str();
}

struct Outcome {
  bool descent_accepted = false;
  bool antlr_reported_syntax_error = false;
};

// Parses `text` with both parsers and expects them equal where the descent
// parser accepts it.
auto Compare(const std::string& name, const std::string& text) -> Outcome {
  source::SourceSet sources;
  diag::DiagnosticEngine setup;
  std::optional<unsigned> id = sources.AddBuffer(name, text, setup);
  EXPECT_TRUE(id) << name;
  if (!id) return {};
  const char* base = sources.Text(*id).data();
  diag::DiagnosticEngine by_descent, by_antlr;
  lex::TokenizedBuffer tokens = lex::Lex(sources, *id, by_descent);
  lex::Lex(sources, *id, by_antlr);
  size_t lexed = by_antlr.diagnostics().size();
  std::optional<ast::File> descent = ParseByDescent(tokens, by_descent);
  ast::File antlr = ParseByAntlr(tokens, by_antlr);
  Outcome outcome{descent.has_value(), false};
  for (size_t i = lexed; i < by_antlr.diagnostics().size(); ++i)
    outcome.antlr_reported_syntax_error |= by_antlr.diagnostics()[i].severity == diag::Severity::Error;
  if (!tokens.parseable()) return outcome;
  if (!descent) {
    EXPECT_TRUE(outcome.antlr_reported_syntax_error) << name << ": the descent parser rejected a valid file";
    return outcome;
  }
  EXPECT_EQ(Describer(base).File(*descent), Describer(base).File(antlr)) << name;
  EXPECT_EQ(DescribeDiagnostics(by_descent, base), DescribeDiagnostics(by_antlr, base)) << name;
  return outcome;
}

TEST(ParseEngines, EveryAvfFileOfTheRepository) {
  namespace fs = std::filesystem;
  size_t files = 0, accepted = 0;
  for (const char* dir : {"examples", "stdlib", "test", "docs"}) {
    for (const auto& entry : fs::recursive_directory_iterator(fs::path(AVF_SOURCE_DIR) / dir)) {
      if (!entry.is_regular_file() || entry.path().extension() != ".avf") continue;
      std::ifstream in(entry.path(), std::ios::binary);
      std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      Outcome o = Compare(entry.path().string(), text);
      ++files;
      accepted += o.descent_accepted;
    }
  }
  std::cout << files << " files, " << accepted << " accepted by the descent parser\n";
  // The repository's examples, stdlib and most test inputs parse.
  EXPECT_GT(files, 150u);
  EXPECT_GT(accepted, files / 2);
}

TEST(ParseEngines, CornersOfTheGrammar) {
  const char* valid[] = {
      "model m { a = - - 1; b = +2; c = -+-3; d = (1 + 2) * 3 / 4 - 5 }\n",
      "job j { x = f(); y = f(1,); z = g(1, \"s\", [1, 2,],) }\n",
      "job j { x = [] ; y = [a.b.c, model.gpu.job] ; z = (((1))) }\n",
      "gpu a {} gpu b : a { memory = 80GiB } import \"std/x\"\n",
      "modle m { a = 1 b = 2 c { d = 3 } e = 4 }\n",
      "job j { r = rec { a = 1; inner = other { b = 2 } }; t = true; f = false; u = auto }\n",
      "job j { s = \"unterminated\n}\n",
      "job j { l = [1, 2\n}\n",
      "\n;\n;import \"a\";import \"b\"\n",
      "cluster c { node = hgx; gpu = g; fabric = f; storage = s; dataset = d; model = m; job = j }\n",
  };
  for (const char* text : valid) {
    Outcome o = Compare("corner.avf", text);
    EXPECT_TRUE(o.descent_accepted) << text;
  }
  const char* invalid[] = {
      "job j { a = }\n",        "job j { a = 1 2 }\n", "job { }\n",    "job j : { }\n",       "job j { a = f(,) }\n",
      "job j { a = [1,,2] }\n", "job j { a = x. }\n",  "import job\n", "job j { a = 1 } }\n", "job model {}\n",
  };
  for (const char* text : invalid) {
    Outcome o = Compare("invalid.avf", text);
    EXPECT_FALSE(o.descent_accepted) << text;
    EXPECT_TRUE(o.antlr_reported_syntax_error) << text;
  }
}

auto CompareWithWholeFile(const std::string& text, size_t limit) -> bool;

// Random token soup inside a declaration: most is invalid (then ANTLR must
// find the error), enough is valid to compare trees; and twice over in one
// file, Parse against ANTLR on the whole file.
TEST(ParseEngines, RandomTokens) {
  const std::vector<std::string> pieces = {"a",   "b",     "=",    "1",        "2GB",     "+",           "-", "*",
                                           "/",   "(",     ")",    "[",        "]",       ",",           ".", ";",
                                           "\n",  "\"s\"", "true", "auto",     ":",       "{",           "}", "f(",
                                           "x {", "model", "= 3",  "= [1, 2]", "job j {", "import \"x\""};
  std::mt19937 rng(11);
  size_t accepted = 0;
  for (int round = 0; round < 20000; ++round) {
    std::string text = "job j {\n";
    size_t length = rng() % 12;
    for (size_t i = 0; i < length; ++i) text += pieces[rng() % pieces.size()] + (rng() % 3 ? " " : "");
    text += "\n}\n";
    accepted += Compare("random.avf", text).descent_accepted;
    CompareWithWholeFile(text + text, diag::DiagnosticEngine::kDefaultErrorLimit);
    if (testing::Test::HasFailure()) {
      ADD_FAILURE() << "text: " << testing::PrintToString(text);
      return;
    }
  }
  EXPECT_GT(accepted, 1000u);
}

// Parse against ParseByAntlr on `text`: the same AST (ranges included, and
// as --dump=ast prints it) and the same diagnostics, in the same order, under
// the error limit `limit`. True when the text has a syntax error.
auto CompareWithWholeFile(const std::string& text, size_t limit) -> bool {
  source::SourceSet sources;
  diag::DiagnosticEngine setup;
  std::optional<unsigned> id = sources.AddBuffer("mutated.avf", text, setup);
  EXPECT_TRUE(id);
  if (!id) return false;
  const char* base = sources.Text(*id).data();
  diag::DiagnosticEngine fast, whole;
  fast.set_error_limit(limit);
  whole.set_error_limit(limit);
  lex::TokenizedBuffer tokens = lex::Lex(sources, *id, fast);
  lex::Lex(sources, *id, whole);
  size_t lexed = whole.diagnostics().size();
  ast::File by_parse = Parse(tokens, fast);
  ast::File by_antlr = ParseByAntlr(tokens, whole);
  auto dump = [&](const ast::File& file) {
    std::string out;
    llvm::raw_string_ostream os(out);
    ast::DumpAst(sources.mgr(), file, os);
    return os.str();
  };
  EXPECT_EQ(Describer(base).File(by_parse), Describer(base).File(by_antlr));
  EXPECT_EQ(dump(by_parse), dump(by_antlr));
  EXPECT_EQ(DescribeDiagnostics(fast, base), DescribeDiagnostics(whole, base));
  EXPECT_EQ(fast.error_count(), whole.error_count());
  EXPECT_EQ(fast.suppressed_count(), whole.suppressed_count());
  bool syntax_error = false;
  for (size_t i = lexed; i < whole.diagnostics().size(); ++i)
    syntax_error |= diag::Info(whole.diagnostics()[i].id).code.substr(0, 3) == "E02";
  return syntax_error;
}

// Deterministic syntax errors injected into a file: a token deleted, replaced
// by junk or with junk inserted before it.
class Mutator {
 public:
  Mutator(std::string text, unsigned seed) : text_(std::move(text)), rng_(seed) {
    source::SourceSet sources;
    diag::DiagnosticEngine diags;
    std::optional<unsigned> id = sources.AddBuffer("original.avf", text_, diags);
    if (!id) return;
    lex::TokenizedBuffer tokens = lex::Lex(sources, *id, diags);
    for (const lex::Token& t : tokens.tokens())
      if (t.begin != t.end) tokens_.push_back(t);
  }

  auto token_count() const -> size_t { return tokens_.size(); }

  // `count` errors, the first at token `at`, the others at random tokens.
  auto Inject(size_t at, size_t count) -> std::string {
    std::vector<std::pair<lex::Token, std::string>> edits;
    for (size_t i = 0; i < count && !tokens_.empty(); ++i) {
      const lex::Token& t = tokens_[i == 0 ? at % tokens_.size() : rng_() % tokens_.size()];
      std::string junk = kJunk[rng_() % std::size(kJunk)];
      std::string original = text_.substr(t.begin, t.end - t.begin);
      switch (rng_() % 3) {
        case 0: edits.push_back({t, ""}); break;
        case 1: edits.push_back({t, junk}); break;
        default: edits.push_back({t, junk + " " + original}); break;
      }
    }
    std::sort(edits.begin(), edits.end(), [](const auto& a, const auto& b) { return a.first.begin > b.first.begin; });
    std::string out = text_;
    uint32_t limit = UINT32_MAX;  // edits never overlap
    for (const auto& [t, replacement] : edits) {
      if (t.end > limit) continue;
      out.replace(t.begin, t.end - t.begin, replacement);
      limit = t.begin;
    }
    return out;
  }

 private:
  static constexpr const char* kJunk[] = {"=",  "}",      "{",      ")",        "(",     "[",    "]",           ":",
                                          ",",  ".",      "job",    "x",        "\"s\"", "5",    "@",           ";",
                                          "\n", "import", "= =",    "job j {",  "gpu g", "a = ", "a.b",         "-",
                                          "*",  "x {",    "\"open", "import 5", "{ {",   "} }",  "model m : {", "1 2",
                                          "/*", "\n}\n",  "f(",     "[1,,2]"};
  std::string text_;
  std::mt19937 rng_;
  std::vector<lex::Token> tokens_;
};

auto ReadFile(const std::filesystem::path& path) -> std::string {
  std::ifstream in(path, std::ios::binary);
  return {(std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()};
}

// The front-end benchmark's declarations (bench/frontend_bench.py), a few dozen.
auto BenchLikeFile(int jobs) -> std::string {
  std::string text =
      "import \"std/hardware\"\n"
      "cluster pod { node = hgx_a100; nodes = 16; network = ib_ndr; topology = fat_tree { nodes_per_leaf = 8 } }\n"
      "dataset docs { source = cold / \"d\"; tokens = 4.2T; shards = 512 }\n";
  for (int i = 0; i < jobs; ++i) {
    std::string n = std::to_string(i);
    text += "gpu g" + n + " : a100_80g { memory = 80GiB; tdp = 400W }\nmodel m" + n +
            " { arch = llama; layers = 32; hidden = 4096; ffn = 4 * 2752 }\njob j" + n + " {\n  model = m" + n +
            "; data = docs; gpus = 128\n  parallel { tensor = 8; data = auto }\n  optimizer { kind = adamw; betas = "
            "[0.9, 0.95] }\n}\n";
  }
  return text;
}

// Every file with errors injected at tokens spread over it, one error at a
// time and several at once, also under a small error limit.
TEST(ParseEngines, SlicedParseEqualsWholeFileAntlr) {
  namespace fs = std::filesystem;
  std::vector<std::pair<std::string, std::string>> files;
  for (const char* dir : {"examples", "stdlib", "test/parse"}) {
    for (const auto& entry : fs::directory_iterator(fs::path(AVF_SOURCE_DIR) / dir)) {
      if (entry.path().extension() == ".avf") files.push_back({entry.path().string(), ReadFile(entry.path())});
    }
  }
  std::sort(files.begin(), files.end());
  files.push_back({"bench-like", BenchLikeFile(40)});
  ASSERT_GT(files.size(), 15u);
  size_t texts = 0, with_syntax_errors = 0;
  unsigned seed = 1;
  for (const auto& [name, text] : files) {
    Mutator mutator(text, seed++);
    const size_t points = 30;
    for (size_t i = 0; i < points * 2; ++i) {
      size_t at = mutator.token_count() * (i % points) / points;
      std::string mutated = mutator.Inject(at, i < points ? 1 : 2 + i % 3);
      size_t limit = i % 7 == 0 ? 2 : diag::DiagnosticEngine::kDefaultErrorLimit;
      with_syntax_errors += CompareWithWholeFile(mutated, limit);
      ++texts;
      if (testing::Test::HasFailure()) {
        ADD_FAILURE() << name << " with errors injected:\n" << mutated;
        return;
      }
    }
  }
  std::cout << texts << " texts, " << with_syntax_errors << " with syntax errors\n";
  EXPECT_GT(with_syntax_errors, texts * 3 / 4);
}

// Corners of where the ANTLR parse may stop: recovery that runs on past a
// declaration's `}` to the end of its line, a `{` conjured by the recovery
// that takes in the declarations after it, stray closers, an import after a
// declaration that ANTLR parsed.
TEST(ParseEngines, SlicedParseCorners) {
  const char* texts[] = {
      "job { a = 1 } gpu g { memory = 1 }\ngpu h {}\n",
      "job j a = 1\ngpu g { memory = 80GB }\nmodel m { layers = 2 }\n",
      "job j\n  a = 1\n}\ngpu g {}\n",
      "gpu g {}\n} } ) ]\nmodel m { a = 1 }\n",
      "gpu g { a = }\nimport \"x\"\nmodel m { a = 1 b = 2 }\nimport \"y\"\n",
      "modle m { a = 1 b = 2 ; c = }\njbo j { a = 1 }; job k { x = [1,,2] }\n",
      "gpu g { a = 1 }; = ; gpu h { }\n",
      "import job\nimport \"a\"\ngpu g : { }\n",
      "gpu g { a = (1 + }\n  b = 2\n}\nmodel m {}\n",
      "job j { a = f(1,\n}\nmodel m { a = [1, 2\n  b = 3\n}\n",
      "gpu g { a = 1 }\n/* unterminated\nmodel m {}\n",
      "x\n",
      "}",
      "job j { } job k { }\njob l { a = 1 } x y z\njob m { }\n",
      "gpu g : a memory = 80GB\ngpu h { memory = 1 }\n}\nmodel m { a = 1 }\n",
      "gpu g : a memory = 80GB\ngpu h { memory = 1 }\nmodel m { a = 1 }\n",
  };
  for (const char* text : texts) {
    CompareWithWholeFile(text, diag::DiagnosticEngine::kDefaultErrorLimit);
    CompareWithWholeFile(text, 1);
    if (testing::Test::HasFailure()) {
      ADD_FAILURE() << "text: " << testing::PrintToString(text);
      return;
    }
  }
}

}  // namespace
}  // namespace avf::parse

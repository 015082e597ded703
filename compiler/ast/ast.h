// The syntax tree of one .avf file, as written: the parser's output. It keeps
// every source range for diagnostics and knows nothing of ANTLR. Long operator
// chains are stored flat (BinaryExpr holds all operands of one precedence
// level), so no phase recurses deeper than the bracket nesting, which the
// lexer bounds.
#pragma once

#include <forward_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <llvm/Support/Allocator.h>
#include <llvm/Support/Casting.h>
#include <llvm/Support/SMLoc.h>

#include "units/quantity.h"

namespace avf::ast {

enum class DeclKind : uint8_t {
#define DECL_KIND(Name, Keyword) Name,
#include "ast/decl_kinds.def"
#undef DECL_KIND
};
inline constexpr size_t kDeclKindCount = 0
#define DECL_KIND(Name, Keyword) +1
#include "ast/decl_kinds.def"
#undef DECL_KIND
    ;

auto KeywordOf(DeclKind kind) -> std::string_view;
auto DeclKindFromKeyword(std::string_view keyword) -> std::optional<DeclKind>;

// Names, number literals and keywords are views: of the source buffer, or of
// File::saved_text where a parser made the text up while recovering.
struct Name {
  std::string_view text;
  llvm::SMRange range;
};

// Expression nodes live in their File's NodeArena (no vtable, no header per
// node: a file has one for every value) and are pointed to, not owned.
class Expr {
 public:
  enum class Kind : uint8_t { Number, String, Bool, Auto, Name, Member, List, Binary, Unary, Record, Call, Error };
  Expr(Kind kind, llvm::SMRange range) : range_(range), kind_(kind) {}
  auto kind() const -> Kind { return kind_; }
  auto range() const -> llvm::SMRange { return range_; }
  void set_range(llvm::SMRange range) { range_ = range; }

 private:
  // kind_ last: a derived node's small members go into the padding after it.
  llvm::SMRange range_;
  Kind kind_;
};
using ExprPtr = Expr*;  // into the File's NodeArena

template <Expr::Kind K>
class ExprOf : public Expr {
 public:
  explicit ExprOf(llvm::SMRange range) : Expr(K, range) {}
  static auto classof(const Expr* e) -> bool { return e->kind() == K; }
};

// `80GiB`: the literal's text and its value. `valid` is false when the lexer
// already reported the literal (unknown unit, too large). A file has one of
// these for every number, so it is packed into 48 bytes: its text (not its
// range, which takes in brackets around it) is a pointer and a length.
struct NumberExpr : ExprOf<Expr::Kind::Number> {
  NumberExpr(llvm::SMRange range, std::string_view text)
      : ExprOf(range), text_size_(static_cast<uint32_t>(text.size())), text_data_(text.data()) {}
  auto text() const -> std::string_view { return {text_data_, text_size_}; }

  // In this order, after Expr's kind: 48 bytes.
  bool valid = true;

 private:
  uint32_t text_size_;  // sources are at most 64 MiB (source::kMaxFileBytes)
  const char* text_data_;

 public:
  units::Quantity value;
};
static_assert(sizeof(NumberExpr) <= 48);

struct StringExpr : ExprOf<Expr::Kind::String> {
  using ExprOf::ExprOf;
  std::string value;  // escapes decoded
};

struct BoolExpr : ExprOf<Expr::Kind::Bool> {
  using ExprOf::ExprOf;
  bool value = false;
};

struct AutoExpr : ExprOf<Expr::Kind::Auto> {
  using ExprOf::ExprOf;
};

// A bare name: a declaration, or an enum value where the field expects one.
struct NameExpr : ExprOf<Expr::Kind::Name> {
  using ExprOf::ExprOf;
  Name name;
};

// base.a.b
struct MemberExpr : ExprOf<Expr::Kind::Member> {
  using ExprOf::ExprOf;
  ExprPtr base = nullptr;
  std::vector<Name> members;
};

struct ListExpr : ExprOf<Expr::Kind::List> {
  using ExprOf::ExprOf;
  std::vector<ExprPtr> elements;
};

enum class BinaryOp : uint8_t { Add, Subtract, Multiply, Divide };
auto Spelling(BinaryOp op) -> std::string_view;

// first op₁ operand₁ op₂ operand₂ …, all of one precedence level, evaluated
// left to right.
struct BinaryExpr : ExprOf<Expr::Kind::Binary> {
  using ExprOf::ExprOf;
  struct Step {
    BinaryOp op;
    llvm::SMRange op_range;
    ExprPtr operand = nullptr;
  };
  ExprPtr first = nullptr;
  std::vector<Step> rest;
};

// -x, - -x: the signs in source order, then the operand.
struct UnaryExpr : ExprOf<Expr::Kind::Unary> {
  using ExprOf::ExprOf;
  std::vector<llvm::SMRange> negations;  // `+` signs are dropped
  ExprPtr operand = nullptr;
};

struct Field;
struct Body {
  std::vector<Field> fields;
  llvm::SMRange range;  // from `{` to `}`
};

// TYPE { FIELD* }: a built-in record (fat_tree { ... }) or a declaration
// instanced inline with overrides (llama2_7b { seq_len = 4096 }).
struct RecordExpr : ExprOf<Expr::Kind::Record> {
  using ExprOf::ExprOf;
  Name type;
  std::unique_ptr<Body> body;
};

// NAME(EXPR, ...): a built-in function such as secret("name").
struct CallExpr : ExprOf<Expr::Kind::Call> {
  using ExprOf::ExprOf;
  Name callee;
  std::vector<ExprPtr> args;
};

// Stands where the parser recovered from a syntax error.
struct ErrorExpr : ExprOf<Expr::Kind::Error> {
  using ExprOf::ExprOf;
};

// NAME = EXPR, or NAME { FIELD* } (then `record` is set, `value` null).
struct Field {
  Name name;
  ExprPtr value = nullptr;
  std::unique_ptr<Body> record;

  // From the name to the end of the value or record. Derived rather than
  // stored: a file is mostly fields.
  auto range() const -> llvm::SMRange {
    llvm::SMLoc end = value ? value->range().End : record ? record->range.End : name.range.End;
    if (!end.isValid() || end.getPointer() < name.range.End.getPointer()) end = name.range.End;
    return {name.range.Start, end};
  }
};

struct Decl {
  std::optional<DeclKind> kind;  // empty when the keyword is unknown (reported)
  Name keyword;
  Name name;
  std::optional<Name> base;
  Body body;
  llvm::SMRange range;
};

struct Import {
  std::string path;
  llvm::SMRange range;      // the string literal
  llvm::SMRange statement;  // `import "path"`
};

// Owns a file's expression nodes: they are bump-allocated, and those with
// members of their own (strings, vectors) are destroyed with the arena.
class NodeArena {
 public:
  NodeArena() = default;
  NodeArena(const NodeArena&) = delete;
  auto operator=(const NodeArena&) -> NodeArena& = delete;
  ~NodeArena();

  template <class Node, class... Args>
  auto Make(Args&&... args) -> Node* {
    Node* node = new (allocator_.Allocate<Node>()) Node(std::forward<Args>(args)...);
    if constexpr (!std::is_trivially_destructible_v<Node>) {
      to_destroy_.push_back({node, [](Expr* e) { static_cast<Node*>(e)->~Node(); }});
    }
    return node;
  }

 private:
  llvm::BumpPtrAllocator allocator_;
  std::vector<std::pair<Expr*, void (*)(Expr*)>> to_destroy_;  // node, its destructor
};

struct File {
  unsigned buffer_id = 0;
  // Every Expr of the file; behind a pointer, so that a moved File keeps its
  // nodes where they are.
  std::unique_ptr<NodeArena> nodes = std::make_unique<NodeArena>();
  std::vector<Import> imports;
  std::vector<Decl> decls;
  // Text that is not in the source, for the views above (error recovery).
  std::forward_list<std::string> saved_text;
};

}  // namespace avf::ast

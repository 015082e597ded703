#include "ast/dump.h"

#include "diag/render.h"

namespace avf::ast {

namespace {

// Quotes a string for the dump, escaping what would break the line.
auto Escaped(std::string_view s) -> std::string {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default: out.push_back(c);
    }
  }
  return out + "\"";
}

class AstDumper {
 public:
  AstDumper(const llvm::SourceMgr& sm, llvm::raw_ostream& os) : sm_(sm), os_(os) {}

  void File(const ast::File& file) {
    for (const Import& imp : file.imports) Line(0, imp.range.Start) << "import " << Escaped(imp.path) << '\n';
    for (const Decl& decl : file.decls) Declaration(decl);
  }

 private:
  auto Line(int depth, llvm::SMLoc loc) -> llvm::raw_ostream& {
    os_.indent(depth * 2);
    diag::Position pos = diag::PositionOf(sm_, loc);
    return os_ << pos.line << ':' << pos.column << ' ';
  }

  void Declaration(const Decl& decl) {
    Line(0, decl.range.Start) << KeywordOrText(decl) << ' ' << decl.name.text;
    if (decl.base) os_ << " : " << decl.base->text;
    os_ << '\n';
    BodyOf(decl.body, 1);
  }

  static auto KeywordOrText(const Decl& decl) -> std::string {
    return std::string(decl.kind ? KeywordOf(*decl.kind) : decl.keyword.text);
  }

  void BodyOf(const Body& body, int depth) {
    for (const Field& field : body.fields) {
      Line(depth, field.range().Start) << "field " << field.name.text;
      if (field.record) {
        os_ << " {}\n";
        BodyOf(*field.record, depth + 1);
      } else {
        os_ << '\n';
        Expression(*field.value, depth + 1);
      }
    }
  }

  void Expression(const Expr& e, int depth) {
    llvm::raw_ostream& os = Line(depth, e.range().Start);
    switch (e.kind()) {
      case Expr::Kind::Number: {
        const auto& n = llvm::cast<NumberExpr>(e);
        os << "number " << n.text();
        if (n.valid) os << " = " << n.value.ValueText() << " (" << units::DimensionName(n.value.dimension()) << ")";
        os << '\n';
        break;
      }
      case Expr::Kind::String: os << "string " << Escaped(llvm::cast<StringExpr>(e).value) << '\n'; break;
      case Expr::Kind::Bool: os << "bool " << (llvm::cast<BoolExpr>(e).value ? "true" : "false") << '\n'; break;
      case Expr::Kind::Auto: os << "auto\n"; break;
      case Expr::Kind::Name: os << "name " << llvm::cast<NameExpr>(e).name.text << '\n'; break;
      case Expr::Kind::Error: os << "error\n"; break;
      case Expr::Kind::Member: {
        const auto& m = llvm::cast<MemberExpr>(e);
        os << "member";
        for (const Name& n : m.members) os << " ." << n.text;
        os << '\n';
        Expression(*m.base, depth + 1);
        break;
      }
      case Expr::Kind::List: {
        os << "list\n";
        for (const ExprPtr& el : llvm::cast<ListExpr>(e).elements) Expression(*el, depth + 1);
        break;
      }
      case Expr::Kind::Binary: BinaryChain(llvm::cast<BinaryExpr>(e), depth); break;
      case Expr::Kind::Unary: {
        const auto& u = llvm::cast<UnaryExpr>(e);
        os << "negate x" << u.negations.size() << '\n';
        Expression(*u.operand, depth + 1);
        break;
      }
      case Expr::Kind::Record: {
        const auto& r = llvm::cast<RecordExpr>(e);
        os << "record " << r.type.text << '\n';
        BodyOf(*r.body, depth + 1);
        break;
      }
      case Expr::Kind::Call: {
        const auto& c = llvm::cast<CallExpr>(e);
        os << "call " << c.callee.text << '\n';
        for (const ExprPtr& arg : c.args) Expression(*arg, depth + 1);
        break;
      }
    }
  }

  void BinaryChain(const BinaryExpr& b, int depth) {
    os_ << "binary";
    for (const auto& step : b.rest) os_ << ' ' << Spelling(step.op);
    os_ << '\n';
    Expression(*b.first, depth + 1);
    for (const auto& step : b.rest) Expression(*step.operand, depth + 1);
  }

  const llvm::SourceMgr& sm_;
  llvm::raw_ostream& os_;
};

}  // namespace

void DumpAst(const llvm::SourceMgr& sm, const File& file, llvm::raw_ostream& os) { AstDumper(sm, os).File(file); }

}  // namespace avf::ast

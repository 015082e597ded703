// Expression evaluation: literals, names, member access, arithmetic with
// units, lists, built-in records, inline instances and secret(). Each result
// is then checked against the field's schema (type, dimension, integer-ness,
// range, reference kind).
#include <cmath>

#include <fmt/format.h>

#include "sema/analyzer.h"

namespace avf::sema {

namespace {

using diag::DiagId;

auto SourceText(llvm::SMRange r) -> std::string {
  if (!r.isValid()) return "";
  return std::string(r.Start.getPointer(), r.End.getPointer());
}

auto MakeQuantity(const units::Quantity& q, llvm::SMRange range) -> Value {
  Value v = Value::Of(Value::Kind::Quantity, range);
  v.quantity = q;
  return v;
}

class Evaluator {
 public:
  Evaluator(Analyzer& analyzer, DeclId owner, std::string_view path)
      : a_(analyzer),
        diags_(analyzer.diags()),
        owner_(owner),
        field_name_(path),
        leaf_name_(path.substr(path.rfind('.') + 1)) {}

  // Evaluates with the field's schema in view (enum names, inline instances,
  // auto), then checks the result against it.
  auto Field(const ast::Expr& e, const FieldSchema& schema) -> Value {
    Value v = Eval(e, &schema);
    scaled_ = schema.counts.empty() ? nullptr : FindScaledCount(e);
    Value checked = Check(std::move(v), schema, e.range());
    // `batch = 4M`: a token count written where sequences are counted.
    if (scaled_ == &e && !checked.is_error()) {
      diags_
          .Report(DiagId::ScaledCountOfSequences, e.range(), field_name_, schema.counts, scaled_->text(),
                  scaled_->value.ValueText(), schema.counts)
          .Help(fmt::format("for a number of tokens, divide it by the model's `seq_len`: `{} = {} / SEQ_LEN`",
                            leaf_name_, scaled_->text()));
    }
    return checked;
  }

 private:
  auto Eval(const ast::Expr& e, const FieldSchema* expected) -> Value;
  auto EvalName(const ast::NameExpr& e, const FieldSchema* expected) -> Value;
  auto EvalMember(const ast::MemberExpr& e) -> Value;
  auto EvalBinary(const ast::BinaryExpr& e) -> Value;
  auto EvalUnary(const ast::UnaryExpr& e) -> Value;
  auto EvalList(const ast::ListExpr& e, const FieldSchema* expected) -> Value;
  auto EvalRecord(const ast::RecordExpr& e, const FieldSchema* expected) -> Value;
  auto EvalCall(const ast::CallExpr& e) -> Value;
  auto Apply(const Value& lhs, const ast::BinaryExpr::Step& step, llvm::SMRange whole) -> Value;
  auto Check(Value v, const FieldSchema& schema, llvm::SMRange range) -> Value;
  auto CheckQuantity(Value v, const FieldSchema& schema, llvm::SMRange range) -> Value;
  auto CheckRef(Value v, const FieldSchema& schema, llvm::SMRange range) -> Value;
  auto Mismatch(const Value& v, const FieldSchema& schema, llvm::SMRange range) -> Value;
  void ReportUnknownName(const ast::Name& name, const FieldSchema* expected);
  static auto FindScaledCount(const ast::Expr& e) -> const ast::NumberExpr*;

  Analyzer& a_;
  diag::DiagnosticEngine& diags_;
  DeclId owner_;
  std::string_view field_name_;  // the joined path: "parallel.tensor"
  std::string_view leaf_name_;   // "tensor"
  // In a field that counts sequences: the first number of its expression
  // written with a count suffix (`4M`), for a unit hint.
  const ast::NumberExpr* scaled_ = nullptr;
};

// `4M`, `2k`: a count scaled by a decimal prefix, anywhere in `e`'s arithmetic.
auto Evaluator::FindScaledCount(const ast::Expr& e) -> const ast::NumberExpr* {
  switch (e.kind()) {
    case ast::Expr::Kind::Number: {
      const auto& n = llvm::cast<ast::NumberExpr>(e);
      bool scaled = n.valid && n.value.dimension().IsCount() && !n.text().empty() &&
                    std::string_view("kMGTP").find(n.text().back()) != std::string_view::npos;
      return scaled ? &n : nullptr;
    }
    case ast::Expr::Kind::Unary: return FindScaledCount(*llvm::cast<ast::UnaryExpr>(e).operand);
    case ast::Expr::Kind::Binary: {
      const auto& b = llvm::cast<ast::BinaryExpr>(e);
      if (const ast::NumberExpr* n = FindScaledCount(*b.first)) return n;
      for (const ast::BinaryExpr::Step& step : b.rest) {
        if (const ast::NumberExpr* n = FindScaledCount(*step.operand)) return n;
      }
      return nullptr;
    }
    default: return nullptr;
  }
}

auto Evaluator::Eval(const ast::Expr& e, const FieldSchema* expected) -> Value {
  switch (e.kind()) {
    case ast::Expr::Kind::Number: {
      const auto& n = llvm::cast<ast::NumberExpr>(e);
      return n.valid ? MakeQuantity(n.value, e.range()) : Value::Error();
    }
    case ast::Expr::Kind::String: {
      Value v = Value::Of(Value::Kind::String, e.range());
      v.SetText(llvm::cast<ast::StringExpr>(e).value);
      return v;
    }
    case ast::Expr::Kind::Bool: {
      Value v = Value::Of(Value::Kind::Bool, e.range());
      v.boolean = llvm::cast<ast::BoolExpr>(e).value;
      return v;
    }
    case ast::Expr::Kind::Auto: return Value::Of(Value::Kind::Auto, e.range());
    case ast::Expr::Kind::Name: return EvalName(llvm::cast<ast::NameExpr>(e), expected);
    case ast::Expr::Kind::Member: return EvalMember(llvm::cast<ast::MemberExpr>(e));
    case ast::Expr::Kind::List: return EvalList(llvm::cast<ast::ListExpr>(e), expected);
    case ast::Expr::Kind::Binary: return EvalBinary(llvm::cast<ast::BinaryExpr>(e));
    case ast::Expr::Kind::Unary: return EvalUnary(llvm::cast<ast::UnaryExpr>(e));
    case ast::Expr::Kind::Record: return EvalRecord(llvm::cast<ast::RecordExpr>(e), expected);
    case ast::Expr::Kind::Call: return EvalCall(llvm::cast<ast::CallExpr>(e));
    case ast::Expr::Kind::Error: return Value::Error();
  }
  return Value::Error();
}

// An enum value where the field takes one, else a declaration.
auto Evaluator::EvalName(const ast::NameExpr& e, const FieldSchema* expected) -> Value {
  std::string_view name = e.name.text;
  if (expected && expected->type == FieldType::Enum) {
    const auto& values = expected->enum_values;
    if (std::find(values.begin(), values.end(), name) != values.end()) {
      Value v = Value::Of(Value::Kind::Enum, e.range());
      v.SetEnum(name);
      return v;
    }
    if (!a_.Lookup(name)) {
      std::vector<std::string> options(values.begin(), values.end());
      auto b = diags_.Report(DiagId::UnknownEnumValue, e.name.range, name, field_name_, JoinAlternatives(values));
      b.Suggest(e.name.range, diag::ClosestMatch(name, options));
      return Value::Error();
    }
  }
  std::optional<DeclId> id = a_.Lookup(name);
  if (!id) {
    ReportUnknownName(e.name, expected);
    return Value::Error();
  }
  Value v = Value::Of(Value::Kind::Ref, e.range());
  v.decl = *id;
  return v;
}

void Evaluator::ReportUnknownName(const ast::Name& name, const FieldSchema* expected) {
  std::optional<ast::DeclKind> kind;
  if (expected && expected->type == FieldType::Ref) kind = expected->ref_kind;
  if (expected && expected->type == FieldType::Location) kind = ast::DeclKind::Storage;
  auto b = diags_.Report(DiagId::UnknownName, name.range, name.text);
  if (expected && expected->type == FieldType::String) {
    // `bucket = datasets`: a string without its quotes.
    b.Help(fmt::format("`{}` takes a string; write it in quotes: `\"{}\"`", field_name_, name.text))
        .Fix(name.range, fmt::format("\"{}\"", name.text));
    return;
  }
  if (expected && expected->type == FieldType::Bool) {
    b.Help(fmt::format("`{}` takes `true` or `false`", field_name_));
    return;
  }
  if (a_.SuggestStdImport(b, std::string(name.text), a_.decl(owner_).buffer_id)) return;
  // Only a declaration of the kind the field takes can be the fix.
  std::string near = diag::ClosestMatch(name.text, a_.NamesOfKind(kind));
  if (!near.empty()) {
    b.Suggest(name.range, near);
  } else if (kind && (*kind == ast::DeclKind::Gpu || *kind == ast::DeclKind::Node || *kind == ast::DeclKind::Fabric ||
                      *kind == ast::DeclKind::Model)) {
    b.Help("hardware and models of the standard library need `import \"std/hardware\"` or `import \"std/models\"`");
  }
}

// decl.field.subfield, or record.field
auto Evaluator::EvalMember(const ast::MemberExpr& e) -> Value {
  Value current = Eval(*e.base, nullptr);
  for (const ast::Name& member : e.members) {
    if (current.is_error()) return current;
    if (current.kind == Value::Kind::Ref) {
      DeclId decl = current.decl;
      // Copied: evaluating the member may add inline declarations, which
      // moves the analyzer's declaration table.
      const ast::DeclKind kind = a_.decl(decl).kind;
      const llvm::SMRange declared = a_.decl(decl).name_range;
      std::string owner = fmt::format("{} `{}`", ast::KeywordOf(kind), a_.decl(decl).name);
      std::optional<PathId> path = PathsOf(kind).Child(kRootPath, member.text);
      if (!path) {
        auto b = diags_.Report(DiagId::UnknownMember, member.range, owner, member.text);
        b.Suggest(member.range, diag::ClosestMatch(member.text, SchemaOf(kind).FieldNames()));
        return Value::Error();
      }
      std::optional<FieldValue> fv = a_.EvalField(decl, *path, member.range);
      if (!fv) {
        diags_.Report(DiagId::MemberNotSet, member.range, owner, member.text)
            .Note(declared, fmt::format("`{}` is declared here", a_.decl(decl).name));
        return Value::Error();
      }
      current = fv->value;
      continue;
    }
    if (const RecordValue* record = current.record(); current.kind == Value::Kind::Record && record) {
      const FieldValue* fv = record->Find(member.text);
      if (!fv) {
        std::string owner = fmt::format("the `{}` record", record->schema->name);
        bool known = record->schema->Find(member.text) != nullptr;
        if (known) diags_.Report(DiagId::MemberNotSet, member.range, owner, member.text);
        else diags_.Report(DiagId::UnknownMember, member.range, owner, member.text);
        return Value::Error();
      }
      current = fv->value;
      continue;
    }
    diags_.Report(DiagId::UnknownMember, member.range, DescribeValue(current, a_.program()), member.text);
    return Value::Error();
  }
  current.range = e.range();
  return current;
}

auto Evaluator::EvalBinary(const ast::BinaryExpr& e) -> Value {
  Value acc = Eval(*e.first, nullptr);
  llvm::SMRange whole{e.first->range().Start, e.first->range().End};
  for (const ast::BinaryExpr::Step& step : e.rest) {
    whole.End = step.operand->range().End;
    acc = Apply(acc, step, whole);
  }
  acc.range = e.range();
  return acc;
}

auto Evaluator::Apply(const Value& lhs, const ast::BinaryExpr::Step& step, llvm::SMRange whole) -> Value {
  Value rhs = Eval(*step.operand, nullptr);
  if (lhs.is_error() || rhs.is_error()) return Value::Error();
  // STORAGE / "path" and LOCATION / "more/path"
  if (step.op == ast::BinaryOp::Divide && rhs.kind == Value::Kind::String &&
      ((lhs.kind == Value::Kind::Ref && a_.decl(lhs.decl).kind == ast::DeclKind::Storage) ||
       lhs.kind == Value::Kind::Location)) {
    Value v;
    v.kind = Value::Kind::Location;
    v.decl = lhs.decl;
    std::string tail = llvm::StringRef(rhs.text()).trim('/').str();
    v.SetText(lhs.kind == Value::Kind::Location && !lhs.text().empty() ? lhs.text() + "/" + tail : tail);
    return v;
  }
  if (lhs.kind != Value::Kind::Quantity || rhs.kind != Value::Kind::Quantity) {
    diags_
        .Report(DiagId::InvalidOperands, step.op_range, ast::Spelling(step.op), DescribeValue(lhs, a_.program()),
                DescribeValue(rhs, a_.program()))
        .Range(lhs.range)
        .Range(rhs.range);
    return Value::Error();
  }
  units::ArithmeticResult r;
  switch (step.op) {
    case ast::BinaryOp::Add: r = units::Add(lhs.quantity, rhs.quantity); break;
    case ast::BinaryOp::Subtract: r = units::Subtract(lhs.quantity, rhs.quantity); break;
    case ast::BinaryOp::Multiply: r = units::Multiply(lhs.quantity, rhs.quantity); break;
    case ast::BinaryOp::Divide: r = units::Divide(lhs.quantity, rhs.quantity); break;
  }
  switch (r.error) {
    case units::ArithmeticError::kNone: return MakeQuantity(r.value, whole);
    case units::ArithmeticError::kDimensionMismatch: {
      std::string verb = step.op == ast::BinaryOp::Add ? "add" : "subtract";
      diags_
          .Report(DiagId::DimensionMismatch, step.op_range, verb, DescribeValue(lhs, a_.program()),
                  DescribeValue(rhs, a_.program()))
          .Range(lhs.range)
          .Range(rhs.range)
          .Help("`+` and `-` need the same dimension on both sides; `*` and `/` combine dimensions");
      break;
    }
    case units::ArithmeticError::kOverflow:
      diags_.Report(DiagId::ArithmeticOverflow, step.op_range, SourceText(whole)).Range(whole);
      break;
    case units::ArithmeticError::kDivisionByZero:
      diags_.Report(DiagId::DivisionByZero, step.op_range).Range(rhs.range);
      break;
    case units::ArithmeticError::kNotFinite:
      diags_.Report(DiagId::NotFinite, step.op_range, SourceText(whole)).Range(whole);
      break;
  }
  return Value::Error();
}

auto Evaluator::EvalUnary(const ast::UnaryExpr& e) -> Value {
  Value v = Eval(*e.operand, nullptr);
  if (v.is_error()) return v;
  if (v.kind != Value::Kind::Quantity) {
    diags_.Report(DiagId::InvalidNegation, e.negations.front(), DescribeValue(v, a_.program())).Range(v.range);
    return Value::Error();
  }
  for (size_t i = 0; i < e.negations.size(); ++i) {
    units::ArithmeticResult r = units::Negate(v.quantity);
    if (r.error != units::ArithmeticError::kNone) {
      diags_.Report(DiagId::ArithmeticOverflow, e.negations[i], SourceText(e.range()));
      return Value::Error();
    }
    v.quantity = r.value;
  }
  v.range = e.range();
  return v;
}

auto Evaluator::EvalList(const ast::ListExpr& e, const FieldSchema* expected) -> Value {
  const FieldSchema* element = expected && expected->type == FieldType::List ? expected->element.get() : nullptr;
  std::vector<Value> items;
  items.reserve(e.elements.size());
  for (const ast::ExprPtr& item : e.elements) items.push_back(element ? Field(*item, *element) : Eval(*item, nullptr));
  Value v = Value::Of(Value::Kind::List, e.range());
  v.SetList(std::move(items));
  return v;
}

// A declaration instanced inline with overrides; built-in records are
// handled by sema.cpp where the field is a record.
auto Evaluator::EvalRecord(const ast::RecordExpr& e, const FieldSchema* expected) -> Value {
  std::optional<DeclId> base = a_.Lookup(e.type.text);
  if (!base && BuiltinRecord(e.type.text)) {
    // `node = fat_tree { ... }`: a built-in record where it does not belong.
    std::string want = expected ? DescribeType(*expected) : "a value";
    diags_.Report(DiagId::UnknownRecordType, e.type.range, field_name_, want, e.type.text)
        .Help(fmt::format("`{} {{ ... }}` is a record of its own; it is written where a field takes one", e.type.text));
    return Value::Error();
  }
  if (!base) {
    ReportUnknownName(e.type, expected);
    return Value::Error();
  }
  Value v = Value::Of(Value::Kind::Ref, e.range());
  // Of another kind than the field takes: Check() reports the mismatch.
  bool fits = expected && expected->type == FieldType::Ref && a_.decl(*base).kind == expected->ref_kind;
  v.decl = fits ? a_.AddInline(e, *base, owner_, field_name_) : *base;
  return v;
}

auto Evaluator::EvalCall(const ast::CallExpr& e) -> Value {
  if (e.callee.text != "secret") {
    auto b = diags_.Report(DiagId::UnknownFunction, e.callee.range, e.callee.text);
    if (diag::ClosestMatch(e.callee.text, {"secret"}) == "secret") b.Fix(e.callee.range, "secret");
    b.Help("the built-in function is `secret(\"NAME\")`");
    return Value::Error();
  }
  const auto* arg = e.args.size() == 1 ? llvm::dyn_cast<ast::StringExpr>(e.args[0]) : nullptr;
  if (!arg || arg->value.empty()) {
    diags_.Report(DiagId::BadCallArguments, e.range(), "secret",
                  "one non-empty string: the name of a Kubernetes Secret");
    return Value::Error();
  }
  Value v = Value::Of(Value::Kind::Secret, e.range());
  v.SetText(arg->value);
  return v;
}

auto Evaluator::Mismatch(const Value& v, const FieldSchema& schema, llvm::SMRange range) -> Value {
  auto b =
      diags_.Report(DiagId::TypeMismatch, range, field_name_, DescribeType(schema), DescribeValue(v, a_.program()));
  if (schema.type == FieldType::Location && v.kind == Value::Kind::String) {
    b.Help("name the storage tier: `STORAGE / \"path\"`");
  }
  return Value::Error();
}

auto Evaluator::Check(Value v, const FieldSchema& schema, llvm::SMRange range) -> Value {
  if (v.is_error()) return v;
  if (v.kind == Value::Kind::Auto) {
    if (schema.allow_auto) return v;
    diags_.Report(DiagId::AutoNotAllowed, range, field_name_);
    return Value::Error();
  }
  switch (schema.type) {
    case FieldType::Quantity: return CheckQuantity(std::move(v), schema, range);
    case FieldType::CountOrDuration: {
      if (v.kind == Value::Kind::Quantity && v.quantity.dimension() == units::kTime) {
        FieldSchema time = schema;
        time.dim = units::kTime;
        time.min = 0;
        time.min_exclusive = true;
        return CheckQuantity(std::move(v), time, range);
      }
      FieldSchema count = schema;
      count.integer = true;
      count.min = 1;
      return CheckQuantity(std::move(v), count, range);
    }
    case FieldType::String:
      if (v.kind != Value::Kind::String) return Mismatch(v, schema, range);
      if (v.text().empty()) {
        diags_.Report(DiagId::EmptyString, range, field_name_);
        return Value::Error();
      }
      return v;
    case FieldType::Bool: return v.kind == Value::Kind::Bool ? v : Mismatch(v, schema, range);
    case FieldType::Enum: return v.kind == Value::Kind::Enum ? v : Mismatch(v, schema, range);
    case FieldType::Ref: return CheckRef(std::move(v), schema, range);
    case FieldType::Location: return v.kind == Value::Kind::Location ? v : Mismatch(v, schema, range);
    case FieldType::Secret:
      if (v.kind == Value::Kind::Secret) return v;
      if (v.kind == Value::Kind::String) {
        std::string_view field = leaf_name_;
        diags_.Report(DiagId::LiteralCredentials, range)
            .Help(fmt::format("store the credentials in a Kubernetes Secret and write `{} = secret(\"NAME\")`", field));
        return Value::Error();
      }
      return Mismatch(v, schema, range);
    case FieldType::List: {
      if (v.kind != Value::Kind::List) return Mismatch(v, schema, range);
      if (v.list().size() < schema.min_items || v.list().size() > schema.max_items) {
        std::string want = schema.min_items == schema.max_items ? fmt::format("exactly {} values", schema.min_items)
                                                                : fmt::format("at most {} values", schema.max_items);
        diags_.Report(DiagId::ListLength, range, field_name_, want, v.list().size());
        return Value::Error();
      }
      return v;
    }
    case FieldType::Record: return Mismatch(v, schema, range);
  }
  return v;
}

auto Evaluator::CheckQuantity(Value v, const FieldSchema& schema, llvm::SMRange range) -> Value {
  if (v.kind != Value::Kind::Quantity || v.quantity.dimension() != schema.dim) return Mismatch(v, schema, range);
  // A real that came out whole (`2.5 * 2`) is that integer; reals beyond
  // 2^53 cannot tell whole from not, so they stay reals.
  if (schema.integer && !v.quantity.is_integer()) {
    double r = v.quantity.real();
    if (std::isfinite(r) && std::trunc(r) == r && std::fabs(r) < 9007199254740992.0) {
      v.quantity = units::Quantity::Integer(static_cast<int64_t>(r), v.quantity.dimension());
    }
  }
  const units::Quantity& q = v.quantity;
  if (schema.integer && !q.is_integer()) {
    auto b = diags_.Report(DiagId::NotInteger, range, field_name_, q.DisplayText());
    if (scaled_ && !schema.counts.empty()) {
      b.Help(
          fmt::format("`{}` counts {}, not tokens, and `{}` is {}: write the whole number of {} in a step, such as "
                      "`{} = {}`",
                      leaf_name_, schema.counts, scaled_->text(), scaled_->value.ValueText(), schema.counts, leaf_name_,
                      std::max<int64_t>(1, std::llround(q.real()))));
    }
    return Value::Error();
  }
  double x = q.real();
  bool below = schema.min && (schema.min_exclusive ? x <= *schema.min : x < *schema.min);
  bool above = schema.max && x > *schema.max;
  if (below || above) {
    diags_.Report(DiagId::OutOfRange, range, field_name_, DescribeRange(schema), q.DisplayText());
    return Value::Error();
  }
  return v;
}

auto Evaluator::CheckRef(Value v, const FieldSchema& schema, llvm::SMRange range) -> Value {
  if (v.kind != Value::Kind::Ref) return Mismatch(v, schema, range);
  const Decl& target = a_.decl(v.decl);
  if (target.kind != schema.ref_kind) {
    diags_
        .Report(DiagId::WrongRefKind, range, field_name_, ast::KeywordOf(schema.ref_kind), target.name,
                ast::KeywordOf(target.kind))
        .Note(target.name_range, fmt::format("`{}` is declared here", target.name));
    return Value::Error();
  }
  return v;
}

}  // namespace

auto EvaluateField(Analyzer& analyzer, const ast::Expr& expr, const FieldSchema& field, DeclId owner,
                   std::string_view path) -> Value {
  return Evaluator(analyzer, owner, path).Field(expr, field);
}

}  // namespace avf::sema

#include "sema/value.h"

#include <algorithm>
#include <mutex>
#include <unordered_map>

#include <fmt/format.h>
#include <llvm/ADT/StringMap.h>
#include <llvm/ADT/StringRef.h>

namespace avf::sema {

auto Value::text() const -> const std::string& {
  static const std::string kNone;
  const std::string* text = payload_ ? std::get_if<std::string>(&payload_->data) : nullptr;
  return text ? *text : kNone;
}

auto Value::list() const -> const std::vector<Value>& {
  static const std::vector<Value> kNone;
  const std::vector<Value>* list = payload_ ? std::get_if<std::vector<Value>>(&payload_->data) : nullptr;
  return list ? *list : kNone;
}

auto Value::record() const -> const RecordValue* {
  const RecordValue* record = payload_ ? std::get_if<RecordValue>(&payload_->data) : nullptr;
  return record && record->schema ? record : nullptr;
}

void Value::SetText(std::string text) { payload_ = new ValuePayload(std::move(text)); }
void Value::SetList(std::vector<Value> list) { payload_ = new ValuePayload(std::move(list)); }
void Value::SetRecord(RecordValue record) { payload_ = new ValuePayload(std::move(record)); }

// One payload per enum value, shared by every value that holds it: a large
// program has an `arch = llama` in every model. Callers pass a value of a
// schema's enum, so the table is no larger than the schemas' enums.
void Value::SetEnum(std::string_view value) {
  static std::mutex mutex;
  // Never destroyed: values that share its payloads may outlive statics.
  static auto* shared = new llvm::StringMap<llvm::IntrusiveRefCntPtr<ValuePayload>>();
  std::lock_guard<std::mutex> lock(mutex);
  auto [it, fresh] = shared->try_emplace(value);
  if (fresh) it->second = new ValuePayload(std::string(value));
  payload_ = it->second;
}

auto RecordValue::Find(std::string_view name) const -> const FieldValue* {
  for (const FieldValue& f : fields) {
    if (FieldOf(f).name == name) return &f;
  }
  const FieldSchema* field = schema ? schema->Find(name) : nullptr;
  return field ? ConstantDefault(*field) : nullptr;
}

auto RecordValue::Present() const -> std::vector<const FieldValue*> {
  std::vector<const FieldValue*> present;
  auto stored = fields.begin();
  for (const FieldSchema& field : schema->fields) {
    if (stored != fields.end() && &FieldOf(*stored) == &field) {
      present.push_back(&*stored++);
    } else if (const FieldValue* d = ConstantDefault(field)) {
      present.push_back(d);
    }
  }
  return present;
}

namespace {

// The value of a default that depends on nothing else; nullopt for SameAs.
auto ConstantValue(const FieldSchema& field) -> std::optional<Value> {
  if (!field.default_value) return std::nullopt;
  const DefaultValue& d = *field.default_value;
  switch (d.kind) {
    case DefaultValue::Kind::Integer: {
      Value v = Value::Of(Value::Kind::Quantity, {});
      v.quantity = units::Quantity::Integer(d.integer, field.dim);
      return v;
    }
    case DefaultValue::Kind::Real: {
      Value v = Value::Of(Value::Kind::Quantity, {});
      v.quantity = units::Quantity::Real(d.real, field.dim);
      return v;
    }
    case DefaultValue::Kind::Enum: {
      Value v = Value::Of(Value::Kind::Enum, {});
      v.SetEnum(d.text);
      return v;
    }
    case DefaultValue::Kind::Bool: {
      Value v = Value::Of(Value::Kind::Bool, {});
      v.boolean = d.boolean;
      return v;
    }
    case DefaultValue::Kind::Auto: return Value::Of(Value::Kind::Auto, {});
    case DefaultValue::Kind::SameAs: return std::nullopt;
  }
  return std::nullopt;
}

auto HasRequired(const RecordSchema& record) -> bool {
  return std::any_of(record.fields.begin(), record.fields.end(), [](const FieldSchema& f) { return f.required; });
}

// Every constant default of every schema, built once.
class DefaultTable {
 public:
  DefaultTable() {
    for (size_t kind = 0; kind < ast::kDeclKindCount; ++kind) AddRecord(SchemaOf(static_cast<ast::DeclKind>(kind)));
  }
  auto Find(const FieldSchema& field) const -> const FieldValue* {
    auto it = by_field_.find(&field);
    return it == by_field_.end() ? nullptr : &it->second;
  }

 private:
  void AddRecord(const RecordSchema& record) {
    for (size_t i = 0; i < record.fields.size(); ++i) Add(record.fields[i], static_cast<uint16_t>(i));
  }
  void Add(const FieldSchema& field, uint16_t index) {
    if (field.type == FieldType::Record && field.record) {
      AddRecord(*field.record);
      if (!HasRequired(*field.record)) {
        Value v = Value::Of(Value::Kind::Record, {});
        v.SetRecord(DefaultsOnly(*field.record));
        by_field_.try_emplace(&field, FieldValue{index, Origin::Defaulted, 0, std::move(v)});
      }
    } else if (std::optional<Value> v = ConstantValue(field)) {
      by_field_.try_emplace(&field, FieldValue{index, Origin::Defaulted, 0, std::move(*v)});
    }
  }
  // A record none writes: the defaults that follow a sibling are stored.
  static auto DefaultsOnly(const RecordSchema& schema) -> RecordValue {
    RecordValue record{&schema, {}};
    for (const FieldSchema& field : schema.fields) {
      if (!field.default_value || field.default_value->kind != DefaultValue::Kind::SameAs) continue;
      const FieldSchema* sibling = schema.Find(field.default_value->text);
      std::optional<Value> v = sibling ? ConstantValue(*sibling) : std::nullopt;
      auto index = static_cast<uint16_t>(&field - schema.fields.data());
      if (v) record.fields.push_back(FieldValue{index, Origin::Defaulted, 0, std::move(*v)});
    }
    return record;
  }

  std::unordered_map<const FieldSchema*, FieldValue> by_field_;
};

}  // namespace

auto ConstantDefault(const FieldSchema& field) -> const FieldValue* {
  static const DefaultTable table;
  return table.Find(field);
}

auto Program::Find(std::string_view name) const -> std::optional<DeclId> {
  for (DeclId id = 0; id < decls.size(); ++id) {
    if (decls[id].name == name) return id;
  }
  return std::nullopt;
}

auto DescribeValue(const Value& v, const Program& program) -> std::string {
  switch (v.kind) {
    case Value::Kind::Quantity: {
      units::Dimension d = v.quantity.dimension();
      std::string what = d.IsCount() ? "the number" : units::DimensionName(d);
      std::string text = v.quantity.DisplayText();
      // A dimension without units displays as "1000 bytes·s": name it once.
      if (llvm::StringRef(text).endswith(" " + what)) text.resize(text.size() - what.size() - 1);
      return fmt::format("{} `{}`", what, text);
    }
    case Value::Kind::String: return fmt::format("the string \"{}\"", v.text());
    case Value::Kind::Bool: return v.boolean ? "`true`" : "`false`";
    case Value::Kind::Enum: return fmt::format("`{}`", v.text());
    case Value::Kind::Ref: {
      const Decl& d = program.decls[v.decl];
      return fmt::format("{} `{}`", ast::KeywordOf(d.kind), d.name);
    }
    case Value::Kind::Location: return fmt::format("the location `{} / \"{}\"`", program.decls[v.decl].name, v.text());
    case Value::Kind::Secret: return "a secret";
    case Value::Kind::List:
      return fmt::format("a list of {} value{}", v.list().size(), v.list().size() == 1 ? "" : "s");
    case Value::Kind::Record: return "a record";
    case Value::Kind::Auto: return "`auto`";
    case Value::Kind::Error: return "an invalid value";
  }
  return "a value";
}

}  // namespace avf::sema

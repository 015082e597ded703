#include "sema/value.h"

#include <fmt/format.h>
#include <llvm/ADT/StringRef.h>

namespace avf::sema {

auto RecordValue::Find(std::string_view name) const -> const FieldValue* {
  for (const FieldValue& f : fields) {
    if (f.name == name) return &f;
  }
  return nullptr;
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
    case Value::Kind::String: return fmt::format("the string \"{}\"", v.text);
    case Value::Kind::Bool: return v.boolean ? "`true`" : "`false`";
    case Value::Kind::Enum: return fmt::format("`{}`", v.text);
    case Value::Kind::Ref: {
      const Decl& d = program.decls[v.decl];
      return fmt::format("{} `{}`", ast::KeywordOf(d.kind), d.name);
    }
    case Value::Kind::Location: return fmt::format("the location `{} / \"{}\"`", program.decls[v.decl].name, v.text);
    case Value::Kind::Secret: return "a secret";
    case Value::Kind::List: return fmt::format("a list of {} value{}", v.list.size(), v.list.size() == 1 ? "" : "s");
    case Value::Kind::Record: return "a record";
    case Value::Kind::Auto: return "`auto`";
    case Value::Kind::Error: return "an invalid value";
  }
  return "a value";
}

}  // namespace avf::sema

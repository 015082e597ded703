#include "sema/dump.h"

#include <fmt/format.h>

#include "diag/render.h"

namespace avf::sema {

namespace {

auto Quoted(const std::string& s) -> std::string {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out.push_back('\\');
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    if (c == '\t') {
      out += "\\t";
      continue;
    }
    out.push_back(c);
  }
  return out + "\"";
}

void DumpRecord(const RecordValue& record, const Program& program, int depth, llvm::raw_ostream& os) {
  for (const FieldValue* field : record.Present()) {
    const FieldValue& f = *field;
    os.indent(depth * 2) << record.FieldOf(f).name;
    if (f.value.kind == Value::Kind::Record) {
      if (f.origin == Origin::Defaulted) os << "  // defaulted";
      if (f.origin == Origin::Inherited) os << "  // from " << program.decls[f.written_in].name;
      os << '\n';
      if (const RecordValue* inner = f.value.record()) DumpRecord(*inner, program, depth + 1, os);
      continue;
    }
    os << " = " << FormatValue(f.value, program);
    if (f.origin == Origin::Defaulted) os << "  // default";
    if (f.origin == Origin::Inherited) os << "  // from " << program.decls[f.written_in].name;
    os << '\n';
  }
}

}  // namespace

auto FormatValue(const Value& v, const Program& program) -> std::string {
  switch (v.kind) {
    case Value::Kind::Quantity: return v.quantity.DisplayText();
    case Value::Kind::String: return Quoted(v.text());
    case Value::Kind::Bool: return v.boolean ? "true" : "false";
    case Value::Kind::Enum: return v.text();
    case Value::Kind::Ref: return program.decls[v.decl].name;
    case Value::Kind::Location: return fmt::format("{} / {}", program.decls[v.decl].name, Quoted(v.text()));
    case Value::Kind::Secret: return fmt::format("secret({})", Quoted(v.text()));
    case Value::Kind::List: {
      std::vector<std::string> items;
      for (const Value& item : v.list()) items.push_back(FormatValue(item, program));
      return fmt::format("[{}]", fmt::join(items, ", "));
    }
    case Value::Kind::Record: return "{...}";
    case Value::Kind::Auto: return "auto";
    case Value::Kind::Error: return "<error>";
  }
  return "<error>";
}

void DumpProgram(const llvm::SourceMgr& sm, const Program& program, unsigned main_buffer, llvm::raw_ostream& os) {
  for (const Decl& d : program.decls) {
    if (d.buffer_id != main_buffer) continue;
    diag::Position pos = diag::PositionOf(sm, d.name_range.Start);
    os << ast::KeywordOf(d.kind) << ' ' << d.name;
    if (d.base) os << " : " << program.decls[*d.base].name;
    os << "  // " << pos.line << ':' << pos.column << '\n';
    DumpRecord(d.fields, program, 1, os);
  }
}

}  // namespace avf::sema

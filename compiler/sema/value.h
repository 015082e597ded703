// The checked program: every declaration with every field evaluated, typed
// and defaulted. This is what the planner and the emitters read.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <llvm/Support/SMLoc.h>

#include "ast/ast.h"
#include "sema/schema.h"
#include "units/quantity.h"

namespace avf::sema {

// Index into Program::decls.
using DeclId = uint32_t;

struct RecordValue;

struct Value {
  enum class Kind : uint8_t { Quantity, String, Bool, Enum, Ref, Location, Secret, List, Record, Auto, Error };
  Kind kind = Kind::Error;
  units::Quantity quantity;             // Quantity
  std::string text;                     // String, Enum, Secret name, Location path
  bool boolean = false;                 // Bool
  DeclId decl = 0;                      // Ref, Location (the storage)
  std::vector<Value> list;              // List
  std::shared_ptr<RecordValue> record;  // Record
  llvm::SMRange range;                  // where it was written (empty for defaults)

  static auto Error() -> Value { return Value{}; }
  static auto Of(Kind kind, llvm::SMRange range) -> Value {
    Value v;
    v.kind = kind;
    v.range = range;
    return v;
  }
  auto is_error() const -> bool { return kind == Kind::Error; }
};

// How a field got its value.
enum class Origin : uint8_t { Written, Inherited, Defaulted };

struct FieldValue {
  std::string_view name;  // the schema's
  Value value;
  Origin origin = Origin::Written;
  DeclId written_in = 0;  // the declaration whose body holds it (Written/Inherited)
};

// Fields in schema order; fields neither written nor defaulted are absent.
struct RecordValue {
  const RecordSchema* schema = nullptr;
  std::vector<FieldValue> fields;
  auto Find(std::string_view name) const -> const FieldValue*;
};

struct Decl {
  ast::DeclKind kind;
  std::string name;
  llvm::SMRange name_range;
  std::optional<DeclId> base;
  RecordValue fields;
  unsigned buffer_id = 0;
  // Set for `llama2_7b { seq_len = 4096 }` written inside another field;
  // such declarations are named after where they appear ("pretrain.model").
  bool is_inline = false;
  // Declared in a stdlib module (imports::Module::is_stdlib), or inline there.
  bool in_stdlib = false;
};

struct Program {
  std::vector<Decl> decls;
  auto Find(std::string_view name) const -> std::optional<DeclId>;
};

// "bytes `80GiB`", "a string", "model `llama2_7b`" for messages.
auto DescribeValue(const Value& v, const Program& program) -> std::string;

}  // namespace avf::sema

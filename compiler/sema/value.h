// The checked program: every declaration with every field evaluated, typed
// and defaulted. This is what the planner and the emitters read.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <llvm/ADT/IntrusiveRefCntPtr.h>
#include <llvm/Support/SMLoc.h>

#include "ast/ast.h"
#include "sema/schema.h"
#include "units/quantity.h"

namespace avf::sema {

// Index into Program::decls.
using DeclId = uint32_t;

struct RecordValue;
struct ValuePayload;

// Most values are numbers, names and flags: text, lists and records live in
// a payload shared by the value's copies, so that the millions of values of
// a large program stay small.
struct Value {
  enum class Kind : uint8_t { Quantity, String, Bool, Enum, Ref, Location, Secret, List, Record, Auto, Error };
  Kind kind = Kind::Error;
  bool boolean = false;      // Bool
  DeclId decl = 0;           // Ref, Location (the storage)
  units::Quantity quantity;  // Quantity
  llvm::SMRange range;       // where it was written (empty for defaults)

  // String, Enum, Secret name, Location path; empty for other kinds.
  auto text() const -> const std::string&;
  auto list() const -> const std::vector<Value>&;  // List
  auto record() const -> const RecordValue*;       // Record; null if none
  void SetText(std::string text);
  void SetEnum(std::string_view value);  // a value of a schema's enum: one payload per value, shared
  void SetList(std::vector<Value> list);
  void SetRecord(RecordValue record);

  static auto Error() -> Value { return Value{}; }
  static auto Of(Kind kind, llvm::SMRange range) -> Value {
    Value v;
    v.kind = kind;
    v.range = range;
    return v;
  }
  auto is_error() const -> bool { return kind == Kind::Error; }

 private:
  llvm::IntrusiveRefCntPtr<ValuePayload> payload_;  // shared by copies; Set* replaces it
};

// How a field got its value.
enum class Origin : uint8_t { Written, Inherited, Defaulted };

struct FieldValue {
  uint16_t field = 0;  // index in the schema of the record holding it (RecordValue::FieldOf)
  Origin origin = Origin::Written;
  DeclId written_in = 0;  // the declaration whose body holds it (Written/Inherited)
  Value value;
};

// A large program holds millions of these (figures: bench/README.md).
static_assert(sizeof(Value) <= 48 && sizeof(FieldValue) <= 56);

// Fields in schema order. A record stores the fields written (or inherited)
// and the defaults that depend on other fields; Find also answers with the
// defaults that do not (ConstantDefault). Fields neither written nor
// defaulted are absent.
struct RecordValue {
  const RecordSchema* schema = nullptr;
  std::vector<FieldValue> fields;
  auto Find(std::string_view name) const -> const FieldValue*;
  auto FieldOf(const FieldValue& f) const -> const FieldSchema& { return schema->fields[f.field]; }
  // Every field present, stored or defaulted, in schema order.
  auto Present() const -> std::vector<const FieldValue*>;
};

// A Value's text, list or record: one of them, behind an 8-byte pointer.
// Enum values share payloads across programs, hence the atomic count.
struct ValuePayload : llvm::ThreadSafeRefCountedBase<ValuePayload> {
  explicit ValuePayload(std::variant<std::string, std::vector<Value>, RecordValue> data) : data(std::move(data)) {}
  std::variant<std::string, std::vector<Value>, RecordValue> data;
};

// The value a field takes where no declaration writes it, when that value
// does not depend on other fields: a default of the schema, or, for an
// optional record without required fields, the record of its defaults.
// Null for other fields. One per schema field, shared by every program.
auto ConstantDefault(const FieldSchema& field) -> const FieldValue*;

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

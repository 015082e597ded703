// Typed reads from a parsed plan with the key path of every value, so that a
// problem names where it is: `ranks[17].tensor: expected an integer, found a
// string`. Our own path chain instead of llvm::json::Path because Path::Root
// keeps only the first error and formats it as "... at (root).ranks[17]";
// the reader reports every problem (up to Problems::kMaxShown) as
// `FILE: PATH: message`. Internal to the reader; needs llvm/Support/JSON.h,
// so its users are compiled as C++17 under clang (see CMakeLists.txt).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <llvm/Support/JSON.h>

#include "plan/enum_names.h"
#include "plan/problems.h"

namespace avf::runtime {

// A value (possibly absent) and where it sits. Children point at their
// parent, so a Node must not outlive the Node it was taken from; the path
// text is built only when a problem is reported.
class Node {
 public:
  // `version`: the plan's format version. A key that version does not have
  // (plan_format::InVersion) reads as absent, quietly: its reader leaves the
  // defaults, and the tables version 3 derives are derived after reading.
  Node(const llvm::json::Value& root, Problems& problems, int64_t version = plan_format::kFormatVersion)
      : value_(&root), problems_(&problems), version_(version) {}

  // The field `key` of this object. A missing key is reported when the
  // child is read; when this node is not an object (already reported), the
  // child is "quiet": it reads as absent and reports nothing more.
  auto operator[](llvm::StringRef key) const -> Node;
  auto operator[](size_t index) const -> Node;
  auto operator[](plan_format::Key key) const -> Node;

  // The field `key`, read with the type and range keys.def gives it.
  auto Int(plan_format::Key key) const -> int64_t;
  auto NullableInt(plan_format::Key key) const -> std::optional<int64_t>;
  auto Number(plan_format::Key key) const -> double;
  auto NullableNumber(plan_format::Key key) const -> std::optional<double>;
  auto Bool(plan_format::Key key) const -> bool { return (*this)[key].Bool(); }
  auto String(plan_format::Key key) const -> std::string;
  auto NullableString(plan_format::Key key) const -> std::optional<std::string> {
    return (*this)[key].NullableString();
  }
  template <typename E>
  auto Enum(plan_format::Key key) const -> E {
    return (*this)[key].Enum<E>();
  }
  template <typename E>
  auto NullableEnum(plan_format::Key key) const -> std::optional<E> {
    return (*this)[key].NullableEnum<E>();
  }

  auto Path() const -> std::string;
  auto present() const -> bool { return value_ != nullptr; }
  auto is_null() const -> bool { return is(llvm::json::Value::Null); }
  auto is(llvm::json::Value::Kind kind) const -> bool { return value_ && value_->kind() == kind; }
  // The string value, without a report when it is something else.
  auto text() const -> std::optional<llvm::StringRef> {
    if (!is(llvm::json::Value::String)) return std::nullopt;
    return *value_->getAsString();
  }

  // Each reports a problem (missing key, wrong type, out of range) and
  // returns a default; `Nullable*` accept null as "not set".
  auto IsObject() const -> bool;
  auto ArraySize(size_t min_items) const -> size_t;  // 0 unless an array
  auto Int(int64_t min, int64_t max = INT64_MAX) const -> int64_t { return TryInt(min, max).value_or(min); }
  auto TryInt(int64_t min, int64_t max = INT64_MAX) const -> std::optional<int64_t>;  // nullopt: reported
  auto NullableInt(int64_t min) const -> std::optional<int64_t>;
  auto Number(double min, bool exclusive_min, double max = 1e308) const -> double;
  auto NullableNumber(double min, bool exclusive_min) const -> std::optional<double>;
  auto Bool() const -> bool;
  auto String(size_t min_length) const -> std::string;
  auto NullableString() const -> std::optional<std::string>;

  template <typename E>
  auto Enum() const -> E {
    std::optional<E> v = ParseEnumText<E>();
    return v ? *v : E{};
  }
  template <typename E>
  auto NullableEnum() const -> std::optional<E> {
    if (is_null()) return std::nullopt;
    return ParseEnumText<E>();
  }

  static auto Ref(std::string_view s) -> llvm::StringRef { return {s.data(), s.size()}; }

  void Report(llvm::StringRef message) const;
  // "a string (\"abc\")", "an array", ...: what was found instead.
  auto Describe() const -> std::string;

 private:
  Node(const llvm::json::Value* value, const Node* parent, llvm::StringRef key, size_t index, bool quiet)
      : value_(value),
        parent_(parent),
        key_(key),
        index_(index),
        quiet_(quiet),
        problems_(parent->problems_),
        version_(parent->version_) {}

  // False (and reported) when absent; quiet nodes fail without a report.
  auto Require() const -> bool;
  void WrongType(llvm::StringRef expected) const;

  template <typename E>
  auto ParseEnumText() const -> std::optional<E> {
    if (!Require()) return std::nullopt;
    llvm::Optional<llvm::StringRef> s = value_->getAsString();
    std::optional<E> v = s ? ParseEnum<E>(*s) : std::nullopt;
    if (!v) Report("expected " + EnumChoices<E>() + ", found " + Describe());
    return v;
  }

  const llvm::json::Value* value_ = nullptr;
  const Node* parent_ = nullptr;
  llvm::StringRef key_;      // set for an object field
  size_t index_ = SIZE_MAX;  // set for an array element
  bool quiet_ = false;
  Problems* problems_ = nullptr;
  int64_t version_ = plan_format::kFormatVersion;
};

}  // namespace avf::runtime

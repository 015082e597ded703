#include "plan/json_reader.h"

#include <cmath>
#include <vector>

#include <fmt/format.h>

namespace avf::runtime {

namespace {

// Below 2^63 with room to spare: getAsInteger() converts a double up to
// exactly 2^63 to int64_t, which is undefined, so larger values never reach it.
constexpr double kIntegerLimit = 9.2e18;

// The number as written, as far as a double can tell.
auto NumberText(const llvm::json::Value& v) -> std::string {
  // LLVM 14's parser saturates integers beyond int64 to its limits (strtoll):
  // those texts stand for "this or further".
  if (v.getAsUINT64() == uint64_t{INT64_MAX}) return "9223372036854775807 (or more)";
  if (llvm::Optional<uint64_t> u = v.getAsUINT64()) return std::to_string(*u);
  double d = v.getAsNumber().getValueOr(0);
  // getAsInteger() is safe below 2^63 (its only undefined case is exactly 2^63).
  if (std::isfinite(d) && d < kIntegerLimit && std::trunc(d) == d) {
    llvm::Optional<int64_t> i = v.getAsInteger();
    if (i == INT64_MIN) return "-9223372036854775808 (or less)";
    if (i) return std::to_string(*i);
  }
  return fmt::format("{}", d);
}

}  // namespace

auto Node::operator[](llvm::StringRef key) const -> Node {
  const llvm::json::Object* object = value_ ? value_->getAsObject() : nullptr;
  if (!object) return Node(nullptr, this, key, SIZE_MAX, /*quiet=*/true);
  return Node(object->get(key), this, key, SIZE_MAX, quiet_);
}

auto Node::operator[](plan_format::Key key) const -> Node {
  llvm::StringRef spelling = Ref(plan_format::Spell(key));
  if (!plan_format::InVersion(key, version_)) return Node(nullptr, this, spelling, SIZE_MAX, /*quiet=*/true);
  return (*this)[spelling];
}

auto Node::operator[](size_t index) const -> Node {
  const llvm::json::Array* array = value_ ? value_->getAsArray() : nullptr;
  if (!array || index >= array->size()) return Node(nullptr, this, "", index, /*quiet=*/true);
  return Node(&(*array)[index], this, "", index, quiet_);
}

namespace {

auto Range(plan_format::Key key) -> plan_format::TypeInfo { return plan_format::Describe(plan_format::Info(key).type); }

auto IntMax(const plan_format::TypeInfo& t) -> int64_t {
  return t.max < 1e18 ? static_cast<int64_t>(t.max) : INT64_MAX;
}

}  // namespace

auto Node::Int(plan_format::Key key) const -> int64_t {
  plan_format::TypeInfo t = Range(key);
  return (*this)[key].Int(static_cast<int64_t>(t.min), IntMax(t));
}

auto Node::NullableInt(plan_format::Key key) const -> std::optional<int64_t> {
  return (*this)[key].NullableInt(static_cast<int64_t>(Range(key).min));
}

auto Node::Number(plan_format::Key key) const -> double {
  plan_format::TypeInfo t = Range(key);
  return (*this)[key].Number(t.min, t.exclusive_min, t.max);
}

auto Node::NullableNumber(plan_format::Key key) const -> std::optional<double> {
  plan_format::TypeInfo t = Range(key);
  return (*this)[key].NullableNumber(t.min, t.exclusive_min);
}

auto Node::String(plan_format::Key key) const -> std::string {
  return (*this)[key].String(static_cast<size_t>(Range(key).min));
}

auto Node::Path() const -> std::string {
  std::vector<const Node*> chain;
  for (const Node* n = this; n->parent_; n = n->parent_) chain.push_back(n);
  std::string out;
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    if ((*it)->index_ != SIZE_MAX) out += fmt::format("[{}]", (*it)->index_);
    else out += (out.empty() ? "" : ".") + (*it)->key_.str();
  }
  return out;
}

void Node::Report(llvm::StringRef message) const {
  // Past the shown problems only the count grows: skip building the path.
  if (problems_->count() >= Problems::kMaxShown) problems_->Add("", "");
  else problems_->Add(Path(), message);
}

auto Node::Describe() const -> std::string {
  if (!value_) return "nothing";
  switch (value_->kind()) {
    case llvm::json::Value::Null: return "null";
    case llvm::json::Value::Boolean: return *value_->getAsBoolean() ? "true" : "false";
    case llvm::json::Value::Number: return "the number " + NumberText(*value_);
    case llvm::json::Value::String: return "the string \"" + Printable(*value_->getAsString()) + "\"";
    case llvm::json::Value::Array: return "an array";
    case llvm::json::Value::Object: return "an object";
  }
  return "a value";
}

auto Node::Require() const -> bool {
  if (value_) return true;
  if (!quiet_) Report("missing (every key of plan-format.md is always present, null when not set)");
  return false;
}

void Node::WrongType(llvm::StringRef expected) const {
  Report(fmt::format("expected {}, found {}", expected.str(), Describe()));
}

auto Node::IsObject() const -> bool {
  if (!Require()) return false;
  if (value_->getAsObject()) return true;
  WrongType("an object");
  return false;
}

auto Node::ArraySize(size_t min_items) const -> size_t {
  if (!Require()) return 0;
  const llvm::json::Array* array = value_->getAsArray();
  if (!array) {
    WrongType("an array");
    return 0;
  }
  if (array->size() < min_items) Report(fmt::format("has {} entries, at least {} expected", array->size(), min_items));
  return array->size();
}

auto Node::TryInt(int64_t min, int64_t max) const -> std::optional<int64_t> {
  if (!Require()) return std::nullopt;
  if (value_->kind() != llvm::json::Value::Number) {
    WrongType("an integer");
    return std::nullopt;
  }
  double d = *value_->getAsNumber();
  if (!(std::abs(d) < kIntegerLimit)) {
    Report(fmt::format("{} is out of range for a 64-bit integer", NumberText(*value_)));
    return std::nullopt;
  }
  llvm::Optional<int64_t> i = value_->getAsInteger();
  if (!i) {
    Report(fmt::format("{} is not an integer", NumberText(*value_)));
    return std::nullopt;
  }
  if (*i < min || *i > max) {
    if (max == INT64_MAX) Report(fmt::format("{} is below the minimum {}", *i, min));
    else Report(fmt::format("{} is outside {}..{}", *i, min, max));
    return std::nullopt;
  }
  return *i;
}

auto Node::NullableInt(int64_t min) const -> std::optional<int64_t> {
  if (is_null()) return std::nullopt;
  if (!Require()) return std::nullopt;
  return Int(min);
}

auto Node::Number(double min, bool exclusive_min, double max) const -> double {
  if (!Require()) return min;
  llvm::Optional<double> d = value_->getAsNumber();
  if (!d) {
    WrongType("a number");
    return min;
  }
  if (!std::isfinite(*d)) {
    Report("the number is too large for a double");
    return min;
  }
  if (*d < min || (exclusive_min && *d == min)) {
    Report(fmt::format("{} is {} {}", *d, exclusive_min ? "not above" : "below the minimum", min));
    return min;
  }
  if (*d > max) {
    Report(fmt::format("{} is above the maximum {}", *d, max));
    return min;
  }
  return *d;
}

auto Node::NullableNumber(double min, bool exclusive_min) const -> std::optional<double> {
  if (is_null()) return std::nullopt;
  if (!Require()) return std::nullopt;
  return Number(min, exclusive_min);
}

auto Node::Bool() const -> bool {
  if (!Require()) return false;
  if (llvm::Optional<bool> b = value_->getAsBoolean()) return *b;
  WrongType("true or false");
  return false;
}

auto Node::String(size_t min_length) const -> std::string {
  if (!Require()) return {};
  llvm::Optional<llvm::StringRef> s = value_->getAsString();
  if (!s) {
    WrongType("a string");
    return {};
  }
  if (s->size() < min_length) Report("is empty");
  return s->str();
}

auto Node::NullableString() const -> std::optional<std::string> {
  if (is_null()) return std::nullopt;
  if (!Require()) return std::nullopt;
  llvm::Optional<llvm::StringRef> s = value_->getAsString();
  if (!s) {
    WrongType("a string or null");
    return std::nullopt;
  }
  if (s->empty()) Report("is empty (a value not set is null, never \"\")");
  return s->str();
}

}  // namespace avf::runtime

// Unknown keys, for `avf-run check-plan`: every object of the plan against
// the keys plan_format/keys.def gives its place. Compiled as C++17 under
// clang (llvm::json).
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <llvm/Support/JSON.h>

#include "plan/check_plan.h"
#include "plan/problems.h"
#include "plan/read_sections.h"
#include "plan_format/plan_format.h"

namespace avf::runtime {

namespace {

using plan_format::Key;
using plan_format::ValueType;

auto ChildKey(Key parent, llvm::StringRef spelling) -> std::optional<Key> {
  for (const plan_format::KeyInfo& k : plan_format::kKeys) {
    bool is_key = k.id != Key::Root && k.id != Key::Shared;
    if (is_key && k.parent == parent && llvm::StringRef(k.spelling.data(), k.spelling.size()) == spelling) return k.id;
  }
  return std::nullopt;
}

void CheckObject(const llvm::json::Value& v, Key shape, const std::string& path, Problems& p);

// The value of a known key: descend into the objects its type holds.
void CheckValue(const llvm::json::Value& v, Key key, const std::string& path, Problems& p) {
  switch (plan_format::Info(key).type) {
    case ValueType::Object:
    case ValueType::ObjectOrNull: CheckObject(v, key, path, p); return;
    case ValueType::Location:
    case ValueType::LocationOrNull: CheckObject(v, Key::Location, path, p); return;
    case ValueType::Objects:
    case ValueType::ObjectsOrEmpty:
      if (const llvm::json::Array* a = v.getAsArray()) {
        for (size_t i = 0; i < a->size(); ++i) CheckObject((*a)[i], key, fmt::format("{}[{}]", path, i), p);
      }
      return;
    default: return;
  }
}

void CheckObject(const llvm::json::Value& v, Key shape, const std::string& path, Problems& p) {
  const llvm::json::Object* o = v.getAsObject();
  if (!o) return;  // null or a wrong type: the reader reported it
  std::vector<std::string> names;
  for (const auto& entry : *o) names.push_back(std::string(llvm::StringRef(entry.first)));
  std::sort(names.begin(), names.end());  // DenseMap order is not the file's: report deterministically
  for (const std::string& name : names) {
    std::string where = path.empty() ? name : path + "." + name;
    if (std::optional<Key> key = ChildKey(shape, name)) CheckValue(*o->get(name), *key, where, p);
    else p.Addf(where, "not a key of plan format version {}", kPlanFormatVersion);
  }
}

}  // namespace

auto CheckPlanText(llvm::StringRef text, llvm::StringRef name) -> llvm::Expected<ValidPlan> {
  Problems p(name);
  std::optional<llvm::json::Value> root = ParseJsonText(text, p);
  if (!root) return p.TakeError();
  llvm::Expected<ValidPlan> plan = PlanOfJson(*root, name);
  if (!plan) return plan.takeError();
  CheckObject(*root, Key::Root, "", p);
  if (llvm::Error e = p.TakeError()) return e;
  if (llvm::Error e = CheckPredicted(**plan, name)) return e;
  return plan;
}

}  // namespace avf::runtime

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

// The key `spelling` of `parent` in a plan of format `version`.
auto ChildKey(Key parent, llvm::StringRef spelling, int64_t version) -> std::optional<Key> {
  for (const plan_format::KeyInfo& k : plan_format::kKeys) {
    bool is_key = k.id != Key::Root && k.id != Key::Shared;
    bool named = is_key && k.parent == parent && llvm::StringRef(k.spelling.data(), k.spelling.size()) == spelling;
    if (named && plan_format::InVersion(k.id, version)) return k.id;
  }
  return std::nullopt;
}

// Where a value sits and the format version of the plan that holds it.
struct Place {
  std::string path;
  int64_t version;
};

void CheckObject(const llvm::json::Value& v, Key shape, const Place& at, Problems& p);

// The value of a known key: descend into the objects its type holds.
void CheckValue(const llvm::json::Value& v, Key key, const Place& at, Problems& p) {
  switch (plan_format::Info(key).type) {
    case ValueType::Object:
    case ValueType::ObjectOrNull: CheckObject(v, key, at, p); return;
    case ValueType::Location:
    case ValueType::LocationOrNull: CheckObject(v, Key::Location, at, p); return;
    case ValueType::Objects:
    case ValueType::ObjectsOrEmpty:
      if (const llvm::json::Array* a = v.getAsArray()) {
        for (size_t i = 0; i < a->size(); ++i) {
          CheckObject((*a)[i], key, {fmt::format("{}[{}]", at.path, i), at.version}, p);
        }
      }
      return;
    default: return;
  }
}

void CheckObject(const llvm::json::Value& v, Key shape, const Place& at, Problems& p) {
  const llvm::json::Object* o = v.getAsObject();
  if (!o) return;  // null or a wrong type: the reader reported it
  std::vector<std::string> names;
  for (const auto& entry : *o) names.push_back(std::string(llvm::StringRef(entry.first)));
  std::sort(names.begin(), names.end());  // DenseMap order is not the file's: report deterministically
  for (const std::string& name : names) {
    std::string where = at.path.empty() ? name : at.path + "." + name;
    if (std::optional<Key> key = ChildKey(shape, name, at.version))
      CheckValue(*o->get(name), *key, {where, at.version}, p);
    else p.Addf(where, "not a key of plan format version {}", at.version);
  }
}

}  // namespace

auto CheckPlanText(llvm::StringRef text, llvm::StringRef name) -> llvm::Expected<ValidPlan> {
  Problems p(name);
  std::optional<llvm::json::Value> root = ParseJsonText(text, p);
  if (!root) return p.TakeError();
  llvm::Expected<ValidPlan> plan = PlanOfJson(*root, name);
  if (!plan) return plan.takeError();
  CheckObject(*root, Key::Root, {"", (**plan).version}, p);
  if (llvm::Error e = p.TakeError()) return e;
  if (llvm::Error e = CheckPredicted(**plan, name)) return e;
  return plan;
}

}  // namespace avf::runtime

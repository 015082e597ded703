#include "runplan_test_util.h"

#include "plan_groups.h"

#include <fstream>
#include <sstream>
#include <vector>

#include <gtest/gtest.h>
#include <llvm/Support/FormatVariadic.h>
#include <llvm/Support/JSON.h>

namespace avf::runtime::testing {

namespace {

// One step of a key path: an object key or an array index.
struct Step {
  std::string key;
  bool is_index = false;
  size_t index = 0;
};

auto Steps(std::string_view path) -> std::vector<Step> {
  std::vector<Step> steps;
  size_t i = 0;
  while (i < path.size()) {
    if (path[i] == '.') ++i;
    if (path[i] == '[') {
      size_t close = path.find(']', i);
      steps.push_back({"", true, std::stoul(std::string(path.substr(i + 1, close - i - 1)))});
      i = close + 1;
      continue;
    }
    size_t end = path.find_first_of(".[", i);
    if (end == std::string_view::npos) end = path.size();
    steps.push_back({std::string(path.substr(i, end - i))});
    i = end;
  }
  return steps;
}

auto Parse(std::string_view text) -> llvm::json::Value {
  llvm::Expected<llvm::json::Value> v = llvm::json::parse(llvm::StringRef(text.data(), text.size()));
  if (!v) {
    ADD_FAILURE() << "fixture is not JSON: " << llvm::toString(v.takeError());
    return nullptr;
  }
  return std::move(*v);
}

auto Print(const llvm::json::Value& v) -> std::string { return llvm::formatv("{0:2}", v).str(); }

// The value at all steps but the last, which the caller edits.
auto Parent(llvm::json::Value& root, const std::vector<Step>& steps, std::string_view path) -> llvm::json::Value* {
  llvm::json::Value* at = &root;
  for (size_t i = 0; i + 1 < steps.size() && at; ++i) {
    if (steps[i].is_index) {
      llvm::json::Array* a = at->getAsArray();
      at = a && steps[i].index < a->size() ? &(*a)[steps[i].index] : nullptr;
    } else {
      llvm::json::Object* o = at->getAsObject();
      at = o ? o->get(steps[i].key) : nullptr;
    }
  }
  if (!at) ADD_FAILURE() << "no value at " << path;
  return at;
}

}  // namespace

auto FixturePath(std::string_view name) -> std::string { return std::string(AVF_RUNPLAN_INPUTS "/") + std::string(name); }

auto Fixture(std::string_view name) -> std::string {
  std::ifstream in(FixturePath(name), std::ios::binary);
  EXPECT_TRUE(in.good()) << "missing fixture " << FixturePath(name);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

auto SetAt(std::string_view text, std::string_view path, std::string_view value) -> std::string {
  llvm::json::Value root = Parse(text);
  std::vector<Step> steps = Steps(path);
  llvm::json::Value* parent = Parent(root, steps, path);
  if (!parent) return std::string(text);
  llvm::json::Value replacement = Parse(value);
  if (steps.back().is_index) {
    llvm::json::Array* a = parent->getAsArray();
    if (!a || steps.back().index >= a->size()) {
      ADD_FAILURE() << "no element at " << path;
      return std::string(text);
    }
    (*a)[steps.back().index] = std::move(replacement);
  } else if (llvm::json::Object* o = parent->getAsObject()) {
    (*o)[steps.back().key] = std::move(replacement);
  } else {
    ADD_FAILURE() << "not an object above " << path;
  }
  return Print(root);
}

auto RemoveAt(std::string_view text, std::string_view path) -> std::string {
  llvm::json::Value root = Parse(text);
  std::vector<Step> steps = Steps(path);
  llvm::json::Value* parent = Parent(root, steps, path);
  if (!parent) return std::string(text);
  if (steps.back().is_index) {
    llvm::json::Array* a = parent->getAsArray();
    if (a && steps.back().index < a->size()) {
      llvm::json::Array rest;  // json::Array has no erase: rebuild without the element
      for (size_t i = 0; i < a->size(); ++i) {
        if (i != steps.back().index) rest.push_back(std::move((*a)[i]));
      }
      *a = std::move(rest);
    } else {
      ADD_FAILURE() << "no element at " << path;
    }
  } else {
    llvm::json::Object* o = parent->getAsObject();
    if (!o || !o->erase(steps.back().key)) ADD_FAILURE() << "no key at " << path;
  }
  return Print(root);
}

auto GetAt(std::string_view text, std::string_view path) -> std::string {
  llvm::json::Value root = Parse(text);
  std::vector<Step> steps = Steps(path);
  steps.push_back({"", false, 0});  // Parent() stops above the last step
  llvm::json::Value* v = Parent(root, steps, path);
  return v ? llvm::formatv("{0}", *v).str() : "";
}

auto MustParse(std::string_view text) -> RunPlan {
  llvm::Expected<RunPlan> plan = ParsePlan(llvm::StringRef(text.data(), text.size()));
  if (!plan) {
    ADD_FAILURE() << "plan refused:\n" << llvm::toString(plan.takeError());
    return RunPlan{};
  }
  return std::move(*plan);
}

auto ParseFailure(std::string_view text) -> std::string {
  llvm::Expected<RunPlan> plan = ParsePlan(llvm::StringRef(text.data(), text.size()));
  if (plan) {
    ADD_FAILURE() << "plan accepted";
    return "";
  }
  return llvm::toString(plan.takeError());
}

auto ValidateFailure(const RunPlan& plan) -> std::string {
  llvm::Error e = ValidatePlan(plan);
  if (!e) {
    ADD_FAILURE() << "plan accepted";
    return "";
  }
  return llvm::toString(std::move(e));
}

auto ReplaceFirst(std::string text, std::string_view from, std::string_view to) -> std::string {
  size_t at = text.find(from);
  if (at == std::string::npos) {
    ADD_FAILURE() << "no " << from << " in the text";
    return text;
  }
  return text.replace(at, from.size(), to);
}

namespace {

void MakeStagesDataZero(const Shape& s, RunPlan& p) {
  int64_t P = s.pipeline, C = s.chunks, D = s.data, L = p.model.layers;
  for (int64_t q = 0; q < P; ++q) {
    for (int64_t c = 0; c < C; ++c) {
      int64_t first = (c * P + q) * 2;
      p.stages.push_back({q, c, first, 2, first == 0, first + 2 == L});
    }
    p.stage_parameters.push_back(1000 + q);
  }
  p.data.tokens = 1000 * D;
  p.data.shards = D;
  for (int64_t d = 0; d < D; ++d) p.data.slices.push_back({d, 1000 * d, 1000, d, d, 2});
  p.zero.stage = s.zero;
  if (s.zero == 0) return;
  for (int64_t q = 0; q < P; ++q) {
    int64_t psi = p.stage_parameters[q], each = psi / D;
    for (int64_t d = 0; d < D; ++d) p.zero.slices.push_back({q, d, each * d, d + 1 == D ? psi - each * d : each});
  }
}

}  // namespace

auto MakePlan(const Shape& s) -> RunPlan {
  RunPlan p;
  int64_t world = s.tensor * s.data * s.pipeline;
  p.job.name = "made";
  p.model = {"m", Arch::Gpt2, 2 * s.pipeline * s.chunks, 64, 4, 4, 256, 512, 16, s.tied, 100000, 1e6};
  p.hardware.cluster = p.hardware.node = p.hardware.gpu = "x";
  p.hardware.gpus_per_node = s.gpus_per_node;
  p.hardware.nodes = p.hardware.cluster_nodes = (world + s.gpus_per_node - 1) / s.gpus_per_node;
  p.hardware.leaves = 1;
  p.training.gpus = world;
  p.training.global_batch = 2 * s.data;
  p.training.micro_batch = 1;
  p.training.micro_batches_per_step = 2;
  p.training.tokens_per_step = p.training.global_batch * 16;
  p.layout = {s.data, s.tensor, s.pipeline, s.chunks,
              s.chunks > 1 ? PipelineSchedule::Interleaved : PipelineSchedule::OneFOneB, s.zero, 1, Recompute::None,
              false, "tensor,data,pipeline"};
  avf::testing::AddRanksAndGroups(p, s.tensor, s.data, s.pipeline, s.gpus_per_node, s.tied);
  MakeStagesDataZero(s, p);
  return p;
}

}  // namespace avf::runtime::testing

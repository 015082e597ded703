// Rank table, hardware, process groups and batch arithmetic against the
// layout (plan-format.md: ranks, groups, training), against the one rank
// layout of plan_format/rank_layout.h.
#include <fmt/format.h>

#include "plan/cuts.h"
#include "plan/sizes.h"
#include "plan/validate.h"
#include "plan_format/rank_layout.h"

namespace avf::runtime {

namespace {

auto AxesOf(const RunPlan& plan) -> plan_format::Axes {
  return {plan.layout.tensor, plan.layout.data, plan.layout.pipeline};
}

// What one kind of group holds and how its groups are ordered, for messages.
struct GroupKind {
  const char* name;
  const std::vector<RankGroup>* groups;
  std::vector<RankGroup> expected;
  std::vector<char> member;  // member[r]: rank r belongs in one group of this kind
  const char* shape;
};

void CheckRankPlace(const RunPlan& plan, int64_t i, Problems& p) {
  const PlanRank& r = plan.ranks[i];
  const PlanHardware& hw = plan.hardware;
  auto [node, gpu, leaf] = plan_format::PlaceOf(i, hw.gpus_per_node, hw.nodes_per_leaf);
  if (r.node != node) {
    p.Addf(fmt::format("ranks[{}].node", i), "{}, but rank {} is on node {} (rank / gpus_per_node {})", r.node, i, node,
           hw.gpus_per_node);
  } else if (r.node >= hw.nodes) {
    p.Addf(fmt::format("ranks[{}].node", i), "node {} is beyond the {} nodes the job uses", r.node, hw.nodes);
  }
  if (r.gpu != gpu) {
    p.Addf(fmt::format("ranks[{}].gpu", i), "{}, but rank {} is GPU {} of its node (rank mod gpus_per_node {})", r.gpu,
           i, gpu, hw.gpus_per_node);
  }
  if (r.leaf != leaf) {
    p.Addf(fmt::format("ranks[{}].leaf", i), "{}, but node {} is under leaf {} (node / nodes_per_leaf {})", r.leaf,
           node, leaf, hw.nodes_per_leaf);
  } else if (r.leaf >= hw.leaves) {
    p.Addf(fmt::format("ranks[{}].leaf", i), "leaf {} is beyond the {} leaves the job uses", r.leaf, hw.leaves);
  }
}

void CheckCoordinate(Problems& p, int64_t i, const char* key, int64_t value, int64_t want, int64_t extent,
                     const plan_format::Axes& a) {
  if (value == want) return;
  std::string where = fmt::format("ranks[{}].{}", i, key);
  if (value < 0 || value >= extent) {
    p.Addf(where, "{} is outside 0..{}", value, extent - 1);
    return;
  }
  p.Addf(where, "{}, but rank {} has {} coordinate {} (rank = tensor + T x (data + D x pipeline), T = {}, D = {})",
         value, i, key, want, a.tensor, a.data);
}

auto MakeKinds(const RunPlan& plan, const plan_format::Axes& a, int64_t world) -> std::vector<GroupKind> {
  using plan_format::Axis;
  std::vector<GroupKind> kinds(3);
  kinds[0] = {"tensor", &plan.groups.tensor, plan_format::AxisGroups(a, Axis::Tensor), std::vector<char>(world, 1),
              "ranks t = 0..T-1 at fixed (d, p); groups p outer, d inner"};
  kinds[1] = {"data", &plan.groups.data, plan_format::AxisGroups(a, Axis::Data), std::vector<char>(world, 1),
              "ranks d = 0..D-1 at fixed (t, p); groups p outer, t inner"};
  kinds[2] = {"pipeline", &plan.groups.pipeline, plan_format::AxisGroups(a, Axis::Pipeline),
              std::vector<char>(world, 1), "ranks p = 0..P-1 at fixed (t, d); groups d outer, t inner"};
  return kinds;
}

// The first and last stage's ranks, paired; only with tied embeddings and P > 1.
auto EmbeddingKind(const RunPlan& plan, const plan_format::Axes& a, int64_t world) -> GroupKind {
  GroupKind k{"embedding", &plan.groups.embedding, plan_format::EmbeddingGroups(a), std::vector<char>(world, 0),
              "ranks (t, d, 0) and (t, d, P-1); groups d outer, t inner"};
  for (const RankGroup& g : k.expected) {
    for (int64_t r : g) k.member[r] = 1;
  }
  return k;
}

// Every member exists, belongs in this kind and is in one group only; every
// rank that belongs is in one. False when any of that fails.
auto CheckMembership(const GroupKind& k, int64_t world, Problems& p) -> bool {
  std::vector<int64_t> owner(world, -1);
  bool ok = true;
  for (size_t g = 0; g < k.groups->size(); ++g) {
    for (size_t m = 0; m < (*k.groups)[g].size(); ++m) {
      int64_t r = (*k.groups)[g][m];
      if (r >= 0 && r < world && k.member[r] && owner[r] < 0) {
        owner[r] = static_cast<int64_t>(g);
        continue;
      }
      ok = false;
      std::string where = fmt::format("groups.{}[{}][{}]", k.name, g, m);
      if (r < 0 || r >= world) p.Addf(where, "rank {} does not exist (the plan has {} ranks)", r, world);
      else if (!k.member[r]) p.Addf(where, "rank {} is on neither the first nor the last pipeline stage", r);
      else p.Addf(where, "rank {} is also in groups.{}[{}]", r, k.name, owner[r]);
    }
  }
  std::vector<int64_t> missing;
  for (int64_t r = 0; r < world; ++r) {
    if (k.member[r] && owner[r] < 0) missing.push_back(r);
  }
  if (!missing.empty()) {
    p.Addf(fmt::format("groups.{}", k.name), "ranks {} are in no {} group", GroupText(missing), k.name);
    return false;
  }
  return ok;
}

void CheckKind(const GroupKind& k, int64_t world, Problems& p) {
  bool members_ok = CheckMembership(k, world, p);
  if (k.groups->size() != k.expected.size()) {
    p.Addf(fmt::format("groups.{}", k.name), "{} {} groups, expected {} ({})", k.groups->size(), k.name,
           k.expected.size(), k.shape);
    return;
  }
  if (!members_ok) return;
  for (size_t g = 0; g < k.expected.size(); ++g) {
    if ((*k.groups)[g] == k.expected[g]) continue;
    p.Addf(fmt::format("groups.{}[{}]", k.name, g), "{}, but the layout puts {} here ({})", GroupText((*k.groups)[g]),
           GroupText(k.expected[g]), k.shape);
    return;  // one misplaced group usually shifts all that follow
  }
}

}  // namespace

auto GroupText(const RankGroup& group) -> std::string {
  std::string out = "[";
  for (size_t i = 0; i < group.size() && i < 8; ++i) out += (i ? ", " : "") + std::to_string(group[i]);
  return out + (group.size() > 8 ? ", ...]" : "]");
}

auto CheckExtents(const RunPlan& plan, Problems& p) -> bool {
  struct Extent {
    const char* path;
    int64_t value, min;
  };
  const Extent extents[] = {
      {"layout.data", plan.layout.data, 1},
      {"layout.tensor", plan.layout.tensor, 1},
      {"layout.pipeline", plan.layout.pipeline, 1},
      {"layout.virtual_stages", plan.layout.virtual_stages, 1},
      {"layout.micro_batch", plan.layout.micro_batch, 1},
      {"hardware.gpus_per_node", plan.hardware.gpus_per_node, 1},
      {"hardware.nodes_per_leaf", plan.hardware.nodes_per_leaf, 0},
      {"model.layers", plan.model.layers, 1},
      {"model.seq_len", plan.model.seq_len, 1},
      {"training.micro_batches_per_step", plan.training.micro_batches_per_step, 1},
      {"data.tokens", plan.data.tokens, 1},
      {"data.shards", plan.data.shards, 1},
  };
  bool ok = true;
  for (const Extent& e : extents) {
    if (e.value >= e.min) continue;
    p.Addf(e.path, "{} is below the minimum {}", e.value, e.min);
    ok = false;
  }
  return ok;
}

auto CheckWorld(const RunPlan& plan, Problems& p) -> std::optional<int64_t> {
  const PlanLayout& l = plan.layout;
  int64_t td = 0, world = 0;
  if (MulOverflows(l.tensor, l.data, &td) || MulOverflows(td, l.pipeline, &world)) {
    p.Addf("layout", "data x tensor x pipeline = {} x {} x {} overflows a 64-bit integer", l.data, l.tensor,
           l.pipeline);
    return std::nullopt;
  }
  if (plan.training.gpus != world) {
    p.Addf("training.gpus", "{} GPUs, but the layout has data x tensor x pipeline = {} ranks", plan.training.gpus,
           world);
  }
  if (world != static_cast<int64_t>(plan.ranks.size())) {
    p.Addf("ranks", "{} ranks, but data x tensor x pipeline = {} x {} x {} = {}", plan.ranks.size(), l.data, l.tensor,
           l.pipeline, world);
    return std::nullopt;
  }
  return world;
}

void CheckHardware(const RunPlan& plan, int64_t world, Problems& p) {
  const PlanHardware& hw = plan.hardware;
  int64_t need = plan_format::NodesFor(world, hw.gpus_per_node);
  if (int64_t per = plan_format::RanksPerNode(world, hw.gpus_per_node); hw.ranks_per_node != per) {
    p.Addf("hardware.ranks_per_node", "{}, but {} ranks on nodes of {} GPUs run {} per node", hw.ranks_per_node, world,
           hw.gpus_per_node, per);
  }
  if (hw.nodes != need) {
    p.Addf("hardware.nodes", "{} nodes, but {} ranks on {} GPUs per node need {}", hw.nodes, world, hw.gpus_per_node,
           need);
  }
  if (hw.nodes > hw.cluster_nodes) {
    p.Addf("hardware.nodes", "{} nodes used, but the cluster has {}", hw.nodes, hw.cluster_nodes);
  }
}

void CheckRanks(const RunPlan& plan, int64_t world, Problems& p) {
  plan_format::Axes a = AxesOf(plan);
  for (int64_t i = 0; i < world; ++i) {
    const PlanRank& r = plan.ranks[i];
    if (r.rank != i) {
      p.Addf(fmt::format("ranks[{}].rank", i), "rank {} at position {}; ranks are listed in rank order", r.rank, i);
      continue;
    }
    plan_format::Coord want = plan_format::CoordOf(a, i);
    CheckCoordinate(p, i, "tensor", r.tensor, want.tensor, a.tensor, a);
    CheckCoordinate(p, i, "data", r.data, want.data, a.data, a);
    CheckCoordinate(p, i, "pipeline", r.pipeline, want.pipeline, a.pipeline, a);
    CheckRankPlace(plan, i, p);
  }
}

void CheckGroups(const RunPlan& plan, int64_t world, Problems& p) {
  plan_format::Axes a = AxesOf(plan);
  for (const GroupKind& k : MakeKinds(plan, a, world)) CheckKind(k, world, p);
  bool tied = plan.model.tied_embeddings && a.pipeline > 1;
  if (tied && plan.groups.embedding.empty()) {
    p.Addf("groups",
           "no `embedding` groups, but the model ties its embeddings and pipeline = {}: the first and "
           "last stage must sum the shared embedding's gradient",
           a.pipeline);
  } else if (!tied && !plan.groups.embedding.empty()) {
    p.Add("groups.embedding", "embedding groups exist only with tied embeddings and pipeline > 1");
  } else if (tied) {
    CheckKind(EmbeddingKind(plan, a, world), world, p);
  }
}

void CheckTraining(const RunPlan& plan, Problems& p) {
  const PlanTraining& t = plan.training;
  const PlanLayout& l = plan.layout;
  if (t.micro_batch != l.micro_batch) {
    p.Addf("training.micro_batch", "{}, but layout.micro_batch is {}", t.micro_batch, l.micro_batch);
  }
  int64_t per_step = 0, tokens = 0;
  if (MulOverflows(l.data, l.micro_batch, &per_step) || t.global_batch % per_step != 0 ||
      t.micro_batches_per_step != t.global_batch / per_step) {
    p.Addf("training.micro_batches_per_step", "{}, but global batch {} / (data {} x micro_batch {}) is not that",
           t.micro_batches_per_step, t.global_batch, l.data, l.micro_batch);
  }
  if (MulOverflows(t.global_batch, plan.model.seq_len, &tokens) || t.tokens_per_step != tokens) {
    p.Addf("training.tokens_per_step", "{}, but global batch {} x seq_len {} is not that", t.tokens_per_step,
           t.global_batch, plan.model.seq_len);
  }
}

auto ValidatePlan(const RunPlan& plan, llvm::StringRef name) -> llvm::Error {
  Problems p(name);
  if (!CheckExtents(plan, p)) return p.TakeError();
  if (std::optional<int64_t> world = CheckWorld(plan, p)) {
    CheckHardware(plan, *world, p);
    CheckRanks(plan, *world, p);
    CheckGroups(plan, *world, p);
  }
  CheckTraining(plan, p);
  CheckCuts(plan, p);
  CheckStages(plan, p);
  CheckDataSlices(plan, p);
  CheckValidation(plan, p);
  CheckZeroSlices(plan, p);
  CheckCheckpoint(plan, p);
  CheckElastic(plan, p);
  CheckSizes(plan, p);
  return p.TakeError();
}

}  // namespace avf::runtime

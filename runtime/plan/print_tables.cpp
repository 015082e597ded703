// `avf-run check-plan --tables`: the rank, group and slice tables of a plan
// as JSON, under plan.json's key paths, whether the file lists them (version
// 2) or the reader derived them. Compiled as C++17 under clang (llvm::json).
#include <llvm/Support/JSON.h>
#include <llvm/Support/raw_ostream.h>

#include "plan/check_plan.h"

namespace avf::runtime {

namespace {

using K = plan_format::Key;

auto Ref(K key) -> llvm::StringRef {
  std::string_view s = plan_format::Spell(key);
  return {s.data(), s.size()};
}

void GroupList(llvm::json::OStream& j, K key, const std::vector<RankGroup>& groups) {
  j.attributeArray(Ref(key), [&] {
    for (const RankGroup& g : groups) {
      j.array([&] {
        for (int64_t rank : g) j.value(rank);
      });
    }
  });
}

void Ranks(llvm::json::OStream& j, const RunPlan& plan) {
  j.attributeArray(Ref(K::Ranks), [&] {
    for (const PlanRank& r : plan.ranks) {
      j.object([&] {
        j.attribute(Ref(K::RankRank), r.rank);
        j.attribute(Ref(K::RankNode), r.node);
        j.attribute(Ref(K::RankGpu), r.gpu);
        j.attribute(Ref(K::RankLeaf), r.leaf);
        j.attribute(Ref(K::RankTensor), r.tensor);
        j.attribute(Ref(K::RankData), r.data);
        j.attribute(Ref(K::RankPipeline), r.pipeline);
      });
    }
  });
}

void Groups(llvm::json::OStream& j, const RunPlan& plan) {
  j.attributeObject(Ref(K::Groups), [&] {
    GroupList(j, K::GroupsTensor, plan.groups.tensor);
    GroupList(j, K::GroupsData, plan.groups.data);
    GroupList(j, K::GroupsPipeline, plan.groups.pipeline);
    if (!plan.groups.embedding.empty()) GroupList(j, K::GroupsEmbedding, plan.groups.embedding);
  });
}

void Slices(llvm::json::OStream& j, const RunPlan& plan) {
  j.attributeObject(Ref(K::Data), [&] {
    j.attributeArray(Ref(K::DataSlices), [&] {
      for (const DataSlice& s : plan.data.slices) {
        j.object([&] {
          j.attribute(Ref(K::DataSliceDataRank), s.data_rank);
          j.attribute(Ref(K::DataSliceFirstSequence), s.first_sequence);
          j.attribute(Ref(K::DataSliceSequencesPerStep), s.sequences_per_step);
        });
      }
    });
  });
  j.attributeObject(Ref(K::Zero), [&] {
    j.attributeArray(Ref(K::ZeroSlices), [&] {
      for (const ZeroSlice& z : plan.zero.slices) {
        j.object([&] {
          j.attribute(Ref(K::ZeroSliceStage), z.stage);
          j.attribute(Ref(K::ZeroSliceDataRank), z.data_rank);
          j.attribute(Ref(K::ZeroSliceFirst), z.first);
          j.attribute(Ref(K::ZeroSliceCount), z.count);
        });
      }
    });
  });
}

}  // namespace

void PrintTables(const RunPlan& plan, llvm::raw_ostream& out) {
  {
    llvm::json::OStream j(out, 0);
    j.object([&] {
      Ranks(j, plan);
      Groups(j, plan);
      Slices(j, plan);
    });
  }
  out << "\n";
}

}  // namespace avf::runtime

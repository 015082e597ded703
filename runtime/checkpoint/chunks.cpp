#include "checkpoint/chunks.h"

#include <algorithm>
#include <cstring>
#include <unordered_map>

#include <fmt/format.h>

namespace avf::checkpoint {

namespace {

auto Fail(std::string message) -> llvm::Error {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s", message.c_str());
}

auto IsWhole(const model::TensorPart& p) -> bool {
  return p.col_first == 0 && p.col_count == p.cols && p.row_blocks.size() == 1 && p.row_blocks[0].first == 0 &&
         p.row_blocks[0].count == p.rows;
}

auto SavedElsewhere(const RankShard& shard, const model::ParamTensor& t) -> bool {
  if (shard.tensor_rank != 0 && IsWhole(t.part)) return true;
  return t.name == "wte" && !shard.embedding;
}

// One global tensor of one kind, assembled from its chunks.
struct Assembled {
  std::vector<float> values;
  std::vector<uint8_t> covered;
};

auto Assemble(const Tensor& t, ChunkSource& source) -> llvm::Expected<Assembled> {
  Assembled a;
  size_t elements = static_cast<size_t>(t.rows * t.cols);
  a.values.assign(elements, 0.0f);
  a.covered.assign(elements, 0);
  std::vector<float> bytes;
  for (const Chunk& c : t.chunks) {
    bytes.resize(static_cast<size_t>(c.count));
    if (llvm::Error e = source.Read(c.file, c.offset, c.count, bytes.data())) return e;
    std::string overlap;
    ForEachRun(c.part, c.first, c.count, [&](PartRun r) {
      std::memcpy(a.values.data() + r.full, bytes.data() + (r.local - c.first), static_cast<size_t>(r.count) * 4);
      for (int64_t i = r.full; i < r.full + r.count; ++i) {
        if (a.covered[static_cast<size_t>(i)]++ && overlap.empty()) overlap = std::to_string(i);
      }
    });
    if (!overlap.empty()) return Fail(fmt::format("{}: element {} is in two chunks", t.name, overlap));
  }
  auto hole = std::find(a.covered.begin(), a.covered.end(), 0);
  if (hole != a.covered.end())
    return Fail(fmt::format("{}: element {} is in no chunk", t.name, hole - a.covered.begin()));
  return a;
}

}  // namespace

void ForEachRun(const model::TensorPart& part, int64_t first, int64_t count, llvm::function_ref<void(PartRun)> fn) {
  if (count <= 0 || part.col_count <= 0) return;
  int64_t row = first / part.col_count, col = first % part.col_count, left = count, local = first;
  for (const model::TensorPart::Rows& block : part.row_blocks) {
    if (row >= block.count) {
      row -= block.count;
      continue;
    }
    for (; row < block.count && left > 0; ++row) {
      int64_t take = std::min(left, part.col_count - col);
      fn({local, (block.first + row) * part.cols + part.col_first + col, take});
      local += take, left -= take, col = 0;
    }
    if (left == 0) return;
    row = 0;
  }
}

auto ShareOf(int64_t total, int64_t data_rank, int64_t data_ranks) -> optim::ElementRun {
  int64_t per = total / data_ranks, first = per * data_rank;
  return {first, data_rank == data_ranks - 1 ? total - first : per};
}

auto PlanSave(const RankShard& shard, const std::vector<StateArray>& arrays) -> SavePlan {
  SavePlan plan;
  std::unordered_map<std::string, size_t> index_of;
  for (const StateArray& a : arrays) {
    int64_t lo_run = std::max(a.run.first, shard.share.first);
    int64_t hi_run = std::min(a.run.first + a.run.count, shard.share.first + shard.share.count);
    for (const model::ParamTensor& t : shard.layout->tensors) {
      int64_t lo = std::max(lo_run, t.offset), hi = std::min(hi_run, t.offset + t.size);
      if (lo >= hi || SavedElsewhere(shard, t)) continue;
      std::string name = (Prefix(a.kind) + t.name).str();
      auto [it, added] = index_of.try_emplace(name, plan.tensors.size());
      if (added) plan.tensors.push_back(Tensor{name, t.part.rows, t.part.cols, {}});
      Chunk c{0, 0, t.part, lo - t.offset, hi - lo};
      plan.chunks.push_back(
          {it->second, c, a.values.slice(static_cast<size_t>(lo - a.run.first), static_cast<size_t>(hi - lo))});
    }
  }
  return plan;
}

auto LoadArray(const Index& index, ChunkSource& source, const model::ParamLayout& layout, StateKind kind,
               optim::ElementRun run) -> llvm::Expected<std::vector<float>> {
  std::unordered_map<std::string, const Tensor*> by_name;
  for (const Tensor& t : index.tensors) by_name[t.name] = &t;
  std::vector<float> out(static_cast<size_t>(run.count));
  for (const model::ParamTensor& t : layout.tensors) {
    int64_t lo = std::max(run.first, t.offset), hi = std::min(run.first + run.count, t.offset + t.size);
    if (lo >= hi) continue;
    std::string name = (Prefix(kind) + t.name).str();
    auto found = by_name.find(name);
    if (found == by_name.end()) return Fail(fmt::format("the checkpoint has no tensor {}", name));
    const Tensor& saved = *found->second;
    if (saved.rows != t.part.rows || saved.cols != t.part.cols) {
      return Fail(fmt::format("{} is {} x {} in the checkpoint, but {} x {} in this model", name, saved.rows,
                              saved.cols, t.part.rows, t.part.cols));
    }
    llvm::Expected<Assembled> full = Assemble(saved, source);
    if (!full) return full.takeError();
    ForEachRun(t.part, lo - t.offset, hi - lo, [&](PartRun r) {
      std::memcpy(out.data() + (t.offset + r.local - run.first), full->values.data() + r.full,
                  static_cast<size_t>(r.count) * 4);
    });
  }
  return out;
}

}  // namespace avf::checkpoint

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

auto SamePart(const model::TensorPart& a, const model::TensorPart& b) -> bool {
  if (a.col_first != b.col_first || a.col_count != b.col_count || a.row_blocks.size() != b.row_blocks.size()) {
    return false;
  }
  for (size_t i = 0; i < a.row_blocks.size(); ++i) {
    if (a.row_blocks[i].first != b.row_blocks[i].first || a.row_blocks[i].count != b.row_blocks[i].count) return false;
  }
  return true;
}

// Intervals [first, first + count) that must tile [0, total) exactly: the
// first element in two of them or in none, or "" when they tile it.
auto TilingProblem(std::vector<std::pair<int64_t, int64_t>>& runs, int64_t total) -> std::string {
  std::sort(runs.begin(), runs.end());
  int64_t next = 0;
  for (const auto& [first, count] : runs) {
    if (first < next) return fmt::format("element {} is in two chunks", first);
    if (first > next) return fmt::format("element {} is in no chunk", next);
    next = first + count;
  }
  return next == total ? "" : fmt::format("element {} is in no chunk", next);
}

// Elements [lo, lo + n) of `part` read straight from the chunks of the same
// part (a resume whose tensor cut is the writer's: only ZeRO slices or data
// ranks differ); false when those chunks do not hold all of them.
auto ReadSamePart(const Tensor& t, const model::TensorPart& part, int64_t lo, int64_t n, ChunkSource& source,
                  float* out) -> llvm::Expected<bool> {
  std::vector<std::pair<int64_t, int64_t>> got;
  for (const Chunk& c : t.chunks) {
    int64_t from = std::max(lo, c.first), to = std::min(lo + n, c.first + c.count);
    if (from < to && SamePart(c.part, part)) got.emplace_back(from - lo, to - from);
  }
  if (!TilingProblem(got, n).empty()) return false;
  for (const Chunk& c : t.chunks) {
    int64_t from = std::max(lo, c.first), to = std::min(lo + n, c.first + c.count);
    if (from >= to || !SamePart(c.part, part)) continue;
    uint64_t offset = c.offset + static_cast<uint64_t>(from - c.first) * sizeof(float);
    if (llvm::Error e = source.Read(c.file, offset, to - from, out + (from - lo))) return e;
  }
  return true;
}

// One global tensor of one kind, assembled from all of its chunks, which
// must hold every element exactly once.
// The buffers are grown, never shrunk: touching new memory is what costs
// most when a large checkpoint is loaded.
auto Assemble(const Tensor& t, ChunkSource& source, LoadScratch& scratch) -> llvm::Expected<const float*> {
  int64_t elements = t.rows * t.cols;
  if (scratch.full.size() < static_cast<size_t>(elements)) scratch.full.resize(static_cast<size_t>(elements));
  float* values = scratch.full.data();
  std::vector<std::pair<int64_t, int64_t>> runs;
  for (const Chunk& c : t.chunks) {
    if (scratch.buffer.size() < static_cast<size_t>(c.count)) scratch.buffer.resize(static_cast<size_t>(c.count));
    const float* read = scratch.buffer.data();
    if (llvm::Error e = source.Read(c.file, c.offset, c.count, scratch.buffer.data())) return e;
    ForEachRun(c.part, c.first, c.count, [&](PartRun r) {
      std::memcpy(values + r.full, read + (r.local - c.first), static_cast<size_t>(r.count) * 4);
      runs.emplace_back(r.full, r.count);
    });
  }
  std::string problem = TilingProblem(runs, elements);
  if (!problem.empty()) return Fail(fmt::format("{}: {}", t.name, problem));
  return values;
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
               optim::ElementRun run, LoadScratch* scratch) -> llvm::Expected<std::vector<float>> {
  LoadScratch own;
  LoadScratch& s = scratch ? *scratch : own;
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
    float* into = out.data() + (lo - run.first);
    llvm::Expected<bool> direct = ReadSamePart(saved, t.part, lo - t.offset, hi - lo, source, into);
    if (!direct) return direct.takeError();
    if (*direct) continue;
    llvm::Expected<const float*> full = Assemble(saved, source, s);
    if (!full) return full.takeError();
    ForEachRun(t.part, lo - t.offset, hi - lo, [&](PartRun r) {
      std::memcpy(out.data() + (t.offset + r.local - run.first), *full + r.full, static_cast<size_t>(r.count) * 4);
    });
  }
  return out;
}

}  // namespace avf::checkpoint

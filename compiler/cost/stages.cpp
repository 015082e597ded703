#include "cost/stages.h"

#include <algorithm>

namespace avf::cost {

namespace {

// The chunks that get one layer above L / C form one range [lo, hi).
struct ExtraRange {
  int64_t lo = 0;
  int64_t hi = 0;
};

auto Extra(int64_t layers, int64_t chunks) -> ExtraRange {
  int64_t extra = layers % chunks;
  if (extra == 0) return {};
  if (extra == chunks - 1) return {1, chunks};
  return {chunks - 1 - extra, chunks - 1};
}

}  // namespace

auto ChunkLayers(int64_t layers, int64_t chunks, int64_t chunk) -> int64_t {
  ExtraRange r = Extra(layers, chunks);
  return layers / chunks + (chunk >= r.lo && chunk < r.hi ? 1 : 0);
}

auto ChunkFirstLayer(int64_t layers, int64_t chunks, int64_t chunk) -> int64_t {
  ExtraRange r = Extra(layers, chunks);
  int64_t extra_before = std::max<int64_t>(0, std::min(chunk, r.hi) - r.lo);
  return chunk * (layers / chunks) + extra_before;
}

auto ChunkLayerCounts(int64_t layers, int64_t chunks) -> std::vector<int64_t> {
  std::vector<int64_t> counts;
  counts.reserve(static_cast<size_t>(chunks));
  for (int64_t c = 0; c < chunks; ++c) counts.push_back(ChunkLayers(layers, chunks, c));
  return counts;
}

auto ChunksPerStage(const Layout& l) -> int64_t { return l.schedule == Schedule::Interleaved ? l.virtual_stages : 1; }

auto StageLayers(int64_t layers, int64_t pipeline, int64_t chunks_per_stage, int64_t stage) -> int64_t {
  int64_t chunks = pipeline * chunks_per_stage;
  int64_t total = 0;
  for (int64_t c = 0; c < chunks_per_stage; ++c) total += ChunkLayers(layers, chunks, c * pipeline + stage);
  return total;
}

auto MaxStageLayers(int64_t layers, int64_t pipeline, int64_t chunks_per_stage) -> int64_t {
  int64_t most = 0;
  for (int64_t s = 0; s < pipeline; ++s) most = std::max(most, StageLayers(layers, pipeline, chunks_per_stage, s));
  return most;
}

}  // namespace avf::cost

// How a model's layers are split over pipeline chunks: the one rule the cost
// model, the planner's stage table and plan.json share (docs/planner.md,
// "Uneven stages").
//
// There are C = pipeline x chunks_per_stage chunks, numbered chunk-major:
// chunk g is chunk g / pipeline of stage g % pipeline and holds the g-th
// contiguous block of layers. Every chunk gets L / C layers; the L % C left
// over go one each to the middle chunks, from chunk C-2 down to chunk 1, and
// only when L % C == C-1 also to the last chunk. The first and last chunks
// carry the embedding and the output head, and under 1F1B the later stages
// hold fewer micro-batches in flight, so they take the extra layers first.
// Example: 126 layers on 16 chunks -> 7, 8 x 14, 7.
//
// Every function needs 1 <= chunks <= layers (each chunk gets a layer) and
// 0 <= chunk < chunks; all are O(1) except where noted and never allocate.
#pragma once

#include <cstdint>
#include <vector>

#include "cost/shape.h"

namespace avf::cost {

// Layers in chunk `chunk` (chunk-major index) of `chunks`.
auto ChunkLayers(int64_t layers, int64_t chunks, int64_t chunk) -> int64_t;

// Index of the first layer of chunk `chunk`.
auto ChunkFirstLayer(int64_t layers, int64_t chunks, int64_t chunk) -> int64_t;

// Every chunk's layer count, chunk-major (allocates; not for hot loops).
auto ChunkLayerCounts(int64_t layers, int64_t chunks) -> std::vector<int64_t>;

// Chunks per pipeline stage: virtual_stages under the interleaved schedule, 1 otherwise.
auto ChunksPerStage(const Layout& l) -> int64_t;

// Layers pipeline stage `stage` holds over all its chunks, and the most any
// stage holds (the stage that sets the pace and the memory peak). O(chunks_per_stage).
auto StageLayers(int64_t layers, int64_t pipeline, int64_t chunks_per_stage, int64_t stage) -> int64_t;
auto MaxStageLayers(int64_t layers, int64_t pipeline, int64_t chunks_per_stage) -> int64_t;

}  // namespace avf::cost

// Layer ranges of the stages, data slices and ZeRO slices: each must cover
// its whole range exactly once, in the documented order (plan-format.md:
// stages, data, zero). Intervals are compared, never expanded: the counts come
// from the file and may be huge.
#include <algorithm>
#include <optional>

#include <fmt/format.h>

#include "plan/validate.h"

namespace avf::runtime {

namespace {

// Whether entry i of `stages` is the (stage, chunk) stage-major order puts there.
auto CheckStageOrder(const PlanStage& st, size_t i, int64_t chunks, Problems& p) -> bool {
  int64_t s = static_cast<int64_t>(i) / chunks, c = static_cast<int64_t>(i) % chunks;
  if (st.stage == s && st.chunk == c) return true;
  p.Addf(fmt::format("stages[{}]", i), "stage {}, chunk {}, but entry {} is stage {}, chunk {} (stage-major order)",
         st.stage, st.chunk, i, s, c);
  return false;
}

// Layer block b (chunk x pipeline + stage) must start where block b-1 ends,
// hold at least one layer and stay inside the model; the blocks may differ
// in size (plan-format.md, stages). Returns where the block ends, which is
// where the next must start, or nullopt when it cannot be placed.
auto CheckLayerBlock(const RunPlan& plan, size_t i, int64_t block, int64_t start, Problems& p)
    -> std::optional<int64_t> {
  const PlanStage& st = plan.stages[i];
  int64_t L = plan.model.layers, end = 0;
  if (st.first_layer != start) {
    p.Addf(fmt::format("stages[{}].first_layer", i),
           "{}, but chunk {} of stage {} is layer block {} (chunk x pipeline + stage), which starts at layer {}{}",
           st.first_layer, st.chunk, st.stage, block, start,
           block == 0 ? "" : fmt::format(", where block {} ends", block - 1));
  }
  if (st.layers < 1) {
    p.Addf(fmt::format("stages[{}].layers", i), "{}, but every chunk holds at least one layer", st.layers);
    return std::nullopt;
  }
  if (AddOverflows(st.first_layer, st.layers, &end) || end > L) {
    p.Addf(fmt::format("stages[{}]", i), "{} layers from layer {} run past the model's {} layers", st.layers,
           st.first_layer, L);
    return std::nullopt;
  }
  if (st.embedding != (st.first_layer == 0)) {
    p.Addf(fmt::format("stages[{}].embedding", i), "{}, but the embedding belongs to the chunk that holds layer 0",
           st.embedding);
  }
  if (st.output != (end == L)) {
    p.Addf(fmt::format("stages[{}].output", i), "{}, but the output layer belongs to the chunk that holds layer {}",
           st.output, L - 1);
  }
  return end;
}

// In block order (chunk-major: chunk 0 of every stage, then chunk 1, ...)
// the chunks must tile layers 0 .. L-1 without gap or overlap.
void CheckLayerCoverage(const RunPlan& plan, int64_t chunks, Problems& p) {
  int64_t P = plan.layout.pipeline, next = 0;
  for (int64_t block = 0; block < P * chunks; ++block) {
    size_t i = static_cast<size_t>((block % P) * chunks + block / P);
    std::optional<int64_t> end = CheckLayerBlock(plan, i, block, next, p);
    if (!end) return;
    next = *end;
  }
  if (next < plan.model.layers) {
    p.Addf("stages", "layers {}..{} are held by no stage", next, plan.model.layers - 1);
  }
}

}  // namespace

void CheckStages(const RunPlan& plan, Problems& p) {
  const PlanLayout& l = plan.layout;
  int64_t chunks = l.schedule == PipelineSchedule::Interleaved ? l.virtual_stages : 1, entries = 0;
  if (static_cast<int64_t>(plan.stage_parameters.size()) != l.pipeline) {
    p.Addf("stage_parameters", "{} entries, expected one per pipeline stage ({})", plan.stage_parameters.size(),
           l.pipeline);
  }
  if (MulOverflows(l.pipeline, chunks, &entries) || entries != static_cast<int64_t>(plan.stages.size())) {
    p.Addf("stages", "{} entries, expected pipeline x chunks = {} x {}{}", plan.stages.size(), l.pipeline, chunks,
           chunks > 1 ? " (virtual_stages of the interleaved schedule)" : "");
    return;
  }
  bool placed = true;
  for (size_t i = 0; i < plan.stages.size(); ++i) placed = CheckStageOrder(plan.stages[i], i, chunks, p) && placed;
  if (placed) CheckLayerCoverage(plan, chunks, p);
}

void CheckDataSlices(const RunPlan& plan, Problems& p) {
  const PlanData& data = plan.data;
  int64_t D = plan.layout.data;
  if ((data.format == TokenFormat::U16 ? 2 : 4) != data.token_bytes) {
    p.Addf("data.token_bytes", "{} bytes per token, but {} tokens are {} bytes", data.token_bytes, Name(data.format),
           data.format == TokenFormat::U16 ? 2 : 4);
  }
  if (static_cast<int64_t>(data.slices.size()) != D) {
    p.Addf("data.slices", "{} slices, expected one per data-parallel rank ({})", data.slices.size(), D);
    return;
  }
  int64_t next = 0;
  for (size_t i = 0; i < data.slices.size(); ++i) {
    const DataSlice& s = data.slices[i];
    int64_t batch = 0;
    if (s.data_rank != static_cast<int64_t>(i)) {
      p.Addf(fmt::format("data.slices[{}].data_rank", i), "{} at position {}; slices are in data-rank order",
             s.data_rank, i);
    }
    if (s.first_sequence != next) {
      p.Addf(fmt::format("data.slices[{}].first_sequence", i),
             "starts at sequence {} of the global batch, but the previous slice ends at {} (slices are contiguous "
             "from sequence 0)",
             s.first_sequence, next);
    }
    if (MulOverflows(s.sequences_per_step, D, &batch) || batch != plan.training.global_batch) {
      p.Addf(fmt::format("data.slices[{}].sequences_per_step", i), "{} x {} data ranks is not the global batch {}",
             s.sequences_per_step, D, plan.training.global_batch);
      return;
    }
    next += s.sequences_per_step;
  }
}

void CheckZeroSlices(const RunPlan& plan, Problems& p) {
  const PlanZero& zero = plan.zero;
  int64_t D = plan.layout.data, P = plan.layout.pipeline, entries = 0;
  if (zero.stage != plan.layout.zero) {
    p.Addf("zero.stage", "ZeRO stage {}, but layout.zero is {}", zero.stage, plan.layout.zero);
  }
  if (zero.stage == 0) {
    if (!zero.slices.empty()) p.Add("zero.slices", "ZeRO stage 0 shards nothing; the slices must be empty");
    return;
  }
  if (MulOverflows(D, P, &entries) || entries != static_cast<int64_t>(zero.slices.size())) {
    p.Addf("zero.slices", "{} slices, expected data x pipeline = {} x {} (each stage's data ranks)", zero.slices.size(),
           D, P);
    return;
  }
  int64_t offset = 0;
  for (size_t i = 0; i < zero.slices.size(); ++i) {
    const ZeroSlice& z = zero.slices[i];
    int64_t s = static_cast<int64_t>(i) / D, d = static_cast<int64_t>(i) % D;
    if (z.stage != s || z.data_rank != d) {
      p.Addf(fmt::format("zero.slices[{}]", i),
             "stage {}, data rank {}, but entry {} is stage {}, data rank {} (stage-major, data ranks in order)",
             z.stage, z.data_rank, i, s, d);
      return;
    }
    if (d == 0) offset = 0;
    if (z.first != offset) {
      p.Addf(fmt::format("zero.slices[{}].first", i), "starts at {}, expected {} (a stage's slices are contiguous)",
             z.first, offset);
    }
    if (AddOverflows(z.first, z.count, &offset)) {
      p.Addf(fmt::format("zero.slices[{}]", i), "first {} + count {} overflows", z.first, z.count);
      return;
    }
    if (d == D - 1 && s < static_cast<int64_t>(plan.stage_parameters.size()) && offset != plan.stage_parameters[s]) {
      p.Addf("zero.slices", "stage {}'s slices cover {} parameters, but stage_parameters[{}] is {}", s, offset, s,
             plan.stage_parameters[s]);
    }
  }
}

void CheckValidation(const RunPlan& plan, Problems& p) {
  if (!plan.validation) return;
  const PlanValidation& v = *plan.validation;
  if ((v.format == TokenFormat::U16 ? 2 : 4) != v.token_bytes) {
    p.Addf("validation.token_bytes", "{} bytes per token, but {} tokens are {} bytes", v.token_bytes, Name(v.format),
           v.format == TokenFormat::U16 ? 2 : 4);
  }
}

void CheckCheckpoint(const RunPlan& plan, Problems& p) {
  if (plan.checkpoint && plan.checkpoint->every_steps && plan.checkpoint->every_seconds) {
    p.Add("checkpoint", "every_steps and every_seconds are both set; at most one of the two is");
  }
}

}  // namespace avf::runtime

#include "emit/plan_fields.h"

#include <cmath>

#include <fmt/format.h>

#include "plan_format/plan_format.h"

namespace avf::emit {

namespace pf = plan_format;
using K = pf::Key;

using pf::Spell;

auto FormatName(cost::Arch v) -> std::string_view {
  return pf::Spelling(v == cost::Arch::Llama ? pf::Arch::Llama : pf::Arch::Gpt2);
}

auto FormatName(cost::Precision v) -> std::string_view {
  switch (v) {
    case cost::Precision::Bf16: return pf::Spelling(pf::Precision::Bf16);
    case cost::Precision::Fp16: return pf::Spelling(pf::Precision::Fp16);
    case cost::Precision::Fp32: return pf::Spelling(pf::Precision::Fp32);
  }
  return "?";
}

auto FormatName(cost::Attention v) -> std::string_view {
  return pf::Spelling(v == cost::Attention::Materialized ? pf::Attention::Materialized : pf::Attention::Flash);
}

auto FormatName(cost::Schedule v) -> std::string_view {
  switch (v) {
    case cost::Schedule::OneFOneB: return pf::Spelling(pf::PipelineSchedule::OneFOneB);
    case cost::Schedule::Interleaved: return pf::Spelling(pf::PipelineSchedule::Interleaved);
    case cost::Schedule::GPipe: return pf::Spelling(pf::PipelineSchedule::Gpipe);
  }
  return "?";
}

auto FormatName(cost::Recompute v) -> std::string_view {
  switch (v) {
    case cost::Recompute::None: return pf::Spelling(pf::Recompute::None);
    case cost::Recompute::Selective: return pf::Spelling(pf::Recompute::Selective);
    case cost::Recompute::Full: return pf::Spelling(pf::Recompute::Full);
  }
  return "?";
}

auto FormatName(cost::OptimizerKind v) -> std::string_view {
  return pf::Spelling(v == cost::OptimizerKind::Sgd ? pf::OptimizerKind::Sgd : pf::OptimizerKind::AdamW);
}

auto FormatName(check::StorageKind v) -> std::string_view {
  using S = check::StorageKind;
  switch (v) {
    case S::Ceph: return pf::Spelling(pf::StorageKind::Ceph);
    case S::S3: return pf::Spelling(pf::StorageKind::S3);
    case S::Minio: return pf::Spelling(pf::StorageKind::Minio);
    case S::Beegfs: return pf::Spelling(pf::StorageKind::Beegfs);
    case S::Lustre: return pf::Spelling(pf::StorageKind::Lustre);
    case S::Nfs: return pf::Spelling(pf::StorageKind::Nfs);
    case S::Pvc: return pf::Spelling(pf::StorageKind::Pvc);
    case S::Local: return pf::Spelling(pf::StorageKind::Local);
  }
  return "?";
}

auto FormatName(check::Target v) -> std::string_view {
  switch (v) {
    case check::Target::Kubeflow: return pf::Spelling(pf::Target::Kubeflow);
    case check::Target::JobSet: return pf::Spelling(pf::Target::Jobset);
    case check::Target::Slurm: return pf::Spelling(pf::Target::Slurm);
  }
  return "?";
}

auto FormatName(check::LengthField v) -> std::string_view {
  switch (v) {
    case check::LengthField::Steps: return pf::Spelling(pf::LengthField::Steps);
    case check::LengthField::Tokens: return pf::Spelling(pf::LengthField::Tokens);
    case check::LengthField::Epochs: return pf::Spelling(pf::LengthField::Epochs);
  }
  return "?";
}

auto FormatName(check::TokenFormat v) -> std::string_view {
  return pf::Spelling(v == check::TokenFormat::U32 ? pf::TokenFormat::U32 : pf::TokenFormat::U16);
}

auto FormatName(check::LrSchedule v) -> std::string_view {
  switch (v) {
    case check::LrSchedule::Cosine: return pf::Spelling(pf::LrSchedule::Cosine);
    case check::LrSchedule::Linear: return pf::Spelling(pf::LrSchedule::Linear);
    case check::LrSchedule::Constant: return pf::Spelling(pf::LrSchedule::Constant);
  }
  return "?";
}

auto GroupedDigits(double v) -> std::string {
  std::string digits = fmt::format("{:.0f}", std::fabs(v));
  std::string out = v < 0 ? "-" : "";
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

auto WholeBytes(double bytes) -> int64_t { return static_cast<int64_t>(std::llround(bytes)); }

void LayoutField(JsonWriter& j, const cost::Layout& l, const std::function<void()>& extra) {
  j.ObjectField(Spell(K::Layout), [&] {
    j.Field(Spell(K::LayoutData), l.data);
    j.Field(Spell(K::LayoutTensor), l.tensor);
    j.Field(Spell(K::LayoutPipeline), l.pipeline);
    j.Field(Spell(K::LayoutVirtualStages), l.virtual_stages);
    j.Field(Spell(K::LayoutSchedule), FormatName(l.schedule));
    j.Field(Spell(K::LayoutZero), l.zero);
    j.Field(Spell(K::LayoutMicroBatch), l.micro_batch);
    j.Field(Spell(K::LayoutRecompute), FormatName(l.recompute));
    j.Field(Spell(K::LayoutSequenceParallel), l.sequence_parallel);
    if (extra) extra();
  });
}

void MemoryFields(JsonWriter& j, const cost::Prediction& p) {
  const cost::MemoryBreakdown& m = p.memory;
  j.Field(Spell(K::PredictedMemoryPerGpuBytes), WholeBytes(p.memory_per_gpu));
  j.ObjectField(Spell(K::PredictedMemoryBreakdown), [&] {
    j.Field(Spell(K::MemoryWeights), WholeBytes(m.weights));
    j.Field(Spell(K::MemoryGradients), WholeBytes(m.gradients));
    j.Field(Spell(K::MemoryOptimizer), WholeBytes(m.optimizer));
    j.Field(Spell(K::MemoryActivations), WholeBytes(m.activations));
    j.Field(Spell(K::MemoryBuffers), WholeBytes(m.buffers));
  });
}

}  // namespace avf::emit

#include "trainers/trainer.h"

#include "trainers/megatron.h"
#include "trainers/torchtitan.h"

namespace avf::trainers {

auto PinnedVersion(check::TrainerKind kind) -> std::string_view {
  switch (kind) {
    case check::TrainerKind::Torchtitan: return kTorchtitanVersion;
    case check::TrainerKind::Megatron: return kMegatronVersion;
    case check::TrainerKind::Avf: break;
  }
  return "";
}

auto LimitOf(check::TrainerKind kind, const cost::Layout& l, const cost::Workload& w) -> std::optional<Limit> {
  switch (kind) {
    case check::TrainerKind::Torchtitan: return TorchtitanLimit(l, w);
    case check::TrainerKind::Megatron: return MegatronLimit(l, w);
    case check::TrainerKind::Avf: break;
  }
  return std::nullopt;
}

// torchtitan's FSDP2 policy reduces in fp32 (training.mixed_precision_reduce);
// Megatron-LM accumulates and reduces bf16 gradients in fp32 unless told
// --grad-reduce-in-bf16.
auto AsRunBy(check::TrainerKind kind, cost::Workload w) -> cost::Workload {
  bool sixteen_bit = w.precision != cost::Precision::Fp32;
  if (kind != check::TrainerKind::Avf && sixteen_bit) w.reduce_in_fp32 = true;
  return w;
}

// Without FSDP2, torchtitan's mixed precision is torch.autocast (DDP or one
// GPU); Megatron-LM's fused kernels keep the training precision, as avf-run.
auto AsRunBy(check::TrainerKind kind, cost::Workload w, const cost::Layout& l) -> cost::Workload {
  bool autocast = kind == check::TrainerKind::Torchtitan && w.precision != cost::Precision::Fp32 && l.zero == 0 &&
                  l.tensor == 1 && l.pipeline == 1;
  if (autocast) w.fp32_elementwise = true;
  return w;
}

namespace {

// What avf-run does around the training that the others' checkpoints and data
// cannot take part in.
auto SharedJobLimit(const check::JobSpec& job) -> std::optional<Limit> {
  if (!job.checkpoint.encrypt_secret.empty()) {
    return Limit{"encrypt", "encrypted checkpoints",
                 "it writes its checkpoints as plain files; only avf-run encrypts them at rest", ""};
  }
  if (job.validation) {
    return Limit{"validation", "held-out validation", "it is not translated: the trainer reads its own held-out data",
                 ""};
  }
  return std::nullopt;
}

auto MegatronJobLimit(const check::JobSpec& job) -> std::optional<Limit> {
  if (!job.optimizer.lr) {
    return Limit{"optimizer", "a job without a learning rate", "Megatron-LM has no default --lr",
                 "optimizer { lr = 3e-4 }"};
  }
  if (job.init) {
    return Limit{"init", "`init` weights in the Hugging Face layout",
                 "--pretrained-checkpoint reads a Megatron-LM checkpoint, not a transformers folder", ""};
  }
  if (job.checkpoint.enabled && job.checkpoint.keep) {
    return Limit{"keep", "`keep`", "Megatron-LM keeps every checkpoint it saves; it has no flag that deletes old ones",
                 ""};
  }
  return std::nullopt;
}

}  // namespace

auto JobLimit(const check::JobSpec& job) -> std::optional<Limit> {
  if (job.trainer.kind == check::TrainerKind::Avf) return std::nullopt;
  if (auto limit = SharedJobLimit(job)) return limit;
  return job.trainer.kind == check::TrainerKind::Megatron ? MegatronJobLimit(job) : std::nullopt;
}

}  // namespace avf::trainers

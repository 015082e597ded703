#include "plan/overheads.h"

#include <algorithm>
#include <cmath>

namespace avf::plan {

auto StagingBandwidth(const check::DatasetSpec& ds) -> double {
  double bandwidth = 0;
  for (const std::optional<double>& bw : {ds.source.read_bw, ds.stage_to ? ds.stage_to->write_bw : std::nullopt}) {
    if (bw) bandwidth = bandwidth > 0 ? std::min(bandwidth, *bw) : *bw;
  }
  return bandwidth;
}

auto CopierCount(const check::JobSpec& job, double bandwidth) -> int64_t {
  int64_t n = job.deploy.copiers.value_or(bandwidth > 0 ? static_cast<int64_t>(std::ceil(bandwidth / kCopierBandwidth))
                                                        : kCopiersWithoutBandwidth);
  if (!job.deploy.copiers) n = std::min(n, kMaxDerivedCopiers);
  return std::clamp<int64_t>(n, 1, std::max<int64_t>(job.dataset.shards, 1));
}

auto EstimateStaging(const check::JobSpec& job, int64_t nodes) -> std::optional<StagingTime> {
  const check::DatasetSpec& ds = job.dataset;
  if (!ds.stage_to) return std::nullopt;
  StagingTime s;
  s.bytes = static_cast<double>(ds.tokens) * ds.token_bytes + static_cast<double>(ds.shards * kShardHeaderBytes);
  double bandwidth = StagingBandwidth(ds);
  int64_t copiers = CopierCount(job, bandwidth);
  // Slurm runs the copies on the job's nodes, one at a time per node.
  if (job.target == check::Target::Slurm) copiers = std::min(copiers, std::max<int64_t>(nodes, 1));
  double sustained = static_cast<double>(copiers) * kCopierBandwidth;
  s.rate = bandwidth > 0 ? std::min(bandwidth, sustained) : sustained;
  s.seconds = s.bytes / s.rate;
  return s;
}

auto EstimateCheckpoints(const check::JobSpec& job, int64_t parameters, double training_seconds)
    -> std::optional<CheckpointTime> {
  const check::CheckpointSpec& ck = job.checkpoint;
  if (!ck.enabled || !ck.dir) return std::nullopt;
  CheckpointTime t;
  // fp32 parameters and the optimizer's fp32 moments (docs/checkpoints.md).
  double moments = job.workload.optimizer == cost::OptimizerKind::AdamW ? 8 : 4;
  t.bytes = static_cast<double>(parameters) * (4 + moments);
  auto steps = static_cast<double>(job.steps);
  if (ck.every_steps && *ck.every_steps > 0) t.count = static_cast<int64_t>(std::ceil(steps / *ck.every_steps));
  else if (ck.every_seconds && *ck.every_seconds > 0)
    t.count = static_cast<int64_t>(std::ceil(training_seconds / *ck.every_seconds));
  t.count = std::max<int64_t>(t.count, 1);  // the last step's checkpoint is always written
  t.write_bw = ck.dir->write_bw;
  t.async = ck.async;
  if (t.write_bw && *t.write_bw > 0) t.seconds = (t.async ? 1 : static_cast<double>(t.count)) * t.bytes / *t.write_bw;
  return t;
}

}  // namespace avf::plan

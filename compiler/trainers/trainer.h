// Trainers other than avf-run: the release of each that aviflowc translates
// plans for, the layouts it cannot express, and how it differs from avf-run
// in what the time model charges. A trainer that cannot run a layout as
// planned never gets it: `auto` skips it, and a job that fixes it is refused
// (E0731) with the nearest layout the trainer can run.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "check/job_spec.h"
#include "cost/shape.h"

namespace avf::trainers {

// What the trainer cannot express of a layout or job, and the nearest value
// it can.
struct Limit {
  std::string field;  // the job or parallel field at fault: "zero", "sequence_parallel", "model", ...
  std::string what;   // what the trainer cannot run, e.g. "ZeRO stage 2"
  std::string why;    // why, in the trainer's terms
  std::string fix;    // the nearest expressible value as source, e.g. "zero = 3"; "" when none
};

// The release aviflowc's translation is written and checked against.
auto PinnedVersion(check::TrainerKind kind) -> std::string_view;

// The first thing `kind` cannot express of layout `l` for workload `w`;
// nullopt when it can run it as planned (always for avf-run).
auto LimitOf(check::TrainerKind kind, const cost::Layout& l, const cost::Workload& w) -> std::optional<Limit>;

// The workload as the trainer runs it: the precision its defaults reduce
// gradients at (docs/calibration.md).
auto AsRunBy(check::TrainerKind kind, cost::Workload w) -> cost::Workload;

// The same for one layout: torchtitan trains a layout of plain data
// parallelism (DDP) or one GPU under autocast, which keeps the memory-bound
// kernels in fp32.
auto AsRunBy(check::TrainerKind kind, cost::Workload w, const cost::Layout& l) -> cost::Workload;

// What the trainer cannot do of the job whatever its layout (encrypted
// checkpoints, validation); nullopt for avf-run.
auto JobLimit(const check::JobSpec& job) -> std::optional<Limit>;

}  // namespace avf::trainers

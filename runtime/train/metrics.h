// What rank 0 reports each step: one JSON object per line in the metrics
// file (machine-readable, appended, flushed every step so a crash keeps what
// was trained), and a progress line for people: redrawn in place with a bar
// on a terminal, one plain line per report otherwise (logs, CI).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>

#include <llvm/Support/Error.h>

namespace avf::train {

struct StepMetrics {
  int64_t step = 0;  // 1-based: the step just completed
  int64_t total_steps = 0;
  double loss = 0;
  double lr = 0;
  double grad_norm = 0;
  double step_time_s = 0;
  double tokens_per_s = 0;
  double flops_per_s = 0;  // achieved model FLOP/s (6 x parameters x tokens / time, plus attention)
  // Seconds of the step spent waiting on communication, mean over the ranks
  // (parallel/engine.h CommSeconds).
  double tensor_comm_s = 0, pipeline_comm_s = 0, data_comm_s = 0;
  // Seconds the step's checkpoint held training: the whole write, or with
  // `async` the snapshot to host memory and any wait for the previous write.
  double checkpoint_s = 0;
  // The validation loss, on the steps that evaluate it (NaN: not this step).
  double val_loss = std::nan("");
  // The plan's predicted step time and its likely range (plan.json
  // predicted; the range is 0 in a version-2 plan), for comparing with step_time_s.
  double step_time_predicted_s = 0, step_time_predicted_low_s = 0, step_time_predicted_high_s = 0;
  int64_t nodes = 0;  // the nodes the step trained on (an elastic job's may change between starts)
};

// `{"step":1,"loss":...}`: keys in a fixed order, shortest round-trip doubles.
auto MetricsJson(const StepMetrics& m) -> std::string;

// "step 20/100  loss 3.1416  lr 3.00e-04  12,345 tok/s  1.23 GFLOP/s  ETA 1m40s".
auto ProgressText(const StepMetrics& m) -> std::string;
// "42s", "1m40s", "2h05m", "3d04h".
auto DurationText(double seconds) -> std::string;

class MetricsFile {
 public:
  // Opens `path` to append the steps after `step` (the step a run starts
  // from: 0, or the checkpoint it resumed from). Lines of later steps, which
  // a run that stopped after its last checkpoint wrote, are removed first
  // (and a torn last line), so that every step appears once; `dropped` gets
  // how many lines were.
  static auto Open(const std::string& path, int64_t step = 0, int64_t* dropped = nullptr)
      -> llvm::Expected<MetricsFile>;
  MetricsFile(MetricsFile&& other) noexcept : file_(other.file_), path_(std::move(other.path_)) {
    other.file_ = nullptr;
  }
  ~MetricsFile();
  auto Append(const StepMetrics& m) -> llvm::Error;

 private:
  MetricsFile(std::FILE* f, std::string path) : file_(f), path_(std::move(path)) {}
  std::FILE* file_;
  std::string path_;
};

}  // namespace avf::train

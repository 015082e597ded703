#include "train/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include <fmt/format.h>
#include <llvm/Support/FileSystem.h>

#include "checkpoint/store.h"
#include "data/batches.h"
#include "optim/optimizer.h"
#include "parallel/engine.h"
#include "plan/plan.h"
#include "train/async_checkpoints.h"
#include "train/checkpointing.h"
#include "train/exported_metrics.h"
#include "train/metrics.h"
#include "train/run_starts.h"
#include "train/validation.h"

namespace avf::train {

namespace {

using optim::AdamW;
using optim::LearningRate;
using optim::OptimizerConfig;
using optim::Schedule;
using runtime::RunPlan;
using Clock = std::chrono::steady_clock;

auto Fail(std::string message) -> llvm::Error {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s", message.c_str());
}

auto OptimizerOf(const RunPlan& p) -> OptimizerConfig {
  OptimizerConfig c;
  c.lr = p.optimizer.lr.value_or(3e-4);
  if (p.optimizer.betas) c.beta1 = (*p.optimizer.betas)[0], c.beta2 = (*p.optimizer.betas)[1];
  c.weight_decay = p.optimizer.weight_decay.value_or(0.0);
  c.warmup = p.optimizer.warmup;
  c.total_steps = p.training.steps;
  c.schedule = p.optimizer.schedule == runtime::LrSchedule::Linear     ? Schedule::Linear
               : p.optimizer.schedule == runtime::LrSchedule::Constant ? Schedule::Constant
                                                                       : Schedule::Cosine;
  return c;
}

struct Loop {
  const RunPlan& plan;
  const TrainOptions& options;
  llvm::raw_ostream& progress;
  std::optional<parallel::RankGroups> groups;
  std::unique_ptr<parallel::Engine> engine;
  std::unique_ptr<data::BatchLoader> loader;
  std::optional<MetricsFile> metrics;
  int64_t step = 0;
  Clock::time_point last_checkpoint = Clock::now();
  CheckpointContext checkpoints{};
  std::unique_ptr<AsyncCheckpoints> async{};
  std::unique_ptr<Validation> validation{};
  SavedState snapshot{};  // reused by every synchronous checkpoint

  parallel::Engine::CommSeconds comm{};
  parallel::Engine::OwnSeconds own{};
  std::unique_ptr<RankExporter> exporter{};

  auto OneStep(double& loss, double& norm, int& stop) -> llvm::Error;
  // The seconds training was held by writing this step's checkpoint; it is
  // committed by Seal, after the step's metrics line, so that a committed
  // step always has its line.
  auto Checkpoint(bool last) -> llvm::Expected<double>;
  auto Seal(bool last) -> llvm::Error;
  auto Commit(int64_t at) -> llvm::Error;
  auto Resume() -> llvm::Error;
  void Report(const StepMetrics& m);
  // Before the first step: this rank's start, counted in the run folder.
  auto StartExporting() -> llvm::Error;
  void Observe(const StepMetrics& m);
};

auto Loop::OneStep(double& loss, double& norm, int& stop) -> llvm::Error {
  std::vector<data::Batch> batches;
  if (llvm::Error e = loader->Load(step, plan.layout.micro_batch, batches)) return e;
  auto result = engine->Step(batches, options.stop_signal ? options.stop_signal->load() : 0);
  if (!result) return result.takeError();
  loss = result->loss, norm = result->grad_norm, stop = result->stop_signal, comm = result->comm, own = result->own;
  if (!std::isfinite(loss) || !std::isfinite(norm)) {
    return Fail(
        fmt::format("step {}: the loss or the gradient is not finite (loss {}, gradient norm {}); lower the "
                    "learning rate",
                    step + 1, loss, norm));
  }
  return llvm::Error::success();
}

auto Loop::Commit(int64_t at) -> llvm::Error {
  if (llvm::Error e = CommitCheckpoint(checkpoints, at)) return e;
  exporter->Committed(UnixNow());
  std::optional<int64_t> keep = plan.checkpoint ? plan.checkpoint->keep : std::nullopt;
  return keep ? checkpoint::Prune(options.checkpoint_dir, *keep) : llvm::Error::success();
}

auto Loop::Checkpoint(bool last) -> llvm::Expected<double> {
  Clock::time_point start = Clock::now();
  last_checkpoint = start;
  exporter->CheckpointStarted(UnixNow());
  if (async) return async->Start(step);
  if (llvm::Error e = SaveCheckpoint(checkpoints, *engine, step, snapshot)) return e;
  // Every rank's file is written before rank 0 commits the step.
  if (options.world) {
    if (llvm::Error e = options.world->Barrier()) return e;
  }
  return std::chrono::duration<double>(Clock::now() - start).count();
}

auto Loop::Seal(bool last) -> llvm::Error {
  if (async) return last ? async->Finish() : llvm::Error::success();
  return options.rank == 0 ? Commit(step) : llvm::Error::success();
}

auto Loop::Resume() -> llvm::Error {
  llvm::Expected<std::optional<int64_t>> resumed = ResumeLatest(checkpoints, *engine, progress);
  if (!resumed) return resumed.takeError();
  if (*resumed) step = **resumed;
  return llvm::Error::success();
}

auto Loop::StartExporting() -> llvm::Error {
  int64_t restarts = 0;
  if (!options.run_dir.empty()) {
    llvm::Expected<int64_t> before = RecordStart(options.run_dir, options.rank, step, UnixNow());
    if (!before) return before.takeError();
    restarts = *before;
  }
  // The resumed checkpoint's commit: when its COMMITTED file was written.
  double committed = 0;
  llvm::sys::fs::file_status status;
  std::string marker = checkpoint::StepDir(options.checkpoint_dir, step) + "/COMMITTED";
  if (step > 0 && !llvm::sys::fs::status(marker, status)) {
    committed = std::chrono::duration<double>(status.getLastModificationTime().time_since_epoch()).count();
  }
  exporter->Started(step, restarts, options.node_count_changes, committed);
  exporter->Publish();
  return llvm::Error::success();
}

void Loop::Observe(const StepMetrics& m) {
  const data::SequenceOrder& order = loader->order();
  exporter->Stepped(m, own, engine->Memory(), order.epoch(step), order.first_sequence(step));
  exporter->Publish();
}

void Loop::Report(const StepMetrics& m) {
  if (options.terminal) {
    int width = 20, done = static_cast<int>(width * m.step / std::max<int64_t>(1, m.total_steps));
    progress << "\r[" << std::string(done, '#') << std::string(width - done, '.') << "] " << ProgressText(m)
             << (m.step == m.total_steps ? "\n" : "");
  } else if (m.step == 1 || m.step == m.total_steps || m.step % std::max<int64_t>(1, m.total_steps / 100) == 0) {
    progress << ProgressText(m) << "\n";
  }
  progress.flush();
}

auto Due(const RunPlan& p, int64_t step, Clock::time_point last) -> bool {
  if (!p.checkpoint) return false;
  if (p.checkpoint->every_steps) return step % *p.checkpoint->every_steps == 0;
  if (p.checkpoint->every_seconds) {
    return std::chrono::duration<double>(Clock::now() - last).count() >= *p.checkpoint->every_seconds;
  }
  return false;
}

auto Run(Loop& loop, TrainResult& result) -> llvm::Error {
  const RunPlan& p = loop.plan;
  int64_t total = loop.options.max_steps > 0 ? std::min(loop.options.max_steps, p.training.steps) : p.training.steps;
  result.first_step = loop.step;
  double tokens_per_step = static_cast<double>(p.training.tokens_per_step);
  while (loop.step < total) {
    Clock::time_point start = Clock::now();
    double loss = 0, norm = 0;
    int stop = 0;
    if (llvm::Error e = loop.OneStep(loss, norm, stop)) return e;
    ++loop.step;
    double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    bool last = loop.step == total || stop != 0;
    result.checkpointed = false;
    double held = 0;
    if (loop.async) {
      if (llvm::Error e = loop.async->Poll()) return e;
    }
    if (!loop.options.checkpoint_dir.empty() && (Due(p, loop.step, loop.last_checkpoint) || last)) {
      llvm::Expected<double> checkpoint = loop.Checkpoint(last);
      if (!checkpoint) return checkpoint.takeError();
      held = *checkpoint;
      result.checkpointed = true;
    }
    double val_loss = std::nan("");
    if (loop.validation && (loop.step % p.validation->every == 0 || last)) {
      llvm::Expected<double> validated = loop.validation->Run(*loop.engine);
      if (!validated) return validated.takeError();
      val_loss = *validated;
    }
    StepMetrics m{loop.step,
                  total,
                  loss,
                  LearningRate(loop.engine->optimizer().config(), loop.step - 1),
                  norm,
                  seconds,
                  tokens_per_step / seconds,
                  p.model.flops_per_token * tokens_per_step / seconds,
                  loop.comm.tensor,
                  loop.comm.pipeline,
                  loop.comm.data,
                  held,
                  val_loss,
                  p.predicted.step_time_s,
                  p.predicted.step_time_low_s,
                  p.predicted.step_time_high_s,
                  p.hardware.nodes};
    if (loop.metrics) {
      if (llvm::Error e = loop.metrics->Append(m)) return e;
    }
    loop.Observe(m);
    if (result.checkpointed) {
      if (llvm::Error e = loop.Seal(last)) return e;
    }
    if (loop.options.rank == 0) loop.Report(m);
    if (result.first_loss == 0) result.first_loss = loss;
    result.last_loss = loss;
    if (stop != 0 && loop.step < total) {
      result.stopped = true;
      result.stop_signal = stop;
      break;
    }
  }
  result.last_step = loop.step;
  return llvm::Error::success();
}

}  // namespace

auto Train(const parallel::RunnablePlan& runnable, const TrainOptions& options, llvm::raw_ostream& progress)
    -> llvm::Expected<TrainResult> {
  const RunPlan& plan = *runnable;
  data::DatasetLayout layout{
      options.data_dir, plan.data.shards, static_cast<uint32_t>(plan.data.token_bytes), plan.model.vocab, {}};
  auto reader = data::TokenReader::Open(layout);
  if (!reader) return reader.takeError();
  auto order = data::SequenceOrder::Make((*reader)->tokens(), plan.model.seq_len, plan.training.global_batch);
  if (!order) return order.takeError();
  const runtime::DataSlice& slice = plan.data.slices[static_cast<size_t>(plan.ranks[options.rank].data)];
  Loop loop{plan, options, progress, std::nullopt, nullptr, nullptr, std::nullopt};
  if (options.world) {
    auto groups = parallel::BuildGroups(*options.world, runnable.valid());
    if (!groups) return groups.takeError();
    loop.groups.emplace(std::move(*groups));
  }
  loop.engine = parallel::Engine::Create({&runnable, options.rank, options.world, loop.groups ? &*loop.groups : nullptr,
                                          OptimizerOf(plan), options.seed, options.backends});
  int64_t dataset_tokens = (*reader)->tokens();
  if (plan.validation) {
    if (options.validation_dir.empty()) {
      return Fail(
          fmt::format("the job validates on dataset `{}` every {} steps: give the folder of its shards "
                      "(--validation-dir)",
                      plan.validation->name, plan.validation->every));
    }
    auto validation = Validation::Open(plan, options.validation_dir, {slice.first_sequence, slice.sequences_per_step});
    if (!validation) return validation.takeError();
    loop.validation = std::move(*validation);
  }
  loop.loader = std::make_unique<data::BatchLoader>(std::move(*reader), *order,
                                                    data::BatchShare{slice.first_sequence, slice.sequences_per_step});
  loop.checkpoints = {&plan,
                      options.rank,
                      options.world ? options.world->size() : 1,
                      options.checkpoint_dir,
                      options.plan_sha256,
                      options.seed,
                      &loop.loader->order(),
                      dataset_tokens,
                      options.checkpoint_key};
  if (plan.checkpoint && plan.checkpoint->async && !options.checkpoint_dir.empty()) {
    loop.async = std::make_unique<AsyncCheckpoints>(loop.checkpoints, *loop.engine,
                                                    [&loop](int64_t at) { return loop.Commit(at); });
  }
  if (options.resume && !options.checkpoint_dir.empty()) {
    if (llvm::Error e = loop.Resume()) return e;
  }
  if (loop.step == 0 && !options.init_dir.empty()) {
    if (llvm::Error e = InitFromPretrained(loop.checkpoints, *loop.engine, options.init_dir, progress)) return e;
  }
  if (!options.metrics_path.empty() && options.rank == 0) {
    int64_t dropped = 0;
    auto metrics = MetricsFile::Open(options.metrics_path, loop.step, &dropped);
    if (!metrics) return metrics.takeError();
    if (dropped > 0) {
      progress << fmt::format(
          "avf-run: note: {}: removed {} lines of steps after {}, which the run that wrote them "
          "did not checkpoint\n",
          options.metrics_path, dropped, loop.step);
    }
    loop.metrics.emplace(std::move(*metrics));
  }
  loop.exporter = std::make_unique<RankExporter>(plan, options.rank, options.metrics_server);
  if (llvm::Error e = loop.StartExporting()) return e;
  TrainResult result;
  if (llvm::Error e = Run(loop, result)) return e;
  result.stage = loop.engine->stage();
  result.memory = loop.engine->Memory();
  result.totals = loop.exporter->totals();
  return result;
}

}  // namespace avf::train

// avf-run: executes one rank of a plan.json (docs/deploy.md, "avf-run"), and
// `avf-run tokenize`, which makes token shards from text so that a local run
// needs no download, `avf-run check-plan FILE`, which checks a plan, and
// `avf-run preflight`, which checks a job's nodes (run/preflight.h). Exit
// status: 0 success, 1 an error in the plan, the data or a checkpoint, or a
// failed preflight check, 2 a usage error.
#include <unistd.h>

#include <atomic>
#include <charconv>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstring>
#include <functional>

#include <fmt/format.h>
#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/raw_ostream.h>
#include <CLI/CLI.hpp>

#include "cpu/gemm.h"
#include "data/shard_format.h"
#include "data/shard_writer.h"
#include "data/tokenizer.h"
#include "exposition/metrics_server.h"
#include "parallel/schedule.h"
#include "plan/check_plan.h"
#include "plan/elastic_plan.h"
#include "plan/identity.h"
#include "plan/plan.h"
#include "plan/sizes.h"
#include "plan_format/folder_lock.h"
#include "plan_format/launch.h"
#include "run/checkpoint_command.h"
#include "run/compute_device.h"
#include "run/elastic_launcher.h"
#include "run/launcher.h"
#include "run/memory_report.h"
#include "run/preflight.h"
#include "run/preflight_device.h"
#include "run/run_report.h"
#include "run/stop_signals.h"
#include "run/world.h"
#include "train/trainer.h"

namespace {

struct RunFlags {
  std::string plan, data_dir, checkpoint_dir, checkpoint_key_file, init, validation_dir, resume = "latest",
                                                                                         run_dir = ".", metrics;
  int64_t max_steps = 0;
  uint64_t seed = 1234;
  // Seconds the ranks wait for each other at start (ranks may start minutes
  // apart on a cluster), and a collective waits for a silent peer.
  double join_timeout_s = 300, peer_timeout_s = 60;
  // An elastic start's wait for more launchers once the fewest are there.
  double elastic_last_call_s = 30;
  avf::runtime::IdentityFlags identity;
  std::string device = "auto";  // gpu, cpu or auto (run/compute_device.h)
  bool print_schedule = false;
  // The preflight's checks before training, at every start (run/preflight.h).
  bool preflight = false;
  std::string preflight_device;  // gpu or cpu; "" for this build's (as `preflight --device`)
  std::optional<double> min_bus_gbps;
  // Prometheus metrics (docs/operations.md): local rank i serves on
  // metrics_port + i; 0 serves none.
  int metrics_port = 0;
  std::string metrics_address = "127.0.0.1";
};

struct PreflightFlags {
  std::string plan, device;
  avf::runtime::IdentityFlags identity;
  double join_timeout_s = 300, peer_timeout_s = 60;
  std::optional<uint64_t> bytes;
  int64_t iterations = 20, warmup = 5;
  std::optional<double> min_bus_gbps, min_node_bus_gbps;
};

struct TokenizeFlags {
  std::vector<std::string> inputs;
  std::string out_dir;
  int64_t shards = 1;
  uint32_t vocab = 512;
  std::string format = "tokens_u16";
};

auto Report(llvm::Error e) -> int {
  llvm::errs() << "avf-run: error: " << llvm::toString(std::move(e)) << "\n";
  return 1;
}

auto ReadInputs(const std::vector<std::string>& paths, std::string& text) -> llvm::Error {
  for (const std::string& p : paths) {
    auto buffer = llvm::MemoryBuffer::getFile(p, /*IsText=*/false, /*RequiresNullTerminator=*/false);
    if (!buffer)
      return llvm::createStringError(buffer.getError(), "%s: cannot read: %s", p.c_str(),
                                     buffer.getError().message().c_str());
    text += (*buffer)->getBuffer().str();
  }
  return llvm::Error::success();
}

auto Tokenize(const TokenizeFlags& f) -> int {
  std::string text;
  if (llvm::Error e = ReadInputs(f.inputs, text)) return Report(std::move(e));
  uint32_t width = f.format == "tokens_u32" ? 4 : 2;
  if (width == 2 && f.vocab > 65536)
    return Report(llvm::createStringError(llvm::inconvertibleErrorCode(),
                                          "a vocabulary of %u does not fit tokens_u16; use --format tokens_u32",
                                          f.vocab));
  avf::data::Tokenizer tok = avf::data::Tokenizer::Train(text, f.vocab);
  std::vector<uint32_t> ids = tok.Encode(text);
  auto n = static_cast<int64_t>(ids.size());
  if (n < f.shards)
    return Report(llvm::createStringError(llvm::inconvertibleErrorCode(), "%lld tokens cannot fill %lld shards",
                                          static_cast<long long>(n), static_cast<long long>(f.shards)));
  if (std::error_code ec = llvm::sys::fs::create_directories(f.out_dir))
    return Report(llvm::createStringError(ec, "%s: %s", f.out_dir.c_str(), ec.message().c_str()));
  int64_t per = n / f.shards;
  for (int64_t s = 0; s < f.shards; ++s) {
    int64_t first = s * per, count = s == f.shards - 1 ? n - first : per;
    std::vector<uint32_t> shard(ids.begin() + first, ids.begin() + first + count);
    if (llvm::Error e = avf::data::WriteShard(f.out_dir + "/" + avf::data::ShardFileName(s), width, shard))
      return Report(std::move(e));
  }
  std::error_code ec;
  llvm::raw_fd_ostream json(f.out_dir + "/tokenizer.json", ec);
  if (ec) return Report(llvm::createStringError(ec, "%s/tokenizer.json: %s", f.out_dir.c_str(), ec.message().c_str()));
  json << tok.ToJson();
  llvm::outs() << fmt::format(
      "wrote {} tokens in {} shards to {} (vocabulary {}); the dataset is\n"
      "  tokens = {}; shards = {}; format = {}\n",
      n, f.shards, f.out_dir, tok.vocab_size(), n, f.shards, f.format);
  return 0;
}

// Set by the first SIGTERM or SIGINT (run/stop_signals.h).
std::atomic<int> stop_signal{0};

// What rank 0 prints at the end, and the exit status.
auto Finish(const avf::runtime::RunPlan& plan, const avf::train::TrainResult& r, int64_t rank) -> int {
  // Every rank stops on the signal the ranks agreed on, whichever got it.
  int status = r.stopped ? 128 + r.stop_signal : 0;
  if (rank != 0) return status;
  if (r.stopped) {
    llvm::outs() << fmt::format("stopped on signal {} ({}) after step {}{}\n", r.stop_signal, strsignal(r.stop_signal),
                                r.last_step,
                                r.checkpointed ? "; its checkpoint is committed, `--resume latest` continues from it"
                                               : " without a checkpoint (no checkpoint directory)");
    return status;
  }
  if (r.first_step >= r.last_step) {
    llvm::outs() << fmt::format("job `{}` is trained already: its newest checkpoint is at step {}\n", plan.job.name,
                                r.last_step);
    return 0;
  }
  llvm::outs() << fmt::format("trained steps {}..{} of job `{}`: loss {:.4f} -> {:.4f}\n", r.first_step + 1,
                              r.last_step, plan.job.name, r.first_loss, r.last_loss);
  return 0;
}

// check-plan FILE: the plan read and checked strictly (unknown keys and the
// predicted totals too); exit 1 when it is refused. With --tables, the rank,
// group and slice tables as JSON on standard output instead of the summary.
auto CheckPlan(const std::string& path, bool tables) -> int {
  auto valid = avf::runtime::CheckPlanFile(path);
  if (!valid) return Report(valid.takeError());
  const avf::runtime::RunPlan& plan = **valid;
  if (tables) {
    avf::runtime::PrintTables(plan, llvm::outs());
    return 0;
  }
  size_t ranks = plan.ranks.size();
  llvm::outs() << fmt::format("{}: valid aviflow plan version {}: job {}, {} rank{}\n", path == "-" ? "<stdin>" : path,
                              plan.version, plan.job.name, ranks, ranks == 1 ? "" : "s");
  return 0;
}

// --print-schedule: every pipeline stage's ops; joins no rendezvous, reads no data.
auto PrintSchedule(const std::string& path) -> int {
  auto plan = avf::runtime::ReadPlanFile(path);
  if (!plan) return Report(plan.takeError());
  if (llvm::Error e = avf::parallel::PrintSchedule(*plan, llvm::outs(), path)) return Report(std::move(e));
  return 0;
}

auto CreateFolder(const std::string& dir) -> llvm::Error {
  if (std::error_code ec = llvm::sys::fs::create_directories(dir)) {
    return llvm::createStringError(ec, "%s: %s", dir.c_str(), ec.message().c_str());
  }
  return llvm::Error::success();
}

// The run folder and the checkpoint folder, locked for this job (rank 0's
// process or node 0's launcher, whose ranks inherit the locks).
auto LockFolders(const RunFlags& f) -> llvm::Error {
  for (auto [dir, flag] : {std::pair{&f.run_dir, "--run-dir"}, std::pair{&f.checkpoint_dir, "--checkpoint-dir"}}) {
    if (dir->empty()) continue;
    std::string problem = avf::plan_format::LockProblem(*dir, avf::plan_format::LockFolder(*dir), flag);
    if (!problem.empty()) return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s", problem.c_str());
  }
  return llvm::Error::success();
}

// `--preflight`: the preflight's checks on the store the run joined, with
// its defaults for this build; a failed check ends the run before training.
auto PreflightBeforeTraining(const RunFlags& f, const avf::runtime::RunPlan& plan, const avf::runtime::RankIdentity& id,
                             avf::run::World& world) -> int {
  namespace pre = avf::run::preflight;
  bool gpu = f.preflight_device.empty() ? pre::GpuBuild() : f.preflight_device == "gpu";
  if (gpu && !pre::GpuBuild()) {
    llvm::errs() << "avf-run: error: --preflight-device gpu: this avf-run was built without CUDA and NCCL\n";
    return 2;
  }
  pre::Options o{.bytes = gpu ? pre::kGpuBytes : pre::kCpuBytes,
                 .limits = {.min_bus_gbps = f.min_bus_gbps},
                 .gpu = gpu,
                 .join_timeout_s = f.join_timeout_s,
                 .peer_timeout_s = f.peer_timeout_s};
  return pre::RunRank(plan, id, world, o);
}

// How a training run or a preflight starts on this machine: the plan read,
// then either this node's launcher, which starts a rank per GPU and is done
// when they are (`exit_status`), or the identity of this rank.
struct Start {
  std::optional<int> exit_status;
  std::optional<avf::runtime::PlanFile> file;
  std::optional<avf::runtime::RankIdentity> identity;
};

// An elastic plan started on another node count (PET_NNODES) trains with
// that count's layout (plan.json `elastic`); a count it has no layout for
// is refused, naming those it has. Any other value is ResolveNode's to judge.
auto ChooseNodeCount(avf::runtime::PlanFile& file, const avf::runtime::Environment& env, bool log) -> llvm::Error {
  auto given = env.find(avf::plan_format::kEnvNodes);
  if (given == env.end()) return llvm::Error::success();
  int64_t nodes = 0;
  if (!llvm::to_integer(given->second, nodes, 10) || nodes < 1) return llvm::Error::success();
  if (nodes == file.plan->hardware.nodes || !file.plan->elastic) return llvm::Error::success();
  auto at = avf::runtime::AtNodeCount(file.plan, nodes);
  if (!at) return at.takeError();
  file.plan = std::move(*at);
  const avf::runtime::PlanLayout& l = file.plan->layout;
  if (log) {
    llvm::outs() << fmt::format(
        "avf-run: elastic job `{}` on {} of its nodes ({}={}): tensor {}, pipeline {}, data {}, micro-batch {}\n",
        file.plan->job.name, nodes, avf::plan_format::kEnvNodes, given->second, l.tensor, l.pipeline, l.data,
        l.micro_batch);
  }
  return llvm::Error::success();
}

// `before_launch(node_rank)` runs in a launcher before it starts its ranks.
// `elastic`: how a launcher of an elastic start (PET_NNODES=MIN:MAX) waits
// for the others; null where there is none (the preflight).
auto StartRank(const std::string& plan_path, const avf::runtime::IdentityFlags& flags,
               const std::vector<std::string>& args, const std::function<llvm::Error(int64_t node_rank)>& before_launch,
               const avf::run::ElasticTimeouts* elastic) -> Start {
  auto file = avf::runtime::ReadPlanFileWithSha256(plan_path);
  if (!file) return {.exit_status = Report(file.takeError())};
  avf::runtime::Environment env = avf::runtime::ProcessEnvironment();
  bool launcher = !avf::run::LocalRankGiven(flags, env);
  if (launcher) {
    auto elastic_node = avf::run::ReadElasticNode();
    if (!elastic_node) return {.exit_status = Report(elastic_node.takeError())};
    if (*elastic_node && !elastic) {
      return {.exit_status = Report(llvm::createStringError(
                  llvm::inconvertibleErrorCode(), "%s",
                  fmt::format("{} is MIN:MAX, an elastic start; this command runs on one node count: set {} to it",
                              avf::plan_format::kEnvNodes, avf::plan_format::kEnvNodes)
                      .c_str()))};
    }
    if (*elastic_node) {
      if ((*elastic_node)->slot == 0) {
        if (llvm::Error e = before_launch(0)) return {.exit_status = Report(std::move(e))};
      }
      return {.exit_status = avf::run::LaunchElastic(args, *file, flags, **elastic_node, *elastic)};
    }
  }
  if (llvm::Error e = ChooseNodeCount(*file, env, launcher)) return {.exit_status = Report(std::move(e))};
  if (launcher) {
    auto node = avf::runtime::ResolveNode(flags, env, *file->plan);
    if (!node) return {.exit_status = Report(node.takeError())};
    if (node->nproc_per_node > 1) {
      if (llvm::Error e = before_launch(node->node_rank)) return {.exit_status = Report(std::move(e))};
      return {.exit_status = avf::run::LaunchNode(args, *node)};
    }
  }
  avf::run::ApplyThreadDefaults(args);
  auto identity = avf::runtime::ResolveIdentity(flags, env, *file->plan);
  if (!identity) return {.exit_status = Report(identity.takeError())};
  return {.file = std::move(*file), .identity = *identity};
}

// This rank's metrics endpoint, before it joins the others: a taken port
// ends the run at once, named.
auto StartMetrics(const RunFlags& f, const avf::runtime::RankIdentity& id)
    -> llvm::Expected<std::unique_ptr<avf::exposition::MetricsServer>> {
  if (f.metrics_port == 0) return nullptr;
  int port = f.metrics_port + static_cast<int>(id.local_rank);
  auto server = avf::exposition::MetricsServer::Start(f.metrics_address, port);
  if (!server) return server.takeError();
  llvm::outs() << fmt::format("avf-run: rank {} serves metrics at {}\n", id.rank, (*server)->endpoint());
  return server;
}

auto Run(const RunFlags& f, const std::vector<std::string>& args) -> int {
  // Node 0's launcher locks the job's folders for its ranks (rank 0 among them).
  avf::run::ElasticTimeouts elastic{.join_s = f.join_timeout_s, .last_call_s = f.elastic_last_call_s};
  Start start = StartRank(
      f.plan, f.identity, args,
      [&](int64_t node_rank) { return node_rank == 0 ? LockFolders(f) : llvm::Error::success(); }, &elastic);
  if (start.exit_status) return *start.exit_status;
  avf::run::TakeStopSignalsOnOwnThread();
  const avf::runtime::PlanFile* file = &*start.file;
  const avf::runtime::RunPlan& plan = *file->plan;
  const avf::runtime::RankIdentity* identity = &*start.identity;
  if (f.data_dir.empty()) {
    return Report(llvm::createStringError(llvm::inconvertibleErrorCode(),
                                          "--data-dir is required: the folder that holds dataset `%s`'s shard files",
                                          plan.data.name.c_str()));
  }
  if (llvm::Error e = identity->rank == 0 ? LockFolders(f) : CreateFolder(f.run_dir)) {
    return Report(std::move(e));
  }
  auto metrics_server = StartMetrics(f, *identity);
  if (!metrics_server) return Report(metrics_server.takeError());
  avf::train::TrainOptions o;
  o.metrics_server = metrics_server->get();
  o.run_dir = f.run_dir;
  o.data_dir = f.data_dir;
  o.checkpoint_dir = f.checkpoint_dir;
  std::optional<avf::crypto::Key> key;
  if (plan.checkpoint && plan.checkpoint->encrypt_secret && f.checkpoint_key_file.empty() &&
      !f.checkpoint_dir.empty()) {
    return Report(llvm::createStringError(
        llvm::inconvertibleErrorCode(), "%s",
        fmt::format("job `{}` encrypts its checkpoints (secret `{}`): give the key's file (--checkpoint-key-file)",
                    plan.job.name, *plan.checkpoint->encrypt_secret)
            .c_str()));
  }
  if (!f.checkpoint_key_file.empty()) {
    auto read = avf::crypto::ReadKeyFile(f.checkpoint_key_file);
    if (!read) return Report(read.takeError());
    key.emplace(std::move(*read));
    o.checkpoint_key = &*key;
  }
  o.plan_sha256 = file->sha256;
  o.resume = f.resume == "latest";
  o.init_dir = f.init;
  o.validation_dir = f.validation_dir;
  o.metrics_path = f.metrics.empty() ? f.run_dir + "/metrics.jsonl" : f.metrics;
  o.seed = f.seed;
  o.max_steps = f.max_steps;
  o.terminal = isatty(STDOUT_FILENO) != 0;
  o.rank = static_cast<int>(identity->rank);
  if (const char* changes = std::getenv(avf::plan_format::kEnvNodeCountChanges)) {
    llvm::to_integer(changes, o.node_count_changes, 10);
  }
  auto device = avf::run::ChooseDevice(f.device, {.local_rank = identity->local_rank,
                                                  .ranks_per_node = plan.hardware.ranks_per_node,
                                                  .head_dim = plan.model.hidden / plan.model.heads});
  if (!device) return Report(device.takeError());
  if (!device->gpu) {
    if (llvm::Error e = avf::runtime::CheckHostMemory(plan, identity->rank, avf::runtime::HostMemoryBytes())) {
      return Report(std::move(e));
    }
  }
  o.backends = device->backends;
  auto runnable = avf::parallel::CheckRunnable(file->plan, static_cast<int>(identity->world_size));
  if (!runnable) return Report(runnable.takeError());
  if (identity->rank == 0) {
    llvm::outs() << fmt::format("avf-run: training in {} on {}; GEMMs: {}\n",
                                avf::runtime::Name(plan.training.precision).str(), device->name,
                                device->gpu ? "cuBLASLt" : avf::cpu::GemmPath());
  }
  avf::run::World world;
  if (identity->world_size > 1) {
    auto joined = avf::run::JoinStore(*identity, f.join_timeout_s, file->sha256);
    if (!joined) return Report(joined.takeError());
    world = std::move(*joined);
  }
  if (f.preflight) {
    if (int status = PreflightBeforeTraining(f, plan, *identity, world); status != 0) return status;
  }
  // GPU ranks talk over NCCL, CPU ranks over the TCP mesh.
  std::unique_ptr<avf::comm::Communicator> nccl;
  if (identity->world_size > 1) {
    avf::comm::TcpOptions options = avf::run::MeshOptions(world, *identity, f.join_timeout_s, f.peer_timeout_s);
    if (device->gpu) {
      options.id = "train";  // the preflight's NCCL world, in the same store, is "world"
      auto gpu_world = avf::run::GpuWorld(options, static_cast<int>(identity->local_rank));
      if (!gpu_world) return Report(gpu_world.takeError());
      nccl = std::move(*gpu_world);
      o.world = nccl.get();
    } else {
      auto mesh = avf::comm::TcpCommunicator::Create(options);
      if (!mesh) return Report(mesh.takeError());
      world.comm = std::move(*mesh);
      o.world = world.comm.get();
    }
  }
  o.stop_signal = &stop_signal;
  avf::run::ArmStopSignals(&stop_signal);
  auto result = avf::train::Train(*runnable, o, llvm::outs());
  if (!result) return Report(result.takeError());
  if (llvm::Error e = avf::run::WriteMemoryReport(f.run_dir, identity->rank, plan, *result))
    return Report(std::move(e));
  if (identity->rank == 0 && result->last_step > result->first_step) {
    avf::run::PrintMemory(llvm::outs(), 0, plan, *result);
    avf::run::PrintMeasuredAgainstPredicted(llvm::outs(), plan, *result);
  }
  return Finish(plan, *result, identity->rank);
}

// preflight: started like a training run (the same launcher, identity and
// store); only what each rank does once it joined differs.
auto Preflight(const PreflightFlags& f, const std::vector<std::string>& args) -> int {
  namespace pre = avf::run::preflight;
  if (f.device == "gpu" && !pre::GpuBuild()) {
    llvm::errs() << "avf-run: error: --device gpu: this avf-run was built without CUDA and NCCL; it checks CPUs "
                    "only (--device cpu)\n";
    return 2;
  }
  Start start = StartRank(
      f.plan, f.identity, args, [](int64_t) { return llvm::Error::success(); }, nullptr);
  if (start.exit_status) return *start.exit_status;
  const avf::runtime::PlanFile* file = &*start.file;
  const avf::runtime::RunPlan& plan = *file->plan;
  const avf::runtime::RankIdentity* identity = &*start.identity;
  avf::run::World world;
  if (identity->world_size > 1) {
    auto joined = avf::run::JoinStore(*identity, f.join_timeout_s, file->sha256);
    if (!joined) return Report(joined.takeError());
    world = std::move(*joined);
  }
  bool gpu = f.device == "gpu";
  pre::Options o{.bytes = f.bytes.value_or(gpu ? pre::kGpuBytes : pre::kCpuBytes),
                 .iterations = f.iterations,
                 .warmup = f.warmup,
                 .limits = {.min_bus_gbps = f.min_bus_gbps, .min_node_bus_gbps = f.min_node_bus_gbps},
                 .gpu = gpu,
                 .join_timeout_s = f.join_timeout_s,
                 .peer_timeout_s = f.peer_timeout_s};
  return pre::RunRank(plan, *identity, world, o);
}

// Seconds and seeds are checked by the launch contract, the same in aviflowc
// run and avf-run (CLI::Range lets `nan` through; CLI11 turns `-5` into 2^64 - 5).
auto Seconds() -> CLI::Validator {
  return CLI::Validator([](std::string& text) { return avf::plan_format::SecondsProblem(text); }, "SECONDS");
}

auto Seed() -> CLI::Validator {
  return CLI::Validator([](std::string& text) { return avf::plan_format::SeedProblem(text); }, "N");
}

// A bandwidth: a finite number above 0.
auto Gbps() -> CLI::Validator {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        char* end = nullptr;
        double v = std::strtod(text.c_str(), &end);
        bool ok = !text.empty() && *end == '\0' && std::isfinite(v) && v > 0;
        return ok ? "" : "a bandwidth in GB/s is a number above 0, not `" + text + "`";
      },
      "GB/S");
}

// The all-reduce's bytes per rank, after CLI::AsSizeValue read a suffix:
// whole fp32 elements, at most 64 GiB.
auto AllReduceBytes() -> CLI::Validator {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        uint64_t v = 0;
        auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
        bool ok = ec == std::errc() && end == text.data() + text.size() && v >= 4 && v % 4 == 0 && v <= (1ull << 36);
        return ok ? "" : "a multiple of 4 (fp32 elements) from 4 to 64 GiB, not " + text;
      },
      "BYTES");
}

void AddIdentityFlags(CLI::App& app, avf::runtime::IdentityFlags& id) {
  app.add_option("--rank", id.rank, "Global rank (overrides RANK)");
  app.add_option("--world-size", id.world_size, "Ranks in all (overrides WORLD_SIZE)");
  app.add_option("--local-rank", id.local_rank, "Rank on this node (overrides LOCAL_RANK)");
  app.add_option("--node-rank", id.node_rank, "This node's index (overrides PET_NODE_RANK)");
  app.add_option("--nproc-per-node", id.nproc_per_node, "Ranks per node (overrides PET_NPROC_PER_NODE)");
  app.add_option("--master-addr", id.master_addr, "Address of rank 0's store (overrides MASTER_ADDR)");
  app.add_option("--master-port", id.master_port, "Port of rank 0's store (overrides MASTER_PORT)");
}

auto AddPreflight(CLI::App& app, PreflightFlags& f) -> CLI::App* {
  namespace pre = avf::run::preflight;
  CLI::App* sub = app.add_subcommand(
      "preflight",
      "Check a job's nodes before it trains: each rank's device, each node's InfiniBand ports, then the "
      "all-reduce bandwidth within each node and over the job; started like a training run (one avf-run per node). "
      "Exit 0 when every check passed, 1 when one failed (the problems name the node), 2 on a usage error");
  sub->add_option("--plan", f.plan, "The job's plan.json")->type_name("FILE")->required();
  f.device = pre::GpuBuild() ? "gpu" : "cpu";
  sub->add_option("--device", f.device,
                  pre::GpuBuild() ? "gpu (default: each rank's GPU, NCCL) or cpu (the host, TCP)"
                                  : "cpu (default; this avf-run was built without CUDA and NCCL)")
      ->check(CLI::IsMember({"gpu", "cpu"}));
  sub->add_option("--bytes", f.bytes,
                  fmt::format("Bytes each rank all-reduces (suffixes K, M, G: KiB, MiB, GiB; default {} on GPUs, {} "
                              "on CPUs)",
                              pre::FormatBytes(pre::kGpuBytes), pre::FormatBytes(pre::kCpuBytes)))
      ->transform(CLI::AsSizeValue(false))
      ->check(AllReduceBytes());
  sub->add_option("--iters", f.iterations, "Timed all-reduces (default 20)")->check(CLI::Range(1, 100000));
  sub->add_option("--warmup", f.warmup, "Untimed all-reduces before them (default 5)")->check(CLI::Range(0, 100000));
  sub->add_option("--min-bus-gbps", f.min_bus_gbps,
                  "Fail when the world all-reduce's bus bandwidth is below this many GB/s")
      ->check(Gbps());
  sub->add_option("--min-node-bus-gbps", f.min_node_bus_gbps,
                  "Fail a node whose all-reduce among its own ranks has a lower bus bandwidth (GB/s)")
      ->check(Gbps());
  sub->add_option("--join-timeout", f.join_timeout_s, "Seconds to wait for every rank to join (default 300)")
      ->check(Seconds());
  sub->add_option("--peer-timeout", f.peer_timeout_s, "Seconds a collective waits for a silent peer (default 60)")
      ->check(Seconds());
  AddIdentityFlags(*sub, f.identity);
  return sub;
}

}  // namespace

auto main(int argc, char** argv) -> int {
  avf::run::FollowSupervisor();
  CLI::App app("avf-run executes one rank of an aviflow plan (plan.json) on this machine.", "avf-run");
  RunFlags run;
  TokenizeFlags tok;
  app.add_option("--plan", run.plan, "The plan.json to execute")->type_name("FILE");
  app.add_option("--data-dir", run.data_dir, "Folder of the dataset's shard files")->type_name("DIR");
  app.add_option("--checkpoint-dir", run.checkpoint_dir, "Where checkpoints are written and resumed from")
      ->type_name("DIR");
  app.add_option("--checkpoint-key-file", run.checkpoint_key_file,
                 "Encrypt the checkpoints' data files with this key (AES-256-GCM): 32 raw bytes or 64 hex digits, as "
                 "`openssl rand -hex 32` writes it; resuming needs the same key")
      ->type_name("FILE");
  app.add_option("--init", run.init,
                 "Start from these pretrained weights unless a checkpoint is resumed: a folder of config.json and "
                 "model.safetensors in the transformers layout (`avf-run checkpoint export` writes one)")
      ->type_name("DIR");
  app.add_option("--validation-dir", run.validation_dir, "Folder of the shard files of the plan's validation dataset")
      ->type_name("DIR");
  app.add_option("--resume", run.resume, "latest (default): resume from the newest committed checkpoint; never")
      ->check(CLI::IsMember({"latest", "never"}));
  app.add_option("--run-dir", run.run_dir, "Folder for metrics.jsonl (default: .)")->type_name("DIR");
  app.add_option("--metrics", run.metrics, "The metrics file (default: RUN_DIR/metrics.jsonl)")->type_name("FILE");
  app.add_option("--metrics-port", run.metrics_port,
                 "Serve Prometheus metrics at http://ADDRESS:PORT+LOCAL_RANK/metrics (default 0: none)")
      ->type_name("PORT")
      ->check(CLI::Range(0, 65535));
  app.add_option("--metrics-address", run.metrics_address,
                 "The IPv4 address the metrics are served on: the pod's (default 127.0.0.1)")
      ->type_name("ADDRESS");
  app.add_option("--max-steps", run.max_steps, "Stop after N steps (default: the plan's)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--seed", run.seed, "Seed of the parameter initialisation (default 1234)")->check(Seed());
  app.add_option("--join-timeout", run.join_timeout_s, "Seconds to wait for every rank to join (default 300)")
      ->check(Seconds());
  app.add_option("--peer-timeout", run.peer_timeout_s, "Seconds a collective waits for a silent peer (default 60)")
      ->check(Seconds());
  app.add_option("--elastic-last-call", run.elastic_last_call_s,
                 "An elastic start: seconds a round waits for more node launchers once the fewest have joined "
                 "(default 30)")
      ->check(Seconds());
  AddIdentityFlags(app, run.identity);
  app.add_option("--device", run.device,
                 avf::run::CudaBackendBuilt()
                     ? "gpu (each rank on its local rank's GPU), cpu, or auto (default: gpu where the GPU can run "
                       "this avf-run's kernels, else cpu)"
                     : "cpu or auto (default; this avf-run has no CUDA backend: the CPU)")
      ->check(CLI::IsMember({"gpu", "cpu", "auto"}));
  app.add_flag("--print-schedule", run.print_schedule, "Print every pipeline stage's schedule of the plan and exit");
  app.add_flag("--preflight", run.preflight,
               "Check the nodes before training (as `avf-run preflight` does); a failed check ends the run");
  app.add_option("--min-bus-gbps", run.min_bus_gbps, "With --preflight: the least all-reduce bus bandwidth, GB/s")
      ->check(Gbps());
  app.add_option("--preflight-device", run.preflight_device,
                 "With --preflight: gpu (default where built with CUDA and NCCL) or cpu")
      ->check(CLI::IsMember({"gpu", "cpu"}));
  CLI::App* tokenize = app.add_subcommand("tokenize", "Make token shards from text files (a BPE trained on them)");
  tokenize->add_option("files", tok.inputs, "Text files")->required();
  tokenize->add_option("-o,--output", tok.out_dir, "Folder for shard_NNNNNN.bin and tokenizer.json")->required();
  tokenize->add_option("--shards", tok.shards, "Number of shard files (default 1)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
  tokenize->add_option("--vocab", tok.vocab, "Vocabulary size (default 512)")->check(CLI::Range(256u, 1u << 24));
  tokenize->add_option("--format", tok.format, "tokens_u16 (default) or tokens_u32")
      ->check(CLI::IsMember({"tokens_u16", "tokens_u32"}));
  std::string check_path;
  CLI::App* check = app.add_subcommand("check-plan",
                                       "Check a plan.json strictly (every rule, no unknown key, the "
                                       "predicted totals) and exit");
  check->add_option("file", check_path, "The plan.json, or - for standard input")->required();
  bool check_tables = false;
  check->add_flag("--tables", check_tables,
                  "Print the rank, group and slice tables (derived from the layout since format version 3) as JSON");
  PreflightFlags pre;
  CLI::App* preflight = AddPreflight(app, pre);
  avf::run::CheckpointFlags ckpt;
  CLI::App* checkpoint = avf::run::AddCheckpointCommands(app, ckpt);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    llvm::errs() << "avf-run: error: " << e.what() << "\nRun `avf-run --help` for usage.\n";
    return 2;
  }
  if (tokenize->parsed()) return Tokenize(tok);
  if (check->parsed()) return CheckPlan(check_path, check_tables);
  if (preflight->parsed()) return Preflight(pre, std::vector<std::string>(argv, argv + argc));
  if (checkpoint->parsed()) return avf::run::RunCheckpointCommand(*checkpoint, ckpt);
  if (run.plan.empty()) {
    llvm::errs() << "avf-run: error: --plan is required\nRun `avf-run --help` for usage.\n";
    return 2;
  }
  if (run.print_schedule) return PrintSchedule(run.plan);
  return Run(run, std::vector<std::string>(argv, argv + argc));
}

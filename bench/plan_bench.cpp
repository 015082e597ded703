// Planner throughput: times the `auto` search (plan::PlanJob with every
// parallel field `auto`) on a few jobs of growing size; two should plan in
// under 1 s on one core: Llama 3 70B on 16 384 H100s, and Llama 3 405B on
// 100 000 (12 500 nodes).
//
// Usage: plan_bench [--quick] [--runs N]
//   --quick   one run per scenario (the ctest smoke entry uses it)
//   --runs N  timed runs per scenario (default 5)
//
// Prints figures only; it asserts no timing. Exit status 0, or 1 when the
// planner finds no layout for a scenario (a broken planner), 2 on bad usage.
// The JobSpecs are built here directly, with no parsing, so that only the
// planner is timed. Everything runs on the calling thread.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "check/job_spec.h"
#include "cost/shape.h"
#include "diag/diagnostic.h"
#include "plan/planner.h"
#include "plan/search.h"

namespace {

using avf::check::JobSpec;
using avf::cost::Arch;
using avf::cost::ModelShape;

// The stdlib's hgx_h100 node (h100_sxm, nvlink4) on ib_ndr, `nodes` nodes in
// a fat tree of 32 nodes per leaf with 2:1 oversubscription.
auto HgxH100Cluster(int64_t nodes) -> avf::cost::Hardware {
  avf::cost::Hardware hw;
  hw.gpu_memory = 80e9;        // h100_sxm: memory = 80GB
  hw.peak_flops = 989.4e12;    // h100_sxm: bf16 = 989.4TFLOP/s (dense)
  hw.hbm_bandwidth = 3.35e12;  // h100_sxm: memory_bw = 3.35TB/s
  hw.gpus_per_node = 8;
  hw.nvlink_bandwidth = 450e9;  // nvlink4: 450GB/s per direction
  hw.nvlink_latency = 1.9e-6;
  hw.nic_bandwidth = 50e9;  // ib_ndr: 400Gb/s per port
  hw.nics_per_node = 8;
  hw.network_latency = 4e-6;
  hw.nodes = nodes;
  hw.nodes_per_leaf = 32;
  hw.oversubscription = 2;
  return hw;
}

auto Model(Arch arch, int64_t layers, int64_t hidden, int64_t heads, int64_t kv_heads, int64_t ffn, int64_t vocab,
           int64_t seq_len, bool tied) -> ModelShape {
  ModelShape m;
  m.arch = arch;
  m.layers = layers;
  m.hidden = hidden;
  m.heads = heads;
  m.kv_heads = kv_heads;
  m.ffn = ffn;
  m.vocab = vocab;
  m.seq_len = seq_len;
  m.tied_embeddings = tied;
  return m;
}

struct Scenario {
  std::string model;
  ModelShape shape;
  int64_t gpus = 1;
  int64_t global_batch = 1;  // sequences per step
  bool target = false;       // the 1 s target applies
  int64_t nodes = 2048;      // in the cluster
};

auto Scenarios() -> std::vector<Scenario> {
  return {
      {"gpt2_124m", Model(Arch::Gpt2, 12, 768, 12, 12, 3072, 50257, 1024, true), 8, 512, false},
      {"llama2_7b", Model(Arch::Llama, 32, 4096, 32, 32, 11008, 32000, 4096, false), 128, 1024, false},
      {"llama3_70b", Model(Arch::Llama, 80, 8192, 64, 8, 28672, 128256, 8192, false), 16384, 4096, true},
      {"llama3_405b", Model(Arch::Llama, 126, 16384, 128, 8, 53248, 128256, 8192, false), 16384, 2048, false},
      {"llama3_405b", Model(Arch::Llama, 126, 16384, 128, 8, 53248, 128256, 8192, false), 100000, 12500, true, 12500},
  };
}

auto MakeJob(const Scenario& s) -> JobSpec {
  JobSpec job;
  job.name = "bench_" + s.model;
  job.model_name = s.model;
  job.cluster_name = "bench_pod";
  job.node_name = "hgx_h100";
  job.gpu_name = "h100_sxm";
  job.network_name = "ib_ndr";
  job.workload.model = s.shape;
  job.workload.precision = avf::cost::Precision::Bf16;
  job.workload.gpus = s.gpus;
  job.workload.global_batch = s.global_batch;
  job.hardware = HgxH100Cluster(s.nodes);
  job.parallel = avf::check::ParallelChoices{};  // every field `auto` (value = nullopt)
  job.steps = 1000;
  return job;
}

using Seconds = std::chrono::duration<double>;

struct Timing {
  double min = 0;
  double median = 0;
};

auto Summarize(std::vector<double> samples) -> Timing {
  std::sort(samples.begin(), samples.end());
  size_t n = samples.size();
  double median = n % 2 == 1 ? samples[n / 2] : (samples[n / 2 - 1] + samples[n / 2]) / 2;
  return {samples.front(), median};
}

auto Ms(double seconds) -> std::string { return fmt::format("{:.3f} ms", seconds * 1e3); }

// Runs one scenario `runs` times; false when the planner finds no layout.
// target_met turns false when a scenario with the 1 s target misses it.
auto RunScenario(const Scenario& s, int runs, bool& target_met) -> bool {
  JobSpec job = MakeJob(s);
  avf::plan::PlanOptions options;
  options.alternatives = 5;
  options.tables = false;

  std::vector<double> plan_times, search_times;
  std::optional<avf::plan::Plan> plan;
  std::vector<std::string> messages;
  for (int i = 0; i < runs; ++i) {
    avf::diag::DiagnosticEngine diags;
    auto start = std::chrono::steady_clock::now();
    std::optional<avf::plan::Plan> p = avf::plan::PlanJob(job, options, diags);
    plan_times.push_back(Seconds(std::chrono::steady_clock::now() - start).count());
    // One bare full-space search, as PlanJob runs it, to separate the search
    // from the rest of PlanJob.
    start = std::chrono::steady_clock::now();
    avf::plan::Search(job, avf::plan::AllAuto(job.parallel), options.alternatives + 1);
    search_times.push_back(Seconds(std::chrono::steady_clock::now() - start).count());
    if (i == 0) {
      plan = std::move(p);
      for (const auto& d : diags.diagnostics()) messages.push_back(d.message);
    }
  }

  fmt::print("{} on {} GPUs ({} nodes of 8), global batch {} sequences of {}\n", s.model, s.gpus, s.gpus / 8,
             s.global_batch, s.shape.seq_len);
  for (const std::string& m : messages) fmt::print("  planner says:  {}\n", m);
  if (!plan) {
    fmt::print("  NO LAYOUT FOUND: the planner returned nothing\n\n");
    return false;
  }

  // Fitting candidates: the full search again with no cap on what it keeps
  // (untimed; SearchResult counts only the layouts it evaluated).
  avf::plan::SearchResult all =
      avf::plan::Search(job, avf::plan::AllAuto(job.parallel), std::numeric_limits<size_t>::max());

  const avf::plan::Candidate& c = plan->chosen;
  const avf::cost::Prediction& pr = c.prediction;
  Timing t = Summarize(plan_times);
  Timing ts = Summarize(search_times);
  fmt::print("  candidates:    {} evaluated, {} fit in {:.0f} GB\n", plan->candidates_evaluated, all.best.size(),
             job.hardware.gpu_memory / 1e9);
  fmt::print("  best layout:   {}\n", avf::plan::LayoutSummary(c.layout));
  fmt::print("  prediction:    {:.3f} s per step, MFU {:.1f}%, {:.0f} TFLOP/s per GPU, {:.1f} GB per GPU ({})\n",
             pr.step_time, 100 * pr.mfu, pr.tflops_per_gpu, pr.memory.total() / 1e9,
             c.binding.empty() ? "-" : c.binding);
  fmt::print(
      "  time:          compute {:.3f} + tensor {:.3f} + pipeline {:.3f} + bubble {:.3f} + data {:.3f} + "
      "optimizer {:.3f} s\n",
      pr.time.compute, pr.time.tensor_comm, pr.time.pipeline_comm, pr.time.bubble, pr.time.data_comm,
      pr.time.optimizer);
  fmt::print("  data ring:     {} ranks over {} nodes, {} leaves\n", c.layout.data, pr.data_span.nodes,
             pr.data_span.leaves);
  fmt::print("  PlanJob wall:  min {}, median {} over {} run{}\n", Ms(t.min), Ms(t.median), runs, runs == 1 ? "" : "s");
  fmt::print("  Search() wall: min {}, median {} (one full-space search)\n", Ms(ts.min), Ms(ts.median));
  if (s.target) {
    bool met = t.median < 1.0;
    target_met = target_met && met;
    fmt::print("  target:        whole search under 1 s on one core: {} (median {})\n", met ? "MET" : "NOT MET",
               Ms(t.median));
  }
  fmt::print("\n");
  return true;
}

}  // namespace

auto main(int argc, char** argv) -> int {
  int runs = 5;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) {
      runs = 1;
    } else if (std::strcmp(argv[i], "--runs") == 0 && i + 1 < argc) {
      runs = std::atoi(argv[++i]);
      if (runs < 1) {
        fmt::print(stderr, "plan_bench: --runs needs a positive number\n");
        return 2;
      }
    } else {
      fmt::print(stderr, "usage: plan_bench [--quick] [--runs N]\n");
      return 2;
    }
  }
  fmt::print(
      "plan_bench: PlanJob (alternatives 5, no tables), every parallel field auto, HGX H100 x 2048 nodes\n"
      "(12500 for 100000 GPUs), fat tree 32 nodes per leaf, 2:1 oversubscribed; single thread, {} run{} per "
      "scenario\n\n",
      runs, runs == 1 ? "" : "s");
  bool ok = true, target_met = true;
  for (const Scenario& s : Scenarios()) ok = RunScenario(s, runs, target_met) && ok;
  fmt::print("targets (70B on 16384 and 405B on 100000 GPUs, each < 1 s): {}\n", target_met ? "met" : "NOT met");
  return ok ? 0 : 1;
}

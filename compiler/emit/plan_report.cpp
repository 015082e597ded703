#include "emit/plan_report.h"

#include <algorithm>
#include <cmath>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "check/check.h"
#include "emit/json_writer.h"
#include "emit/plan_fields.h"
#include "plan/planner.h"
#include "plan/search.h"
#include "trainers/trainer.h"

namespace avf::emit {

namespace {

using plan::Candidate;

auto Bytes(double b) -> std::string { return check::BytesText(b); }

auto Duration(double s) -> std::string {
  if (s < 10) return fmt::format("{:.3g} s", s);
  if (s < 120) return fmt::format("{:.1f} s", s);
  if (s < 7200) return fmt::format("{:.1f} min", s / 60);
  if (s < 172800) return fmt::format("{:.1f} h", s / 3600);
  return fmt::format("{:.1f} days", s / 86400);
}

// Seconds with four significant digits: "13.35", "0.001234".
auto StepText(double s) -> std::string { return fmt::format("{:.4g}", s); }

// "33.6–49.1 days", or "23.9 h–1.1 days" when the ends need other units.
auto DurationRange(double low, double high) -> std::string {
  std::string a = Duration(low), b = Duration(high);
  size_t space = a.rfind(' ');
  if (a.substr(space) == b.substr(b.rfind(' '))) return a.substr(0, space) + "–" + b;
  return a + "–" + b;
}

auto Rate(double bytes_per_s) -> std::string { return Bytes(bytes_per_s) + "/s"; }

// The terms of the step time, as planner.md's "Time per step" names them.
auto TimeTerms(const cost::TimeBreakdown& t) -> std::vector<std::pair<std::string_view, double>> {
  return {{"compute", t.compute}, {"tensor comm", t.tensor_comm}, {"pipeline comm", t.pipeline_comm},
          {"bubble", t.bubble},   {"data comm", t.data_comm},     {"optimizer", t.optimizer}};
}

// "compute 88%, tensor comm 9%, bubble 2%": the terms of at least 0.5% of
// the step, largest first.
auto Shares(const cost::Prediction& p) -> std::string {
  auto terms = TimeTerms(p.time);
  std::stable_sort(terms.begin(), terms.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string out;
  for (const auto& [name, seconds] : terms) {
    double share = p.step_time > 0 ? seconds / p.step_time : 0;
    if (share < 0.005) continue;
    out += fmt::format("{}{} {:.0f}%", out.empty() ? "" : ", ", name, 100 * share);
  }
  return out;
}

// The term that differs most between two layouts' steps, as "+0.14 s
// tensor comm" (from `a` to `b`), in the direction of the whole step.
auto LargestChange(const cost::Prediction& a, const cost::Prediction& b) -> std::string {
  auto from = TimeTerms(a.time), to = TimeTerms(b.time);
  double sign = b.step_time >= a.step_time ? 1 : -1;
  size_t largest = 0;
  for (size_t i = 1; i < from.size(); ++i) {
    if (sign * (to[i].second - from[i].second) > sign * (to[largest].second - from[largest].second)) largest = i;
  }
  double delta = to[largest].second - from[largest].second;
  return fmt::format("{}{} s {}", delta >= 0 ? "+" : "-", StepText(std::fabs(delta)), from[largest].first);
}

// Why the chosen layout won: its step by term, and what the fastest other
// layout of the whole space gains or loses against it.
void WriteWhy(const plan::Plan& plan, llvm::raw_ostream& out) {
  const cost::Prediction& p = plan.chosen.prediction;
  out << fmt::format("chosen: {} s per step: {} (binding: {})\n", StepText(p.step_time), Shares(p),
                     plan.chosen.binding);
  if (!plan.runner_up) return;
  const Candidate& r = *plan.runner_up;
  const cost::Prediction& q = r.prediction;
  bool shown = !plan.alternatives.empty() && plan.alternatives.front().layout == r.layout;
  std::string which = fmt::format("{}`{}`", shown ? "1, " : "", plan::LayoutDifference(plan.chosen.layout, r.layout));
  double change = p.step_time > 0 ? q.step_time / p.step_time - 1 : 0;
  // With fixed fields the best of the whole space can rank above the chosen layout.
  std::string_view label = plan::Better(r, plan.chosen) ? "the best layout" : "runner-up";
  if (std::fabs(change) < 0.0005) {
    out << fmt::format("{} ({}): the same step time, {} per GPU against {}\n", label, which, Bytes(q.memory_per_gpu),
                       Bytes(p.memory_per_gpu));
    return;
  }
  out << fmt::format("{} ({}) is {:.1f}% {}: {}\n", label, which, 100 * std::fabs(change),
                     change > 0 ? "slower" : "faster", LargestChange(p, q));
}

constexpr const char* kRowFormat = "{:<7}{:>4}{:>4}{:>6}{:>4}{:>6}{:>5}{:>11}{:>4}{:>10}{:>10}{:>12}{:>9}{:>7}  {}\n";

void WriteRow(llvm::raw_ostream& out, const std::string& label, const Candidate& c) {
  const cost::Layout& l = c.layout;
  const cost::Prediction& p = c.prediction;
  std::string vp = l.schedule == cost::Schedule::Interleaved ? fmt::format("{}", l.virtual_stages)
                   : l.schedule == cost::Schedule::GPipe     ? "gp"
                                                             : "1";
  out << fmt::format(kRowFormat, label, l.tensor, l.pipeline, l.data, vp, l.zero, l.micro_batch,
                     cost::Name(l.recompute), l.sequence_parallel ? "yes" : "no", Bytes(p.memory_per_gpu),
                     StepText(p.step_time), GroupedDigits(p.tokens_per_s), fmt::format("{:.1f}", p.tflops_per_gpu),
                     fmt::format("{:.1f}%", 100 * p.mfu), c.binding);
}

void WriteHeader(const plan::Plan& plan, llvm::raw_ostream& out) {
  const check::JobSpec& j = plan.job;
  const cost::ModelShape& m = j.workload.model;
  out << fmt::format("job {}: {} x {} on cluster {} ({} node{}, {} leaf switch{})\n", j.name, j.workload.gpus,
                     j.gpu_name, j.cluster_name, plan.nodes_used, plan.nodes_used == 1 ? "" : "s", plan.leaves_used,
                     plan.leaves_used == 1 ? "" : "es");
  out << fmt::format("model {}: {} parameters, {} FLOP per token (training); {}; batch {} x {} tokens\n", j.model_name,
                     check::CountText(static_cast<double>(plan.figures.parameters)),
                     check::CountText(plan.figures.flops_per_token), cost::Name(j.workload.precision),
                     j.workload.global_batch, m.seq_len);
  if (j.trainer.kind == check::TrainerKind::Avf) return;
  out << fmt::format("trainer {} {}: layouts it cannot run are left out; predicted with gradients reduced in {}\n",
                     check::Name(j.trainer.kind), trainers::PinnedVersion(j.trainer.kind),
                     j.workload.reduce_in_fp32 ? "fp32" : cost::Name(j.workload.precision));
}

void WriteMemory(const Candidate& c, double capacity, llvm::raw_ostream& out) {
  const cost::Prediction& p = c.prediction;
  const cost::MemoryBreakdown& m = p.memory;
  out << fmt::format(
      "memory per GPU: weights {} + gradients {} + optimizer {} + activations {} + buffers {} = {} of {}\n",
      Bytes(m.weights), Bytes(m.gradients), Bytes(m.optimizer), Bytes(m.activations), Bytes(m.buffers),
      Bytes(p.memory_per_gpu), Bytes(capacity));
  const cost::TimeBreakdown& t = p.time;
  out << fmt::format(
      "time per step: compute {} s + tensor comm {} s + pipeline comm {} s + bubble {} s + "
      "data comm {} s + optimizer {} s = {} s, likely {}–{} s\n",
      StepText(t.compute), StepText(t.tensor_comm), StepText(t.pipeline_comm), StepText(t.bubble),
      StepText(t.data_comm), StepText(t.optimizer), StepText(p.step_time), StepText(p.step_time_low),
      StepText(p.step_time_high));
}

void WriteOverheads(const plan::Plan& plan, llvm::raw_ostream& out) {
  const plan::Totals& t = plan.totals;
  out << fmt::format("  steps: {} x {} s = {}\n", GroupedDigits(static_cast<double>(t.steps)),
                     StepText(plan.chosen.prediction.step_time), Duration(t.step_seconds));
  if (const auto& s = t.staging) {
    out << fmt::format("  staging: {} at {} = {}\n", Bytes(s->bytes), Rate(s->rate), Duration(s->seconds));
  } else {
    out << fmt::format("  staging: none (dataset `{}` is read in place)\n", plan.job.dataset.name);
  }
  const auto& c = t.checkpoints;
  if (!c) {
    out << "  checkpoints: none\n";
  } else if (!c->write_bw || *c->write_bw <= 0) {
    out << fmt::format("  checkpoints: {} x {}, not counted (storage `{}` declares no `write_bw`)\n",
                       GroupedDigits(static_cast<double>(c->count)), Bytes(c->bytes), plan.job.checkpoint.dir->storage);
  } else {
    out << fmt::format("  checkpoints: {} x {} at {} = {}{}\n", GroupedDigits(static_cast<double>(c->count)),
                       Bytes(c->bytes), Rate(*c->write_bw), Duration(c->seconds),
                       c->async ? " (async: only the last write holds training)" : "");
  }
}

// An elastic job: the layout and prediction at every node count it may get.
void WriteElastic(const plan::Plan& plan, llvm::raw_ostream& out) {
  if (!plan.elastic) return;
  const plan::ElasticFamily& f = *plan.elastic;
  out << fmt::format("\nelastic: {} to {} nodes; the same batch of {} sequences and data order on each\n", f.min_nodes,
                     f.max_nodes, plan.job.workload.global_batch);
  constexpr const char* kFamilyRow = "{:>7}{:>7}{:>4}{:>4}{:>6}{:>4}{:>6}{:>5}{:>10}{:>10}{:>12}{:>7}{:>14}\n";
  out << fmt::format(kFamilyRow, "nodes", "GPUs", "tp", "pp", "dp", "vp", "zero", "mb", "mem/GPU", "step s", "tokens/s",
                     "MFU", "to train");
  for (const plan::ElasticLayout& e : f.layouts) {
    const cost::Layout& l = e.candidate.layout;
    const cost::Prediction& p = e.candidate.prediction;
    std::string vp = l.schedule == cost::Schedule::Interleaved ? fmt::format("{}", l.virtual_stages)
                     : l.schedule == cost::Schedule::GPipe     ? "gp"
                                                               : "1";
    out << fmt::format(kFamilyRow, e.nodes, e.gpus, l.tensor, l.pipeline, l.data, vp, l.zero, l.micro_batch,
                       Bytes(p.memory_per_gpu), StepText(p.step_time), GroupedDigits(p.tokens_per_s),
                       fmt::format("{:.1f}%", 100 * p.mfu), Duration(e.seconds));
  }
}

// What each column of the table means (`plan --legend`).
void WriteLegend(llvm::raw_ostream& out) {
  out << "columns:\n"
         "  tp         tensor-parallel degree (GPUs per tensor group)\n"
         "  pp         pipeline stages\n"
         "  dp         data-parallel degree (model replicas)\n"
         "  vp         model chunks per stage (interleaved schedule); gp: GPipe\n"
         "  zero       ZeRO stage, 0-3\n"
         "  mb         micro-batch, sequences\n"
         "  recompute  activation recomputation: none, selective or full\n"
         "  sp         sequence parallelism\n"
         "  mem/GPU    predicted memory of the most loaded GPU, bytes (SI prefixes)\n"
         "  step s     predicted seconds per optimizer step\n"
         "  tokens/s   tokens per second, whole job\n"
         "  TFLOP/s    model TFLOP/s per GPU (recomputation not counted)\n"
         "  MFU        model FLOPs utilisation against the GPU's dense peak\n"
         "  binding    memory N% at 90% of the GPU or more, else the largest overhead at 10% of the step or more,\n"
         "             else compute\n\n";
}

}  // namespace

void WritePlanTable(const plan::Plan& plan, bool legend, llvm::raw_ostream& out) {
  WriteHeader(plan, out);
  out << "\n"
      << fmt::format(kRowFormat, "", "tp", "pp", "dp", "vp", "zero", "mb", "recompute", "sp", "mem/GPU", "step s",
                     "tokens/s", "TFLOP/s", "MFU", "binding");
  WriteRow(out, "chosen", plan.chosen);
  for (size_t i = 0; i < plan.alternatives.size(); ++i) WriteRow(out, fmt::format("{}", i + 1), plan.alternatives[i]);
  std::string tied = plan.tied_left_out > 0 ? fmt::format("; {} tied with a row above not shown",
                                                          GroupedDigits(static_cast<double>(plan.tied_left_out)))
                                            : "";
  out << fmt::format("({} layouts evaluated{})\n\n", GroupedDigits(static_cast<double>(plan.candidates_evaluated)),
                     tied);
  if (legend) WriteLegend(out);
  WriteWhy(plan, out);
  WriteMemory(plan.chosen, plan.job.hardware.gpu_memory, out);
  const plan::Totals& t = plan.totals;
  std::string cost = t.cost ? fmt::format(", cost {} {}", GroupedDigits(*t.cost), t.currency) : "";
  out << fmt::format("to train: {} steps, {} tokens, {}, likely {}; {} GPU-hours{}\n",
                     GroupedDigits(static_cast<double>(t.steps)), check::CountText(t.tokens), Duration(t.seconds),
                     DurationRange(t.seconds_low, t.seconds_high), GroupedDigits(t.gpu_hours), cost);
  WriteOverheads(plan, out);
  WriteElastic(plan, out);
}

namespace {

void PredictedObject(JsonWriter& j, const Candidate& c) {
  const cost::Prediction& p = c.prediction;
  j.ObjectField("predicted", [&] {
    MemoryFields(j, p);
    j.NumberField("step_time_s", p.step_time);
    j.NumberField("step_time_low_s", p.step_time_low);
    j.NumberField("step_time_high_s", p.step_time_high);
    j.NumberField("tokens_per_s", p.tokens_per_s);
    j.NumberField("tflops_per_gpu", p.tflops_per_gpu);
    j.NumberField("mfu", p.mfu);
    j.Field("fits", p.fits);
    j.Field("binding", c.binding);
  });
}

// null, or the layout and prediction at each node count of the family.
void ElasticField(JsonWriter& j, const plan::Plan& plan) {
  j.Key("elastic");
  if (!plan.elastic) {
    j.Null();
    return;
  }
  j.Object([&] {
    j.Field("min_nodes", plan.elastic->min_nodes);
    j.Field("max_nodes", plan.elastic->max_nodes);
    j.ArrayField("layouts", [&] {
      for (const plan::ElasticLayout& e : plan.elastic->layouts) {
        j.Object([&] {
          j.Field("nodes", e.nodes);
          j.Field("gpus", e.gpus);
          LayoutField(j, e.candidate.layout);
          PredictedObject(j, e.candidate);
          j.NumberField("time_to_train_s", e.seconds);
        });
      }
    });
  });
}

}  // namespace

void WritePlanSummaryJson(const plan::Plan& plan, llvm::raw_ostream& out) {
  JsonWriter j(out, 0);
  j.Object([&] {
    j.Field("job", plan.job.name);
    LayoutField(j, plan.chosen.layout);
    PredictedObject(j, plan.chosen);
    j.ArrayField("alternatives", [&] {
      for (const Candidate& c : plan.alternatives) {
        j.Object([&] {
          LayoutField(j, c.layout);
          PredictedObject(j, c);
        });
      }
    });
    j.Field("candidates_evaluated", plan.candidates_evaluated);
    j.ObjectField("totals", [&] {
      j.Field("steps", plan.totals.steps);
      j.NumberField("tokens", plan.totals.tokens);
      const plan::Totals& t = plan.totals;
      j.NumberField("seconds", t.seconds);
      j.NumberField("seconds_low", t.seconds_low);
      j.NumberField("seconds_high", t.seconds_high);
      j.NumberField("step_seconds", t.step_seconds);
      j.NumberField("staging_seconds", t.staging ? t.staging->seconds : 0);
      j.NumberField("checkpoint_seconds", t.checkpoints ? t.checkpoints->seconds : 0);
      j.NumberField("gpu_hours", t.gpu_hours);
      if (t.cost) {
        j.NumberField("cost", *t.cost);
        j.Field("currency", t.currency);
      }
    });
    j.Field("tied_left_out", plan.tied_left_out);
    ElasticField(j, plan);
  });
  out << "\n";
}

}  // namespace avf::emit

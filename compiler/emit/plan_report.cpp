#include "emit/plan_report.h"

#include <cmath>

#include <fmt/format.h>

#include "check/check.h"
#include "emit/json_writer.h"
#include "emit/plan_fields.h"

namespace avf::emit {

namespace {

using plan::Candidate;

auto Bytes(double b) -> std::string { return check::BytesText(b); }

// 1234567 -> "1,234,567"
auto Grouped(double v) -> std::string {
  std::string digits = fmt::format("{:.0f}", std::fabs(v));
  std::string out = v < 0 ? "-" : "";
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

auto Duration(double s) -> std::string {
  if (s < 120) return fmt::format("{:.1f} s", s);
  if (s < 7200) return fmt::format("{:.1f} min", s / 60);
  if (s < 172800) return fmt::format("{:.1f} h", s / 3600);
  return fmt::format("{:.1f} days", s / 86400);
}

// Seconds with four significant digits: "13.35", "0.001234".
auto StepText(double s) -> std::string { return fmt::format("{:.4g}", s); }

constexpr const char* kRowFormat = "{:<7}{:>4}{:>4}{:>6}{:>4}{:>6}{:>5}{:>11}{:>4}{:>10}{:>10}{:>12}{:>9}{:>7}  {}\n";

void WriteRow(llvm::raw_ostream& out, const std::string& label, const Candidate& c) {
  const cost::Layout& l = c.layout;
  const cost::Prediction& p = c.prediction;
  std::string vp = l.schedule == cost::Schedule::Interleaved ? fmt::format("{}", l.virtual_stages)
                   : l.schedule == cost::Schedule::GPipe     ? "gp"
                                                             : "1";
  out << fmt::format(kRowFormat, label, l.tensor, l.pipeline, l.data, vp, l.zero, l.micro_batch,
                     cost::Name(l.recompute), l.sequence_parallel ? "yes" : "no", Bytes(p.memory_per_gpu),
                     StepText(p.step_time), Grouped(p.tokens_per_s), fmt::format("{:.1f}", p.tflops_per_gpu),
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
      "data comm {} s + optimizer {} s = {} s\n",
      StepText(t.compute), StepText(t.tensor_comm), StepText(t.pipeline_comm), StepText(t.bubble),
      StepText(t.data_comm), StepText(t.optimizer), StepText(p.step_time));
}

}  // namespace

void WritePlanTable(const plan::Plan& plan, llvm::raw_ostream& out) {
  WriteHeader(plan, out);
  out << "\n"
      << fmt::format(kRowFormat, "", "tp", "pp", "dp", "vp", "zero", "mb", "recompute", "sp", "mem/GPU", "step s",
                     "tokens/s", "TFLOP/s", "MFU", "binding");
  WriteRow(out, "chosen", plan.chosen);
  for (size_t i = 0; i < plan.alternatives.size(); ++i) WriteRow(out, fmt::format("{}", i + 1), plan.alternatives[i]);
  out << fmt::format("({} layouts evaluated)\n\n", Grouped(static_cast<double>(plan.candidates_evaluated)));
  WriteMemory(plan.chosen, plan.job.hardware.gpu_memory, out);
  const plan::Totals& t = plan.totals;
  std::string cost = t.cost ? fmt::format(", cost {}", Grouped(*t.cost)) : "";
  out << fmt::format("to train: {} steps, {} tokens, {}, {} GPU-hours{}\n", Grouped(static_cast<double>(t.steps)),
                     check::CountText(t.tokens), Duration(t.seconds), Grouped(t.gpu_hours), cost);
}

namespace {

void PredictedObject(JsonWriter& j, const Candidate& c) {
  const cost::Prediction& p = c.prediction;
  j.ObjectField("predicted", [&] {
    MemoryFields(j, p);
    j.NumberField("step_time_s", p.step_time);
    j.NumberField("tokens_per_s", p.tokens_per_s);
    j.NumberField("tflops_per_gpu", p.tflops_per_gpu);
    j.NumberField("mfu", p.mfu);
    j.Field("fits", p.fits);
    j.Field("binding", c.binding);
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
      j.NumberField("seconds", plan.totals.seconds);
      j.NumberField("gpu_hours", plan.totals.gpu_hours);
      if (plan.totals.cost) j.NumberField("cost", *plan.totals.cost);
    });
  });
  out << "\n";
}

}  // namespace avf::emit

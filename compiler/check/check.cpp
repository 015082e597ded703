#include "check/check.h"

#include <cmath>

#include <fmt/format.h>

#include "check/extract.h"
#include "check/rules.h"
#include "units/quantity.h"

namespace avf::check {

namespace {

using diag::DiagId;
using diag::DiagnosticEngine;

auto GpusPerNode(const JobSpec& s) -> int64_t { return std::max<int64_t>(s.hardware.gpus_per_node, 1); }

void CheckCapacity(const JobSpec& s, DiagnosticEngine& diags) {
  int64_t have = s.hardware.nodes * s.hardware.gpus_per_node;
  if (s.workload.gpus <= have) return;
  diags
      .Report(DiagId::NotEnoughGpus, s.at.gpus, s.name, s.workload.gpus, s.cluster_name, have, s.hardware.nodes,
              s.hardware.gpus_per_node)
      .Note(s.at.nodes, fmt::format("cluster `{}` has {} nodes", s.cluster_name, s.hardware.nodes))
      .Help(fmt::format("use at most `gpus = {}`, or give the cluster `nodes = {}`", have,
                        (s.workload.gpus + GpusPerNode(s) - 1) / GpusPerNode(s)));
}

void CheckTensor(const JobSpec& s, DiagnosticEngine& diags) {
  const IntChoice& t = s.parallel.tensor;
  if (!t.value) return;
  int64_t tensor = *t.value, per_node = GpusPerNode(s);
  const cost::ModelShape& m = s.workload.model;
  if (tensor > per_node) {
    diags.Report(DiagId::TensorExceedsNode, t.range, tensor, per_node, s.node_name)
        .Note(s.at.node_decl, "node type declared here")
        .Help(fmt::format("tensor parallelism must stay inside one node's NVLink domain; use `tensor = {}` and "
                          "pipeline parallelism across nodes",
                          per_node));
  } else if (per_node % tensor != 0) {
    std::string divisors;
    for (int64_t d = 1; d <= per_node; ++d) {
      if (per_node % d == 0) divisors += fmt::format("{}{}", divisors.empty() ? "" : ", ", d);
    }
    diags.Report(DiagId::TensorDoesNotDivideNode, t.range, tensor, per_node, s.node_name)
        .Note(s.at.node_decl, "node type declared here")
        .Help(fmt::format("tensor groups must tile a node; use one of {}", divisors));
  }
  if (m.heads % tensor != 0) {
    diags.Report(DiagId::HeadsNotDivisibleByTensor, t.range, m.heads, tensor)
        .Note(s.at.heads, fmt::format("model `{}` has {} heads", s.model_name, m.heads));
  } else if (m.kv_heads % tensor != 0) {
    diags.Report(DiagId::KvHeadsNotDivisibleByTensor, t.range, m.kv_heads, tensor)
        .Note(s.at.kv_heads, fmt::format("model `{}` has {} key/value heads", s.model_name, m.kv_heads));
  }
}

void CheckPipeline(const JobSpec& s, DiagnosticEngine& diags) {
  const ParallelChoices& p = s.parallel;
  int64_t layers = s.workload.model.layers;
  bool chunked = p.virtual_stages.value && *p.virtual_stages.value > 1;
  if (chunked && p.schedule.value && *p.schedule.value != cost::Schedule::Interleaved) {
    auto d = diags.Report(DiagId::VirtualStagesNeedInterleaved, p.virtual_stages.range, *p.virtual_stages.value);
    if (p.schedule.written) d.Note(p.schedule.range, "the schedule is set here");
    else d.Note(fmt::format("the schedule defaults to `{}`", cost::Name(*p.schedule.value)));
    d.Help("write `schedule = interleaved`, or remove `virtual_stages`");
  } else if (chunked && p.pipeline.value == 1) {
    diags.Report(DiagId::InterleavedWithoutPipeline, p.virtual_stages.range, *p.virtual_stages.value)
        .Help("model chunks interleave pipeline stages; set `pipeline` above 1, or remove `virtual_stages`");
  }
  if (!p.pipeline.value || !p.virtual_stages.value) return;
  int64_t chunks = *p.pipeline.value * *p.virtual_stages.value;
  // Any count of at least one layer per chunk splits (cost/stages.h).
  if (layers >= chunks) return;
  std::string tail = *p.virtual_stages.value > 1 ? fmt::format(" x {} virtual stages", *p.virtual_stages.value) : "";
  diags.Report(DiagId::TooFewLayers, p.pipeline.range, layers, *p.pipeline.value, tail)
      .Note(s.at.layers, fmt::format("model `{}` has {} layers", s.model_name, layers))
      .Help(fmt::format("`pipeline x virtual_stages` can be at most {}", layers));
}

// The data-parallel degree when it is fixed or follows from the others.
auto KnownData(const JobSpec& s) -> std::optional<int64_t> {
  const ParallelChoices& p = s.parallel;
  if (p.data.value) return p.data.value;
  if (!p.tensor.value || !p.pipeline.value) return std::nullopt;
  int64_t model_parallel = *p.tensor.value * *p.pipeline.value;
  if (model_parallel <= 0 || s.workload.gpus % model_parallel != 0) return std::nullopt;
  return s.workload.gpus / model_parallel;
}

void CheckWorld(const JobSpec& s, DiagnosticEngine& diags) {
  const ParallelChoices& p = s.parallel;
  if (p.tensor.value && !p.pipeline.value && s.workload.gpus % *p.tensor.value != 0) {
    diags.Report(DiagId::GpusNotDivisibleByTensor, s.at.gpus, s.workload.gpus, *p.tensor.value)
        .Note(p.tensor.range, "tensor parallelism set here")
        .Help(fmt::format("use a multiple of {} GPUs", *p.tensor.value));
    return;
  }
  if (!p.tensor.value || !p.pipeline.value) return;
  int64_t t = *p.tensor.value, pp = *p.pipeline.value, gpus = s.workload.gpus;
  if (p.data.value) {
    int64_t world = *p.data.value * t * pp;
    if (world == gpus) return;
    auto d = diags.Report(DiagId::WorldSizeMismatch, p.data.range, *p.data.value, t, pp, world, gpus);
    d.Note(s.at.gpus, fmt::format("`gpus = {}` is set here", gpus));
    if (gpus % (t * pp) == 0) d.Help(fmt::format("use `data = {}`, or `data = auto`", gpus / (t * pp)));
    return;
  }
  if (gpus % (t * pp) == 0) return;
  diags.Report(DiagId::GpusNotDivisible, s.at.gpus, gpus, t, pp)
      .Note(p.tensor.range, "tensor parallelism set here")
      .Help(fmt::format("use a multiple of {} GPUs", t * pp));
}

void CheckBatch(const JobSpec& s, DiagnosticEngine& diags) {
  const ParallelChoices& p = s.parallel;
  auto data = KnownData(s);
  if (!data || !p.micro_batch.value) return;
  int64_t per_step = *data * *p.micro_batch.value, batch = s.workload.global_batch;
  if (batch % per_step != 0) {
    auto d = diags.Report(DiagId::BatchNotDivisible, s.at.batch, batch, *data, *p.micro_batch.value);
    d.Note(p.micro_batch.range, "micro-batch size set here");
    int64_t lower = batch / per_step * per_step;
    if (lower > 0) d.Help(fmt::format("use `batch = {}` or `batch = {}`", lower, lower + per_step));
    else d.Help(fmt::format("use `batch = {}`, or a smaller micro-batch", per_step));
    return;
  }
  int64_t micro_batches = batch / per_step;
  bool interleaved = p.schedule.value && *p.schedule.value == cost::Schedule::Interleaved;
  if (interleaved && p.pipeline.value && micro_batches % *p.pipeline.value != 0) {
    diags.Report(DiagId::InterleavedMicroBatches, p.schedule.range, micro_batches, *p.pipeline.value)
        .Note(s.at.batch, fmt::format("{} sequences / ({} x {}) = {} micro-batches", batch, *data, *p.micro_batch.value,
                                      micro_batches));
  }
}

void CheckSequenceParallel(const JobSpec& s, DiagnosticEngine& diags) {
  const ParallelChoices& p = s.parallel;
  if (p.sequence_parallel.written && p.sequence_parallel.value.value_or(false) && p.tensor.value == 1) {
    diags.Report(DiagId::SequenceParallelWithoutTensor, p.sequence_parallel.range)
        .Help("sequence parallelism splits activations over the tensor-parallel group; set `tensor` above 1");
  }
}

}  // namespace

namespace {

// Three significant digits with a decimal SI prefix, trailing zeros dropped:
// 80e9 -> "80G", 38701865984 -> "38.7G", 535000 -> "535K".
auto Compact(double v) -> std::string {
  static constexpr const char* kPrefixes[] = {"", "K", "M", "G", "T", "P", "E"};
  size_t i = 0;
  double a = std::fabs(v);
  while (a >= 999.5 && i + 1 < std::size(kPrefixes)) {
    a /= 1000;
    v /= 1000;
    ++i;
  }
  int decimals = a >= 99.95 ? 0 : a >= 9.995 ? 1 : 2;
  std::string text = fmt::format("{:.{}f}", v, decimals);
  if (text.find('.') != std::string::npos) {
    while (text.back() == '0') text.pop_back();
    if (text.back() == '.') text.pop_back();
  }
  return text + kPrefixes[i];
}

// `elastic`: a range of whole node counts that holds the job's own, within
// the cluster, for avf-run (which alone re-plans on the nodes it has).
void CheckElastic(const JobSpec& s, DiagnosticEngine& diags) {
  if (!s.elastic) return;
  const ElasticSpec& e = *s.elastic;
  int64_t per_node = GpusPerNode(s), own = OwnNodes(s), max = MostNodes(s);
  if (s.trainer.kind != TrainerKind::Avf) {
    diags.Report(DiagId::ElasticNeedsAvfRun, e.range, s.name, Name(s.trainer.kind))
        .Note(s.trainer.kind_range, fmt::format("the job runs {} here", Name(s.trainer.kind)))
        .Help("remove `elastic`, or train with avf-run (remove `trainer`)");
    return;
  }
  auto report = [&](llvm::SMRange at, std::string why) {
    return diags.Report(DiagId::ElasticRange, at, s.name, e.min_nodes, max, std::move(why));
  };
  if (s.workload.gpus % per_node != 0) {
    report(s.at.gpus, fmt::format("its {} GPUs are not whole nodes of {}", s.workload.gpus, per_node))
        .Help(fmt::format("an elastic job takes whole nodes: use `gpus = {}`", (own + 1) * per_node));
  } else if (e.min_nodes > max) {
    report(e.min_range, "`min_nodes` is more than the most nodes")
        .Help(e.max_nodes
                  ? "make `min_nodes` at most `max_nodes`"
                  : fmt::format("`max_nodes` defaults to the job's own {} nodes; make `min_nodes` at most that, "
                                "or set `max_nodes`",
                                own));
  } else if (max > s.hardware.nodes) {
    report(e.max_range, fmt::format("cluster `{}` has {} nodes", s.cluster_name, s.hardware.nodes))
        .Note(s.at.nodes, fmt::format("`nodes = {}` is set here", s.hardware.nodes));
  } else if (own < e.min_nodes || own > max) {
    report(s.at.gpus, fmt::format("the job's own {} GPUs are {} nodes, outside that range", s.workload.gpus, own))
        .Note(e.range, "the range is set here");
  }
}

}  // namespace

auto BytesText(double bytes) -> std::string { return Compact(bytes) + "B"; }

auto CountText(double count) -> std::string { return Compact(count); }

auto BytePrefixHint(llvm::SMRange have_at, double have, llvm::SMRange need_at, double need) -> std::string {
  auto written = [](llvm::SMRange r) {
    return r.isValid() ? std::string_view(r.Start.getPointer(), r.End.getPointer() - r.Start.getPointer())
                       : std::string_view();
  };
  std::string_view have_text = written(have_at), need_text = written(need_at);
  if (auto twin = units::OtherBytePrefix(need_text); twin && !twin->binary && twin->value.real() <= have) {
    return fmt::format("`{}` is in powers of 1024 ({}), `{}` in powers of 1000: `{}` fits", need_text, BytesText(need),
                       have_text, twin->text);
  }
  if (auto twin = units::OtherBytePrefix(have_text); twin && twin->binary && twin->value.real() >= need) {
    return fmt::format(
        "if `{}` was copied from `df -h` or `free -h`, which print powers of 1024 (`{}`), it is `{}` = {}, enough for "
        "{}",
        have_text, have_text.substr(0, have_text.size() - 1), twin->text, BytesText(twin->value.real()),
        BytesText(need));
  }
  return "";
}

auto CheckJobs(const sema::Program& program, DiagnosticEngine& diags, std::string_view only_job, bool one_machine)
    -> std::vector<CheckedJob> {
  std::vector<CheckedJob> jobs;
  DataChecked data_checked;
  data_checked.one_machine = one_machine;
  for (const sema::Decl& decl : program.decls) {
    if (decl.kind != ast::DeclKind::Job) continue;
    if (!only_job.empty() && decl.name != only_job) {
      CheckedJob skipped{{}, decl.buffer_id, false};
      skipped.spec.name = decl.name;
      jobs.push_back(std::move(skipped));
      continue;
    }
    CheckedJob job{ExtractJob(program, decl), decl.buffer_id, true};
    const JobSpec& s = job.spec;
    // Only errors in what the planner computes with stop it from planning:
    // a data or storage error still leaves the memory and time to report.
    size_t errors_before = diags.error_count();
    CheckCapacity(s, diags);
    CheckTensor(s, diags);
    CheckPipeline(s, diags);
    CheckWorld(s, diags);
    CheckBatch(s, diags);
    CheckHardware(s, diags);
    CheckElastic(s, diags);
    job.ok = diags.error_count() == errors_before;
    CheckSequenceParallel(s, diags);
    CheckData(s, data_checked, diags);
    CheckStorage(s, data_checked, diags);
    jobs.push_back(std::move(job));
  }
  return jobs;
}

}  // namespace avf::check

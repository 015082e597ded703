// plan.json text -> RunPlan: the file (size-capped), a scan for nesting and
// duplicate keys, llvm::json::parse, the format and version, then one reader
// per section and ValidatePlan. Compiled as C++17 under clang (llvm::json).
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>
#include <llvm/Support/JSON.h>

#include "io/regular_file.h"
#include "plan/json_scan.h"
#include "plan/read_sections.h"

namespace avf::runtime {

namespace {

auto SizeText(uint64_t bytes) -> std::string {
  if (bytes % (uint64_t{1} << 20) == 0) return fmt::format("{} bytes ({} MiB)", bytes, bytes >> 20);
  return fmt::format("{} bytes", bytes);
}

// Only a regular file is read (io::RegularFile: a FIFO cannot block the
// open, a device is refused), and one over max_bytes is refused unread; the
// read stops past max_bytes all the same, in case the file grew meanwhile.
auto ReadCapped(llvm::StringRef path, uint64_t max_bytes, Problems& problems) -> std::optional<std::string> {
  llvm::Expected<io::RegularFile> file = io::RegularFile::Open(path.str());
  if (!file) {
    problems.Addf("", "cannot open the plan: {}", llvm::toString(file.takeError()));
    return std::nullopt;
  }
  if (file->size() > max_bytes) {
    problems.Addf("", "the file is {}; a plan is at most {}", SizeText(file->size()), SizeText(max_bytes));
    return std::nullopt;
  }
  std::string text;
  text.reserve(static_cast<size_t>(file->size()));
  char chunk[1 << 16];
  while (text.size() <= max_bytes) {
    ssize_t n = ::read(file->fd(), chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      problems.Addf("", "cannot read the plan: {}", std::strerror(errno));
      return std::nullopt;
    }
    if (n == 0) return text;
    text.append(chunk, static_cast<size_t>(n));
  }
  problems.Addf("", "the file is longer than {}, the most a plan may be", SizeText(max_bytes));
  return std::nullopt;
}

// format and version first: a file that is not a version-1 plan is refused
// with one message, not with a list of the keys it lacks.
auto CheckFormat(const Node& root) -> bool {
  Node format = root["format"];
  if (!format.present()) {
    format.Report("missing: not an aviflow plan (expected \"format\": \"aviflow-plan\")");
    return false;
  }
  if (format.text() != llvm::StringRef(kPlanFormatName)) {
    format.Report(fmt::format("expected \"{}\", found {}: not an aviflow plan", kPlanFormatName, format.Describe()));
    return false;
  }
  Node version = root["version"];
  std::optional<int64_t> v = version.TryInt(INT64_MIN);
  if (!v) return false;
  if (*v > kPlanFormatVersion) {
    version.Report(fmt::format("the plan is format version {}, newer than version {}, the one this avf-run reads; "
                               "run the avf-run built with the aviflowc that wrote it",
                               *v, kPlanFormatVersion));
    return false;
  }
  if (*v < kPlanFormatVersion) {
    version.Report(fmt::format("{} is not a plan format version (this avf-run reads version {})", *v, kPlanFormatVersion));
    return false;
  }
  return true;
}

void ReadSections(const Node& root, RunPlan& plan) {
  ReadJob(root["job"], plan.job);
  ReadModel(root["model"], plan.model);
  ReadHardware(root["hardware"], plan.hardware);
  ReadTraining(root["training"], plan.training);
  ReadLayout(root["layout"], plan.layout);
  ReadRanks(root["ranks"], plan.ranks);
  ReadGroups(root["groups"], plan.groups);
  ReadStages(root["stages"], plan.stages);
  ReadStageParameters(root["stage_parameters"], plan.stage_parameters);
  ReadData(root["data"], plan.data);
  ReadZero(root["zero"], plan.zero);
  ReadOptimizer(root["optimizer"], plan.optimizer);
  ReadCheckpoint(root["checkpoint"], plan.checkpoint);
  ReadPredicted(root["predicted"], plan.predicted);
}

auto IsBlank(llvm::StringRef text) -> bool { return text.find_first_not_of(" \t\r\n") == llvm::StringRef::npos; }

}  // namespace

void ReadJob(const Node& n, PlanJob& out) {
  if (!n.IsObject()) return;
  out.name = n["name"].String(1);
  Node sha = n["source_sha256"];
  out.source_sha256 = sha.NullableString();
  if (out.source_sha256 && (out.source_sha256->size() != 64 ||
                            out.source_sha256->find_first_not_of("0123456789abcdef") != std::string::npos)) {
    sha.Report("expected 64 lowercase hexadecimal digits");
  }
  out.target = n["target"].NullableEnum<Target>();
  out.image = n["image"].NullableString();
  out.k8s_namespace = n["namespace"].NullableString();
  out.queue = n["queue"].NullableString();
  out.priority = n["priority"].NullableString();
}

void ReadModel(const Node& n, PlanModel& out) {
  if (!n.IsObject()) return;
  out.name = n["name"].String(1);
  out.arch = n["arch"].Enum<Arch>();
  out.layers = n["layers"].Int(1);
  out.hidden = n["hidden"].Int(1);
  out.heads = n["heads"].Int(1);
  out.kv_heads = n["kv_heads"].Int(1);
  out.ffn = n["ffn"].Int(1);
  out.vocab = n["vocab"].Int(1);
  out.seq_len = n["seq_len"].Int(1);
  out.tied_embeddings = n["tied_embeddings"].Bool();
  out.parameters = n["parameters"].Int(1);
  out.flops_per_token = n["flops_per_token"].Number(0, /*exclusive_min=*/true);
}

void ReadHardware(const Node& n, PlanHardware& out) {
  if (!n.IsObject()) return;
  out.cluster = n["cluster"].String(1);
  out.node = n["node"].String(1);
  out.gpu = n["gpu"].String(1);
  out.network = n["network"].NullableString();
  out.gpu_memory_bytes = n["gpu_memory_bytes"].Int(1);
  out.peak_flops = n["peak_flops"].Number(0, true);
  out.cluster_nodes = n["cluster_nodes"].Int(1);
  out.nodes = n["nodes"].Int(1);
  out.gpus_per_node = n["gpus_per_node"].Int(1);
  out.leaves = n["leaves"].Int(1);
  out.nodes_per_leaf = n["nodes_per_leaf"].Int(0);
  out.oversubscription = n["oversubscription"].Number(1, false);
  out.gpu_hour_price = n["gpu_hour_price"].NullableNumber(0, false);
}

void ReadTraining(const Node& n, PlanTraining& out) {
  if (!n.IsObject()) return;
  out.precision = n["precision"].Enum<Precision>();
  out.gpus = n["gpus"].Int(1);
  out.global_batch = n["global_batch"].Int(1);
  out.micro_batch = n["micro_batch"].Int(1);
  out.micro_batches_per_step = n["micro_batches_per_step"].Int(1);
  out.tokens_per_step = n["tokens_per_step"].Int(1);
  out.steps = n["steps"].Int(0);
  out.tokens = n["tokens"].Number(0, false);
  out.length_field = n["length_field"].NullableEnum<LengthField>();
}

void ReadLayout(const Node& n, PlanLayout& out) {
  if (!n.IsObject()) return;
  out.data = n["data"].Int(1);
  out.tensor = n["tensor"].Int(1);
  out.pipeline = n["pipeline"].Int(1);
  out.virtual_stages = n["virtual_stages"].Int(1);
  out.schedule = n["schedule"].Enum<PipelineSchedule>();
  out.zero = n["zero"].Int(0, 3);
  out.micro_batch = n["micro_batch"].Int(1);
  out.recompute = n["recompute"].Enum<Recompute>();
  out.sequence_parallel = n["sequence_parallel"].Bool();
  Node order = n["rank_order"];
  out.rank_order = order.String(1);
  if (order.text() && out.rank_order != "tensor,data,pipeline") {
    order.Report(fmt::format("\"{}\" is not \"tensor,data,pipeline\", the only rank order of format version 1",
                             Printable(out.rank_order)));
  }
}

auto ParsePlan(llvm::StringRef text, llvm::StringRef name) -> llvm::Expected<RunPlan> {
  Problems problems(name);
  if (IsBlank(text)) {
    problems.Add("", "the file is empty");
    return problems.TakeError();
  }
  if (std::optional<std::string> scan = ScanJsonText(text, kMaxJsonDepth)) {
    problems.Add("", "not valid JSON: " + *scan);
    return problems.TakeError();
  }
  llvm::Expected<llvm::json::Value> value = llvm::json::parse(text);
  if (!value) {
    problems.Add("", "not valid JSON: " + llvm::toString(value.takeError()));
    return problems.TakeError();
  }
  Node root(*value, problems);
  if (!root.IsObject() || !CheckFormat(root)) return problems.TakeError();
  RunPlan plan;
  plan.version = kPlanFormatVersion;
  ReadSections(root, plan);
  if (!problems.empty()) return problems.TakeError();
  if (llvm::Error e = ValidatePlan(plan, name)) return e;
  return plan;
}

auto ReadPlanFile(llvm::StringRef path, uint64_t max_bytes) -> llvm::Expected<RunPlan> {
  Problems problems(path);
  std::optional<std::string> text = ReadCapped(path, max_bytes, problems);
  if (!text) return problems.TakeError();
  return ParsePlan(*text, path);
}

}  // namespace avf::runtime

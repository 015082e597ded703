// plan.json text -> RunPlan: the file (size-capped), a scan for nesting and
// duplicate keys, llvm::json::parse, the format and version, then one reader
// per section and ValidatePlan. Compiled as C++17 under clang (llvm::json).
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>
#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/JSON.h>
#include <llvm/Support/SHA256.h>

#include "io/regular_file.h"
#include "plan/check_plan.h"
#include "plan/derive_tables.h"
#include "plan/json_scan.h"
#include "plan/read_sections.h"

namespace avf::runtime {

namespace {

using K = plan_format::Key;

auto SizeText(uint64_t bytes) -> std::string {
  if (bytes % (uint64_t{1} << 20) == 0) return fmt::format("{} bytes ({} MiB)", bytes, bytes >> 20);
  return fmt::format("{} bytes", bytes);
}

// Reads fd to its end, refusing more than max_bytes (a file that grew since
// its size was checked, or a pipe that never ends).
auto ReadAll(int fd, uint64_t size_hint, uint64_t max_bytes, Problems& problems) -> std::optional<std::string> {
  std::string text;
  text.reserve(static_cast<size_t>(std::min(size_hint, max_bytes)));
  char chunk[1 << 16];
  while (text.size() <= max_bytes) {
    ssize_t n = ::read(fd, chunk, sizeof chunk);
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

// Only a regular file is read (io::RegularFile: a FIFO cannot block the
// open, a device is refused), and one over max_bytes is refused unread.
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
  return ReadAll(file->fd(), file->size(), max_bytes, problems);
}

// format and version first: a file that is not a plan of a version this
// reader reads is refused with one message, not with a list of the keys it lacks.
auto CheckFormat(const Node& root) -> std::optional<int64_t> {
  Node format = root[K::Format];
  if (!format.present()) {
    format.Report(fmt::format("missing: not an aviflow plan (expected \"format\": \"{}\")", plan_format::kFormatName));
    return std::nullopt;
  }
  if (format.text() != Node::Ref(plan_format::kFormatName)) {
    format.Report(
        fmt::format("expected \"{}\", found {}: not an aviflow plan", plan_format::kFormatName, format.Describe()));
    return std::nullopt;
  }
  Node version = root[K::Version];
  std::optional<int64_t> v = version.TryInt(INT64_MIN);
  if (!v) return std::nullopt;
  std::string reads = fmt::format("versions {} to {}", plan_format::kOldestFormatVersion, kPlanFormatVersion);
  if (*v > kPlanFormatVersion) {
    version.Report(
        fmt::format("the plan is format version {}, newer than version {}, the newest this avf-run reads; "
                    "run the avf-run built with the aviflowc that wrote it",
                    *v, kPlanFormatVersion));
    return std::nullopt;
  }
  if (*v < 1) {
    version.Report(fmt::format("{} is not a plan format version (this avf-run reads {})", *v, reads));
    return std::nullopt;
  }
  if (*v < plan_format::kOldestFormatVersion) {
    version.Report(
        fmt::format("the plan is format version {}, written by an older aviflowc; this avf-run reads {}: "
                    "compile the job again",
                    *v, reads));
    return std::nullopt;
  }
  return v;
}

void ReadSections(const Node& root, RunPlan& plan) {
  ReadJob(root[K::Job], plan.job);
  ReadModel(root[K::Model], plan.model);
  ReadHardware(root[K::Hardware], plan.hardware);
  ReadTraining(root[K::Training], plan.training);
  ReadLayout(root[K::Layout], plan.layout);
  ReadRanks(root[K::Ranks], plan.ranks);
  ReadGroups(root[K::Groups], plan.groups);
  ReadStages(root[K::Stages], plan.stages);
  ReadStageParameters(root[K::StageParameters], plan.stage_parameters);
  ReadData(root[K::Data], plan.data);
  ReadValidation(root[K::Validation], plan.validation);
  ReadZero(root[K::Zero], plan.zero);
  ReadOptimizer(root[K::Optimizer], plan.optimizer);
  ReadCheckpoint(root[K::Checkpoint], plan.checkpoint);
  ReadInit(root[K::Init], plan.init);
  ReadPredicted(root[K::Predicted], plan.predicted);
  ReadElastic(root[K::Elastic], plan.elastic);
}

auto IsBlank(llvm::StringRef text) -> bool { return text.find_first_not_of(" \t\r\n") == llvm::StringRef::npos; }

}  // namespace

void ReadJob(const Node& n, PlanJob& out) {
  if (!n.IsObject()) return;
  out.name = n.String(K::JobName);
  Node sha = n[K::JobSourceSha256];
  out.source_sha256 = sha.NullableString();
  if (out.source_sha256 && (out.source_sha256->size() != 64 ||
                            out.source_sha256->find_first_not_of("0123456789abcdef") != std::string::npos)) {
    sha.Report("expected 64 lowercase hexadecimal digits");
  }
  out.target = n.NullableEnum<Target>(K::JobTarget);
  out.image = n.NullableString(K::JobImage);
  out.k8s_namespace = n.NullableString(K::JobNamespace);
  out.queue = n.NullableString(K::JobQueue);
  out.priority = n.NullableString(K::JobPriority);
}

void ReadModel(const Node& n, PlanModel& out) {
  if (!n.IsObject()) return;
  out.name = n.String(K::ModelName);
  out.arch = n.Enum<Arch>(K::ModelArch);
  out.layers = n.Int(K::ModelLayers);
  out.hidden = n.Int(K::ModelHidden);
  out.heads = n.Int(K::ModelHeads);
  out.kv_heads = n.Int(K::ModelKvHeads);
  out.ffn = n.Int(K::ModelFfn);
  out.vocab = n.Int(K::ModelVocab);
  out.seq_len = n.Int(K::ModelSeqLen);
  out.tied_embeddings = n.Bool(K::ModelTiedEmbeddings);
  out.parameters = n.Int(K::ModelParameters);
  out.flops_per_token = n.Number(K::ModelFlopsPerToken);
}

void ReadHardware(const Node& n, PlanHardware& out) {
  if (!n.IsObject()) return;
  out.cluster = n.String(K::HardwareCluster);
  out.node = n.String(K::HardwareNode);
  out.gpu = n.String(K::HardwareGpu);
  out.network = n.NullableString(K::HardwareNetwork);
  out.gpu_memory_bytes = n.Int(K::HardwareGpuMemoryBytes);
  out.peak_flops = n.Number(K::HardwarePeakFlops);
  out.cluster_nodes = n.Int(K::HardwareClusterNodes);
  out.nodes = n.Int(K::HardwareNodes);
  out.gpus_per_node = n.Int(K::HardwareGpusPerNode);
  out.ranks_per_node = n.Int(K::HardwareRanksPerNode);
  out.leaves = n.Int(K::HardwareLeaves);
  out.nodes_per_leaf = n.Int(K::HardwareNodesPerLeaf);
  out.leaves_per_spine = n.Int(K::HardwareLeavesPerSpine);
  out.oversubscription = n.Number(K::HardwareOversubscription);
  out.gpu_hour_price = n.NullableNumber(K::HardwareGpuHourPrice);
  out.currency = n.String(K::HardwareCurrency);
}

void ReadTraining(const Node& n, PlanTraining& out) {
  if (!n.IsObject()) return;
  out.precision = n.Enum<Precision>(K::TrainingPrecision);
  out.attention = n.Enum<Attention>(K::TrainingAttention);
  out.gpus = n.Int(K::TrainingGpus);
  out.global_batch = n.Int(K::TrainingGlobalBatch);
  out.micro_batch = n.Int(K::TrainingMicroBatch);
  out.micro_batches_per_step = n.Int(K::TrainingMicroBatchesPerStep);
  out.tokens_per_step = n.Int(K::TrainingTokensPerStep);
  out.steps = n.Int(K::TrainingSteps);
  out.tokens = n.Number(K::TrainingTokens);
  out.length_field = n.NullableEnum<LengthField>(K::TrainingLengthField);
}

void ReadLayout(const Node& n, PlanLayout& out) {
  if (!n.IsObject()) return;
  out.data = n.Int(K::LayoutData);
  out.tensor = n.Int(K::LayoutTensor);
  out.pipeline = n.Int(K::LayoutPipeline);
  out.virtual_stages = n.Int(K::LayoutVirtualStages);
  out.schedule = n.Enum<PipelineSchedule>(K::LayoutSchedule);
  out.zero = n.Int(K::LayoutZero);
  out.micro_batch = n.Int(K::LayoutMicroBatch);
  out.recompute = n.Enum<Recompute>(K::LayoutRecompute);
  out.sequence_parallel = n.Bool(K::LayoutSequenceParallel);
  Node order = n[K::LayoutRankOrder];
  out.rank_order = order.String(1);
  if (order.text() && out.rank_order != plan_format::kRankOrder) {
    order.Report(fmt::format("\"{}\" is not \"{}\", the only rank order of format version {}",
                             Printable(out.rank_order), plan_format::kRankOrder, kPlanFormatVersion));
  }
}

auto ParseJsonText(llvm::StringRef text, Problems& problems) -> std::optional<llvm::json::Value> {
  if (IsBlank(text)) {
    problems.Add("", "the file is empty");
    return std::nullopt;
  }
  if (std::optional<std::string> scan = ScanJsonText(text, kMaxJsonDepth)) {
    problems.Add("", "not valid JSON: " + *scan);
    return std::nullopt;
  }
  llvm::Expected<llvm::json::Value> value = llvm::json::parse(text);
  if (!value) {
    problems.Add("", "not valid JSON: " + llvm::toString(value.takeError()));
    return std::nullopt;
  }
  return std::move(*value);
}

auto PlanOfJson(const llvm::json::Value& value, llvm::StringRef name) -> llvm::Expected<ValidPlan> {
  Problems problems(name);
  Node top(value, problems);
  if (!top.IsObject()) return problems.TakeError();
  std::optional<int64_t> version = CheckFormat(top);
  if (!version) return problems.TakeError();
  RunPlan plan;
  plan.version = *version;
  ReadSections(Node(value, problems, *version), plan);
  if (!problems.empty()) return problems.TakeError();
  // Version 2 lists the tables; later versions derive them.
  if (plan.version > 2) DeriveTables(plan, problems);
  if (!problems.empty()) return problems.TakeError();
  return ValidPlan::Of(std::move(plan), name);
}

auto ParsePlan(llvm::StringRef text, llvm::StringRef name) -> llvm::Expected<ValidPlan> {
  Problems problems(name);
  std::optional<llvm::json::Value> value = ParseJsonText(text, problems);
  if (!value) return problems.TakeError();
  return PlanOfJson(*value, name);
}

auto ValidPlan::Of(RunPlan plan, llvm::StringRef name) -> llvm::Expected<ValidPlan> {
  if (llvm::Error e = ValidatePlan(plan, name)) return e;
  return ValidPlan(std::make_shared<const RunPlan>(std::move(plan)));
}

auto ReadPlanFile(llvm::StringRef path, uint64_t max_bytes) -> llvm::Expected<ValidPlan> {
  llvm::Expected<PlanFile> file = ReadPlanFileWithSha256(path, max_bytes);
  if (!file) return file.takeError();
  return std::move(file->plan);
}

auto ReadPlanFileWithSha256(llvm::StringRef path, uint64_t max_bytes) -> llvm::Expected<PlanFile> {
  Problems problems(path);
  std::optional<std::string> text = ReadCapped(path, max_bytes, problems);
  if (!text) return problems.TakeError();
  llvm::Expected<ValidPlan> plan = ParsePlan(*text, path);
  if (!plan) return plan.takeError();
  llvm::SHA256 hash;
  hash.update(*text);
  return PlanFile{std::move(*plan), llvm::toHex(hash.final(), /*LowerCase=*/true)};
}

auto CheckPlanFile(llvm::StringRef path) -> llvm::Expected<ValidPlan> {
  bool stdin_path = path == "-";
  Problems problems(stdin_path ? "<stdin>" : path);
  // Standard input, asked for by name, may be a pipe: it is read to its end.
  std::optional<std::string> text =
      stdin_path ? ReadAll(STDIN_FILENO, 0, kMaxPlanBytes, problems) : ReadCapped(path, kMaxPlanBytes, problems);
  if (!text) return problems.TakeError();
  return CheckPlanText(*text, problems.file());
}

}  // namespace avf::runtime

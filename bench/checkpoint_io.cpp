// checkpoint_io: how fast checkpoints of GPT-2 124M are written and read
// (runtime/checkpoint), and how long an async checkpoint holds the step.
//  - snapshot: the copy of the parameters and both AdamW moments to host
//    memory, what `checkpoint { async = true }` holds a step for on the CPU
//    backend (train/async_checkpoints.h): the first checkpoint's into new
//    memory, the later ones' into the same (Engine::SaveState(into));
//  - write: the chunks of every tensor, SHA-256 and fsync included, then the
//    index and COMMITTED (what a synchronous checkpoint holds the step for);
//  - verify: the index and every file's SHA-256 (what a resume checks);
//  - load: every element back by global tensor, as one rank and as each of
//    two tensor-parallel ranks (a resume under another layout).
// Figures are MB/s of checkpoint bytes (12 per parameter). The files are
// written under --dir (default /tmp); reads come from the page cache unless
// --cold drops it first (root only). --quick runs a tiny model once.
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>

#include <fmt/format.h>

#include "checkpoint/chunks.h"
#include "checkpoint/store.h"
#include "machine_info.h"
#include "model/config.h"

namespace {

using namespace avf;
using Clock = std::chrono::steady_clock;

auto Seconds(Clock::time_point since) -> double { return std::chrono::duration<double>(Clock::now() - since).count(); }

auto Gpt2_124m() -> model::ModelConfig { return {model::Arch::Gpt2, 12, 768, 12, 12, 3072, 50257, 1024, true, 1e4}; }
auto Tiny() -> model::ModelConfig { return {model::Arch::Gpt2, 2, 32, 4, 4, 128, 384, 32, true, 1e4}; }

void Check(llvm::Error e) {
  if (!e) return;
  std::fprintf(stderr, "checkpoint_io: %s\n", llvm::toString(std::move(e)).c_str());
  std::exit(1);
}
template <typename T>
auto Check(llvm::Expected<T> v) -> T {
  if (!v) Check(v.takeError());
  return std::move(*v);
}

void DropPageCache() {
  sync();
  FILE* f = std::fopen("/proc/sys/vm/drop_caches", "w");
  if (!f || std::fputs("3", f) < 0 || std::fclose(f) != 0) {
    std::fprintf(stderr, "checkpoint_io: --cold needs root (cannot write /proc/sys/vm/drop_caches)\n");
    std::exit(1);
  }
}

struct Figures {
  double first_snapshot = 0, snapshot = 0, write = 0, verify = 0, load_one = 0, load_tp2 = 0;
};

auto Measure(const model::ModelConfig& c, const std::string& dir, bool cold) -> Figures {
  model::ParamLayout layout = model::LayoutOf(c);
  optim::ElementRun all{0, layout.total};
  std::vector<float> live[3];
  for (int k = 0; k < 3; ++k) {
    live[k].resize(static_cast<size_t>(layout.total));
    for (size_t i = 0; i < live[k].size(); ++i) live[k][i] = static_cast<float>(i % 977) * 1e-3f + k;
  }
  Figures f;
  // As Engine::SaveState(into): the first checkpoint's copy touches new
  // memory, the later ones reuse it.
  Clock::time_point start = Clock::now();
  std::vector<float> snapshot[3];
  for (int k = 0; k < 3; ++k) snapshot[k] = live[k];
  f.first_snapshot = Seconds(start);
  start = Clock::now();
  for (int k = 0; k < 3; ++k) std::memcpy(snapshot[k].data(), live[k].data(), live[k].size() * sizeof(float));
  f.snapshot = Seconds(start);
  std::string step = checkpoint::StepDir(dir, 1);
  start = Clock::now();
  checkpoint::SavePlan plan =
      checkpoint::PlanSave({&layout, 0, true, all}, {{checkpoint::StateKind::Param, all, snapshot[0]},
                                                     {checkpoint::StateKind::AdamM, all, snapshot[1]},
                                                     {checkpoint::StateKind::AdamV, all, snapshot[2]}});
  Check(checkpoint::WriteRank(step, 0, plan));
  checkpoint::Index meta;
  meta.step = 1, meta.origin.job = "bench", meta.origin.model = c, meta.origin.precision = "fp32";
  meta.data = {"bench", 1 << 20, 8, c.seq_len, 1, 0, 8};
  Check(checkpoint::Commit(step, 1, meta));
  f.write = Seconds(start);
  if (cold) DropPageCache();
  start = Clock::now();
  checkpoint::Index index = Check(checkpoint::OpenIndex(step));
  for (size_t i = 0; i < index.files.size(); ++i) Check(checkpoint::VerifyFile(step, index, i));
  f.verify = Seconds(start);
  if (cold) DropPageCache();
  start = Clock::now();
  checkpoint::DirectorySource source(step, index);
  for (checkpoint::StateKind kind : checkpoint::kStateKinds) {
    std::vector<float> back = Check(checkpoint::LoadArray(index, source, layout, kind, all));
    if (std::memcmp(back.data(), live[static_cast<int>(kind)].data(), back.size() * 4) != 0) {
      std::fprintf(stderr, "checkpoint_io: the loaded values are not the saved ones\n");
      std::exit(1);
    }
  }
  f.load_one = Seconds(start);
  start = Clock::now();
  checkpoint::LoadScratch scratch;
  for (int64_t t = 0; t < 2; ++t) {
    model::ShardSpec shard;
    shard.tensor_rank = t, shard.tensor_size = 2;
    model::ParamLayout part = model::LayoutOf(c, shard);
    for (checkpoint::StateKind kind : checkpoint::kStateKinds) {
      Check(checkpoint::LoadArray(index, source, part, kind, {0, part.total}, &scratch));
    }
  }
  f.load_tp2 = Seconds(start);
  std::filesystem::remove_all(step);
  return f;
}

}  // namespace

auto main(int argc, char** argv) -> int {
  bool quick = false, cold = false;
  std::string dir = "/tmp";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--quick") quick = true;
    else if (a == "--cold") cold = true;
    else if (a == "--dir" && i + 1 < argc) dir = argv[++i];
    else {
      std::fprintf(stderr, "usage: checkpoint_io [--quick] [--cold] [--dir DIR]\n");
      return 2;
    }
  }
  model::ModelConfig c = quick ? Tiny() : Gpt2_124m();
  std::string work = dir + fmt::format("/checkpoint_io.{}", getpid());
  std::filesystem::create_directories(work);
  bench::MachineInfo m = bench::DescribeMachine();
  int64_t parameters = model::LayoutOf(c).total;
  double mb = 12.0 * static_cast<double>(parameters) / 1e6;
  std::printf("machine: %s, %d cores; files in %s (%s page cache)\n", m.cpu.c_str(), m.cores, dir.c_str(),
              cold ? "dropped" : "warm");
  std::printf("model: %s, %lld parameters: a checkpoint of %.1f MB (parameters, AdamW m and v, fp32)\n",
              quick ? "tiny GPT-2" : "GPT-2 124M", static_cast<long long>(parameters), mb);
  Figures f = Measure(c, work, cold);
  std::filesystem::remove_all(work);
  auto line = [&](const char* what, double s) { std::printf("  %-58s %8.3f s  %8.0f MB/s\n", what, s, mb / s); };
  line("snapshot to host memory, first checkpoint (new memory)", f.first_snapshot);
  line("snapshot to host memory, later checkpoints (async hold)", f.snapshot);
  line("write: chunks + SHA-256 + fsync, index, COMMITTED", f.write);
  line("verify: index and every file's SHA-256", f.verify);
  line("load as one rank (cut as written: read straight)", f.load_one);
  line("load as two tensor-parallel ranks (tensors assembled)", f.load_tp2);
  return 0;
}

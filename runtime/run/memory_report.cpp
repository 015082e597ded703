#include "run/memory_report.h"

#include <sys/resource.h>

#include <fmt/format.h>
#include <llvm/Support/FileSystem.h>

namespace avf::run {

namespace {

auto PeakRssBytes() -> int64_t {
  struct rusage u {};
  return getrusage(RUSAGE_SELF, &u) == 0 ? static_cast<int64_t>(u.ru_maxrss) * 1024 : -1;
}

}  // namespace

auto ByteSize(double bytes) -> std::string {
  const char* units[] = {"B", "KB", "MB", "GB", "TB"};
  int u = 0;
  while (bytes >= 1000 && u < 4) bytes /= 1000, ++u;
  return u == 0 ? fmt::format("{:.0f} {}", bytes, units[u]) : fmt::format("{:.3g} {}", bytes, units[u]);
}

auto WriteMemoryReport(const std::string& run_dir, int64_t rank, const runtime::RunPlan& plan,
                       const train::TrainResult& result) -> llvm::Error {
  const parallel::Engine::MemoryUse& m = result.memory;
  const runtime::PlanPredicted::Memory& p = plan.predicted.memory_breakdown_bytes;
  std::string path = fmt::format("{}/memory_rank_{:05d}.json", run_dir, rank);
  std::error_code ec;
  llvm::raw_fd_ostream out(path, ec);
  if (ec) return llvm::createStringError(ec, "%s: %s", path.c_str(), ec.message().c_str());
  out << fmt::format(
      "{{\"rank\":{},\"stage\":{},\"weights\":{},\"gradients\":{},\"optimizer\":{},\"activations\":{},\"scratch\":{},"
      "\"peak_rss\":{},\"predicted\":{{\"weights\":{},\"gradients\":{},\"optimizer\":{},\"activations\":{},"
      "\"buffers\":{}}}}}\n",
      rank, result.stage, m.weights, m.gradients, m.optimizer, m.activations, m.scratch, PeakRssBytes(), p.weights,
      p.gradients, p.optimizer, p.activations, p.buffers);
  out.close();
  if (out.has_error()) return llvm::createStringError(out.error(), "%s: cannot write", path.c_str());
  return llvm::Error::success();
}

void PrintMemory(llvm::raw_ostream& os, int64_t rank, const runtime::RunPlan& plan, const train::TrainResult& result) {
  const parallel::Engine::MemoryUse& m = result.memory;
  const runtime::PlanPredicted::Memory& p = plan.predicted.memory_breakdown_bytes;
  os << fmt::format(
      "memory of rank {} (stage {}): weights {}, gradients {}, optimizer {}, activations {} (+ {} "
      "scratch, peak RSS {}); the planner's largest stage: weights {}, gradients {}, optimizer {}, "
      "activations {}\n",
      rank, result.stage, ByteSize(m.weights), ByteSize(m.gradients), ByteSize(m.optimizer), ByteSize(m.activations),
      ByteSize(m.scratch), ByteSize(PeakRssBytes()), ByteSize(p.weights), ByteSize(p.gradients), ByteSize(p.optimizer),
      ByteSize(p.activations));
}

}  // namespace avf::run

#include "train/run_starts.h"

#include <fstream>

#include <fmt/format.h>
#include <llvm/Support/FileSystem.h>

namespace avf::train {

auto RecordStart(const std::string& run_dir, int rank, int64_t step, double unix_s) -> llvm::Expected<int64_t> {
  std::string dir = run_dir + "/starts";
  if (std::error_code ec = llvm::sys::fs::create_directories(dir)) {
    return llvm::createStringError(ec, "%s: %s", dir.c_str(), ec.message().c_str());
  }
  std::string path = fmt::format("{}/rank_{:05d}", dir, rank);
  int64_t before = 0;
  {
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) before += line.empty() ? 0 : 1;
  }
  std::ofstream out(path, std::ios::app);
  out << fmt::format("{:.3f} {}\n", unix_s, step);
  out.flush();
  if (!out) return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s: cannot append", path.c_str());
  return before;
}

}  // namespace avf::train

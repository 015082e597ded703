// What bench/train_cpu prints about the machine it measured on and the
// memory the process took: the CPU's model name and the feature flags that
// decide which GEMM kernels can run, the cores this process may use, and
// the peak resident set size (Linux: /proc/cpuinfo, /proc/self/status).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace avf::bench {

struct MachineInfo {
  std::string cpu;                 // "model name" of /proc/cpuinfo ("unknown" if absent)
  int cores = 0;                   // CPUs in this process's affinity mask
  std::vector<std::string> flags;  // those of avx2, avx512f, avx512_bf16, amx_bf16 the CPU has
  auto Has(const std::string& flag) const -> bool;
};
auto DescribeMachine() -> MachineInfo;

// VmHWM of /proc/self/status in bytes: the peak resident set since the
// process started or since the last ResetPeakRss (-1 if unreadable).
auto PeakRssBytes() -> int64_t;
// Returns freed heap memory to the system and restarts the peak at the
// current resident set (/proc/self/clear_refs); false if it could not.
auto ResetPeakRss() -> bool;

// How many cores other processes kept busy over an interval (a shared
// machine's load): the machine's busy time (/proc/stat) minus this process's
// CPU time (getrusage), over the wall time.
class OtherLoad {
 public:
  OtherLoad();  // the interval starts
  auto CoresSinceStart() const -> double;

 private:
  double busy_ = 0, own_ = 0;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace avf::bench

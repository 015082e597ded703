#include "machine_info.h"

#include <malloc.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <sstream>

namespace avf::bench {

namespace {

// The value after "key<spaces>:" on the first line of `path` starting with key.
auto FirstValue(const char* path, const std::string& key) -> std::string {
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(key, 0) != 0) continue;
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    size_t start = line.find_first_not_of(" \t", colon + 1);
    return start == std::string::npos ? "" : line.substr(start);
  }
  return "";
}

// Seconds all CPUs spent busy since boot (/proc/stat's first line: user,
// nice, system, idle, iowait, irq, softirq, steal, in clock ticks).
auto MachineBusySeconds() -> double {
  std::ifstream in("/proc/stat");
  std::string cpu;
  double user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
  in >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal;
  return (user + nice + system + irq + softirq + steal) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

auto OwnCpuSeconds() -> double {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_usec); };
  return seconds(u.ru_utime) + seconds(u.ru_stime);
}

}  // namespace

auto MachineInfo::Has(const std::string& flag) const -> bool {
  return std::find(flags.begin(), flags.end(), flag) != flags.end();
}

auto DescribeMachine() -> MachineInfo {
  MachineInfo m;
  m.cpu = FirstValue("/proc/cpuinfo", "model name");
  if (m.cpu.empty()) m.cpu = "unknown";
  cpu_set_t set;
  m.cores = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 0;
  std::istringstream flags(FirstValue("/proc/cpuinfo", "flags"));
  std::vector<std::string> all{std::istream_iterator<std::string>(flags), std::istream_iterator<std::string>()};
  for (const char* wanted : {"avx2", "avx512f", "avx512_bf16", "amx_bf16"}) {
    if (std::find(all.begin(), all.end(), wanted) != all.end()) m.flags.emplace_back(wanted);
  }
  return m;
}

auto PeakRssBytes() -> int64_t {
  std::string kb = FirstValue("/proc/self/status", "VmHWM");  // "123456 kB"
  return kb.empty() ? -1 : std::stoll(kb) * 1024;
}

auto ResetPeakRss() -> bool {
  malloc_trim(0);
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
  clear.flush();
  return static_cast<bool>(clear);
}

OtherLoad::OtherLoad() : busy_(MachineBusySeconds()), own_(OwnCpuSeconds()), start_(std::chrono::steady_clock::now()) {}

auto OtherLoad::CoresSinceStart() const -> double {
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  double others = (MachineBusySeconds() - busy_) - (OwnCpuSeconds() - own_);
  return wall > 0 ? std::max(0.0, others / wall) : 0;
}

}  // namespace avf::bench

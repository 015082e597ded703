#include "plan_format/launch.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <system_error>

namespace avf::plan_format {

auto IsLaunchVariable(std::string_view name) -> bool {
  for (const char* v : kRankVariables) {
    if (name == v) return true;
  }
  return name.substr(0, 4) == "PET_" || name == kEnvJobToken || name == kEnvJobTokenFile || name == kEnvSupervisorPid ||
         name == kEnvNodeSlot || name == kEnvNodeCountChanges;
}

auto SecondsProblem(const std::string& text, double lo, double hi) -> std::string {
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (!text.empty() && *end == '\0' && std::isfinite(v) && v >= lo && v <= hi) return "";
  std::ostringstream why;
  why << '`' << text << "` is not a number of seconds from " << lo << " to " << hi;
  return why.str();
}

auto SeedProblem(const std::string& text) -> std::string {
  uint64_t v = 0;
  const char* end = text.data() + text.size();
  auto [at, ec] = std::from_chars(text.data(), end, v);
  if (!text.empty() && ec == std::errc() && at == end) return "";
  return "`" + text + "` is not a seed: a whole number from 0 to " + std::to_string(UINT64_MAX);
}

}  // namespace avf::plan_format

// The preflight reports as store values, and the arithmetic and spelling of
// bandwidths, times and sizes. The verdict is in preflight_verdict.cpp.
#include <charconv>
#include <cmath>

#include <fmt/format.h>

#include "run/preflight_report.h"

namespace avf::run::preflight {

namespace {

auto Error(std::string message) -> llvm::Error {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s", message.c_str());
}

// A value on one line: a newline or tab (the port fields' separator) would
// split it.
auto Clean(std::string_view value) -> std::string {
  std::string out(value);
  for (char& c : out) {
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  }
  return out;
}

void Field(std::string& out, std::string_view key, std::string_view value) {
  out += fmt::format("{}={}\n", key, Clean(value));
}

void Seconds(std::string& out, std::string_view key, const std::optional<double>& s) {
  if (s) out += fmt::format("{}={}\n", key, *s);
}

struct Line {
  std::string_view key, value;
};

auto Lines(std::string_view text) -> std::vector<Line> {
  std::vector<Line> lines;
  while (!text.empty()) {
    size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    size_t eq = line.find('=');
    if (eq != std::string_view::npos) lines.push_back({line.substr(0, eq), line.substr(eq + 1)});
  }
  return lines;
}

auto Int(std::string_view text) -> std::optional<int64_t> {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

auto Double(std::string_view text) -> std::optional<double> {
  double v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(v) || v < 0) return std::nullopt;
  return v;
}

auto Split(std::string_view text, char sep) -> std::vector<std::string> {
  std::vector<std::string> parts;
  for (;;) {
    size_t at = text.find(sep);
    parts.emplace_back(text.substr(0, at));
    if (at == std::string_view::npos) return parts;
    text = text.substr(at + 1);
  }
}

auto EncodePort(const PortState& p) -> std::string {
  return fmt::format("{}\t{}\t{}\t{}\t{}", Clean(p.device), p.port, Clean(p.state), Clean(p.phys_state), Clean(p.rate));
}

auto DecodePort(std::string_view text) -> std::optional<PortState> {
  std::vector<std::string> f = Split(text, '\t');
  if (f.size() != 5) return std::nullopt;
  auto port = Int(f[1]);
  if (!port) return std::nullopt;
  return PortState{.device = f[0], .port = static_cast<int>(*port), .state = f[2], .phys_state = f[3], .rate = f[4]};
}

auto Missing(std::string_view what, std::string_view key) -> llvm::Error {
  return Error(fmt::format("a preflight {} report without its `{}`", what, key));
}

}  // namespace

auto Encode(const RankCheck& c) -> std::string {
  std::string out;
  Field(out, "rank", std::to_string(c.rank));
  Field(out, "device", c.device);
  if (!c.problem.empty()) Field(out, "problem", c.problem);
  return out;
}

auto Encode(const NodeCheck& c) -> std::string {
  std::string out;
  Field(out, "node", std::to_string(c.node));
  Field(out, "host", c.host);
  Field(out, "checked", c.ports.checked ? "1" : "0");
  Field(out, "note", c.ports.note);
  for (const PortState& p : c.ports.ports) out += "port=" + EncodePort(p) + "\n";
  for (const std::string& p : c.ports.problems) Field(out, "problem", p);
  return out;
}

auto Encode(const RankTiming& t) -> std::string {
  std::string out;
  Field(out, "rank", std::to_string(t.rank));
  Seconds(out, "node_s", t.node_s);
  Seconds(out, "world_s", t.world_s);
  if (!t.problem.empty()) Field(out, "problem", t.problem);
  return out;
}

auto DecodeRankCheck(std::string_view text) -> llvm::Expected<RankCheck> {
  RankCheck c;
  std::optional<int64_t> rank;
  for (const Line& l : Lines(text)) {
    if (l.key == "rank") rank = Int(l.value);
    else if (l.key == "device") c.device = l.value;
    else if (l.key == "problem") c.problem = l.value;
  }
  if (!rank) return Missing("device", "rank");
  c.rank = *rank;
  return c;
}

auto DecodeNodeCheck(std::string_view text) -> llvm::Expected<NodeCheck> {
  NodeCheck c;
  std::optional<int64_t> node;
  for (const Line& l : Lines(text)) {
    if (l.key == "node") {
      node = Int(l.value);
    } else if (l.key == "host") {
      c.host = l.value;
    } else if (l.key == "checked") {
      c.ports.checked = l.value == "1";
    } else if (l.key == "note") {
      c.ports.note = l.value;
    } else if (l.key == "problem") {
      c.ports.problems.emplace_back(l.value);
    } else if (l.key == "port") {
      auto port = DecodePort(l.value);
      if (!port)
        return Error(fmt::format("a preflight port line `{}` is not DEVICE, PORT, STATE, PHYS, RATE", l.value));
      c.ports.ports.push_back(std::move(*port));
    }
  }
  if (!node) return Missing("node", "node");
  c.node = *node;
  return c;
}

auto DecodeRankTiming(std::string_view text) -> llvm::Expected<RankTiming> {
  RankTiming t;
  std::optional<int64_t> rank;
  for (const Line& l : Lines(text)) {
    if (l.key == "rank") rank = Int(l.value);
    else if (l.key == "node_s") t.node_s = Double(l.value);
    else if (l.key == "world_s") t.world_s = Double(l.value);
    else if (l.key == "problem") t.problem = l.value;
  }
  if (!rank) return Missing("timing", "rank");
  t.rank = *rank;
  return t;
}

auto AlgorithmGbps(uint64_t bytes, double seconds) -> double {
  return seconds > 0 ? static_cast<double>(bytes) / seconds / 1e9 : 0;
}

auto BusGbps(uint64_t bytes, int64_t ranks, double seconds) -> double {
  if (ranks < 2) return 0;
  double n = static_cast<double>(ranks);
  return 2 * (n - 1) / n * AlgorithmGbps(bytes, seconds);
}

auto FormatGbps(double gbps) -> std::string {
  if (gbps >= 100) return fmt::format("{:.0f}", gbps);
  if (gbps >= 10) return fmt::format("{:.1f}", gbps);
  return fmt::format("{:.2f}", gbps);
}

auto FormatSeconds(double seconds) -> std::string {
  if (seconds >= 1) return fmt::format("{:.2f} s", seconds);
  double ms = seconds * 1e3;
  if (ms >= 100) return fmt::format("{:.0f} ms", ms);
  if (ms >= 10) return fmt::format("{:.1f} ms", ms);
  return fmt::format("{:.3f} ms", ms);
}

auto FormatBytes(uint64_t bytes) -> std::string {
  constexpr uint64_t kKiB = 1024, kMiB = kKiB * 1024, kGiB = kMiB * 1024;
  if (bytes >= kGiB && bytes % kGiB == 0) return fmt::format("{} GiB", bytes / kGiB);
  if (bytes >= kMiB && bytes % kMiB == 0) return fmt::format("{} MiB", bytes / kMiB);
  if (bytes >= kKiB && bytes % kKiB == 0) return fmt::format("{} KiB", bytes / kKiB);
  return fmt::format("{} bytes", bytes);
}

auto EncodeProblems(const Verdict& v) -> std::string {
  std::string out;
  Field(out, "verdict", v.passed() ? "passed" : "failed");
  for (const std::string& p : v.problems) Field(out, "problem", p);
  return out;
}

auto DecodeProblems(std::string_view text) -> std::vector<std::string> {
  std::vector<std::string> problems;
  for (const Line& l : Lines(text)) {
    if (l.key == "problem") problems.emplace_back(l.value);
  }
  return problems;
}

}  // namespace avf::run::preflight

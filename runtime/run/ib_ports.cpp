#include "run/ib_ports.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "io/regular_file.h"

namespace avf::run {

namespace {

namespace fs = std::filesystem;

auto Error(std::string message) -> llvm::Error {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s", message.c_str());
}

auto ParsePort(std::string_view text) -> std::optional<int> {
  int port = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), port);
  if (ec != std::errc() || end != text.data() + text.size() || port < 1 || port > 255) return std::nullopt;
  return port;
}

auto SpellEntry(const HcaEntry& e) -> std::string { return e.port ? fmt::format("{}:{}", e.name, *e.port) : e.name; }

// The folder's entries, sorted; nullopt when it cannot be listed.
auto ListFolder(const fs::path& dir) -> std::optional<std::vector<std::string>> {
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec) return std::nullopt;
  std::vector<std::string> names;
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    if (ec) return std::nullopt;
    names.push_back(it->path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// A sysfs attribute: a few bytes of text, without the trailing newline.
auto ReadAttribute(const fs::path& path) -> llvm::Expected<std::string> {
  auto file = io::RegularFile::Open(path.string());
  if (!file) return file.takeError();
  std::string text(4096, '\0');
  ssize_t n;
  do n = read(file->fd(), text.data(), text.size());
  while (n < 0 && errno == EINTR);
  if (n < 0) return Error(std::strerror(errno));
  text.resize(static_cast<size_t>(n));
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

// "4: ACTIVE" -> "ACTIVE", "5: LinkUp" -> "LinkUp"; other text unchanged.
auto StateName(std::string_view text) -> std::string {
  size_t colon = text.find(": ");
  return std::string(colon == std::string_view::npos ? text : text.substr(colon + 2));
}

// "400 Gb/sec (4X NDR)" -> "400 Gb/sec".
auto RateText(std::string_view text) -> std::string {
  size_t paren = text.find(" (");
  return std::string(paren == std::string_view::npos ? text : text.substr(0, paren));
}

struct Port {
  std::string device;
  int port = 0;
};

// Every port of every adapter under `dir`, by adapter name then port.
auto AllPorts(const fs::path& dir) -> std::vector<Port> {
  std::vector<Port> ports;
  for (const std::string& device : ListFolder(dir).value_or(std::vector<std::string>{})) {
    std::vector<int> numbers;
    for (const std::string& name : ListFolder(dir / device / "ports").value_or(std::vector<std::string>{})) {
      if (auto port = ParsePort(name)) numbers.push_back(*port);
    }
    std::sort(numbers.begin(), numbers.end());
    for (int port : numbers) ports.push_back({device, port});
  }
  return ports;
}

// "mlx5_0:1, mlx5_1:1 and 6 more".
auto ListPorts(const std::vector<Port>& ports) -> std::string {
  constexpr size_t kShown = 8;
  std::string out;
  for (size_t i = 0; i < ports.size() && i < kShown; ++i) {
    out += fmt::format("{}{}:{}", i == 0 ? "" : ", ", ports[i].device, ports[i].port);
  }
  if (ports.size() > kShown) out += fmt::format(" and {} more", ports.size() - kShown);
  return out.empty() ? "none" : out;
}

auto ReadPort(const fs::path& dir, const Port& p, std::vector<std::string>& problems) -> PortState {
  PortState s{.device = p.device, .port = p.port};
  fs::path folder = dir / p.device / "ports" / std::to_string(p.port);
  auto state = ReadAttribute(folder / "state");
  if (!state) {
    problems.push_back(fmt::format("port {}: cannot read {}: {}", s.name(), (folder / "state").string(),
                                   llvm::toString(state.takeError())));
    s.state = "UNREADABLE";
    return s;
  }
  s.state = StateName(*state);
  if (auto phys = ReadAttribute(folder / "phys_state")) s.phys_state = StateName(*phys);
  else llvm::consumeError(phys.takeError());
  if (auto rate = ReadAttribute(folder / "rate")) s.rate = RateText(*rate);
  else llvm::consumeError(rate.takeError());
  if (!s.active()) {
    problems.push_back(fmt::format("port {} is {}{}", s.name(), s.state,
                                   s.phys_state.empty() ? "" : fmt::format(" (physical state {})", s.phys_state)));
  }
  return s;
}

// NCCL ignores an entry that matches nothing; the job would run without the
// adapter the cluster declared.
void CheckEntries(const HcaList& list, const std::vector<Port>& all, const fs::path& dir,
                  std::vector<std::string>& problems) {
  if (list.exclude) return;
  for (const HcaEntry& e : list.entries) {
    bool found = std::any_of(all.begin(), all.end(), [&](const Port& p) { return Matches(list, e, p.device, p.port); });
    if (!found) {
      problems.push_back(fmt::format("NCCL_IB_HCA names {}`{}`, which matches no adapter port under {} (there: {})",
                                     list.exact ? "" : "the prefix ", SpellEntry(e), dir.string(), ListPorts(all)));
    }
  }
}

}  // namespace

auto PortState::name() const -> std::string { return fmt::format("{}:{}", device, port); }

auto ParseHcaList(std::string_view text) -> llvm::Expected<HcaList> {
  HcaList list;
  if (!text.empty() && text.front() == '^') list.exclude = true, text.remove_prefix(1);
  if (!text.empty() && text.front() == '=') list.exact = true, text.remove_prefix(1);
  while (!text.empty()) {
    size_t comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    if (item.empty()) continue;
    HcaEntry entry;
    size_t colon = item.find(':');
    entry.name = std::string(item.substr(0, colon));
    if (colon != std::string_view::npos) {
      entry.port = ParsePort(item.substr(colon + 1));
      if (!entry.port || entry.name.empty()) {
        return Error(
            fmt::format("NCCL_IB_HCA: `{}` is not ADAPTER or ADAPTER:PORT (a port number from 1 to 255)", item));
      }
    }
    list.entries.push_back(std::move(entry));
  }
  return list;
}

auto Matches(const HcaList& list, const HcaEntry& entry, std::string_view device, int port) -> bool {
  bool name = list.exact ? device == entry.name : device.starts_with(entry.name);
  return name && (!entry.port || *entry.port == port);
}

auto Selected(const HcaList& list, std::string_view device, int port) -> bool {
  bool matched = list.entries.empty() || std::any_of(list.entries.begin(), list.entries.end(),
                                                     [&](const HcaEntry& e) { return Matches(list, e, device, port); });
  return matched != list.exclude;
}

auto DecidePortScope(const std::optional<std::string>& ib_hca, const std::optional<std::string>& ib_disable,
                     const std::optional<std::string>& network) -> llvm::Expected<PortScope> {
  PortScope scope;
  // NCCL reads the variable as an integer; text that is not one counts as 0.
  if (ib_disable && std::strtoll(ib_disable->c_str(), nullptr, 10) != 0) {
    scope.note = fmt::format("NCCL_IB_DISABLE={}: NCCL uses TCP sockets", *ib_disable);
    return scope;
  }
  if (ib_hca && !ib_hca->empty()) {
    auto list = ParseHcaList(*ib_hca);
    if (!list) return list.takeError();
    scope.kind = PortScope::Kind::kListed;
    scope.list = std::move(*list);
    scope.note = fmt::format("NCCL_IB_HCA={}", *ib_hca);
    return scope;
  }
  if (ib_disable) {
    scope.kind = PortScope::Kind::kEvery;
    scope.note = "NCCL_IB_DISABLE=0 and no NCCL_IB_HCA: every adapter";
    return scope;
  }
  scope.note = network ? "NCCL_IB_HCA and NCCL_IB_DISABLE unset: set NCCL_IB_DISABLE=0 to check every adapter"
                       : "the plan names no network";
  return scope;
}

auto SysfsRoot() -> std::string {
  const char* root = std::getenv("AVF_SYSFS_ROOT");
  return root && *root ? root : "/sys";
}

auto CheckPorts(const std::string& sysfs_root, const PortScope& scope) -> PortCheck {
  PortCheck out{.checked = scope.kind != PortScope::Kind::kSkip, .note = scope.note};
  if (!out.checked) return out;
  fs::path dir = fs::path(sysfs_root) / "class" / "infiniband";
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    out.problems.push_back(fmt::format("{} does not exist: no InfiniBand or RoCE adapter driver is loaded ({})",
                                       dir.string(), scope.note));
    return out;
  }
  std::vector<Port> all = AllPorts(dir);
  if (scope.kind == PortScope::Kind::kListed) CheckEntries(scope.list, all, dir, out.problems);
  for (const Port& p : all) {
    if (scope.kind == PortScope::Kind::kEvery || Selected(scope.list, p.device, p.port)) {
      out.ports.push_back(ReadPort(dir, p, out.problems));
    }
  }
  if (out.ports.empty() && out.problems.empty()) {
    out.problems.push_back(
        fmt::format("{} leaves NCCL no adapter port under {} (there: {})", scope.note, dir.string(), ListPorts(all)));
  }
  return out;
}

}  // namespace avf::run

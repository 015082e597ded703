#include "emit/k8s_names.h"

#include <cstdint>

#include <fmt/format.h>

namespace avf::emit {

namespace {

auto IsLower(char c) -> bool { return c >= 'a' && c <= 'z'; }
auto IsDigit(char c) -> bool { return c >= '0' && c <= '9'; }

// FNV-1a: stable across platforms and runs, unlike std::hash.
auto Fnv1a(std::string_view text) -> uint32_t {
  uint32_t h = 2166136261u;
  for (char c : text) {
    h ^= static_cast<uint8_t>(c);
    h *= 16777619u;
  }
  return h;
}

auto TrimDashes(std::string s) -> std::string {
  while (!s.empty() && s.back() == '-') s.pop_back();
  size_t start = 0;
  while (start < s.size() && s[start] == '-') ++start;
  return s.substr(start);
}

}  // namespace

auto IsDns1123Label(std::string_view name) -> bool {
  if (name.empty() || name.size() > kMaxLabelLength) return false;
  for (char c : name) {
    if (!IsLower(c) && !IsDigit(c) && c != '-') return false;
  }
  return name.front() != '-' && name.back() != '-';
}

auto IsDns1035Label(std::string_view name) -> bool { return IsDns1123Label(name) && IsLower(name.front()); }

auto Dns1035Label(std::string_view name, size_t max_length) -> std::optional<std::string> {
  std::string out;
  for (char c : name) {
    char lower = c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
    if (IsLower(lower) || IsDigit(lower)) out += lower;
    else if (!out.empty() && out.back() != '-') out += '-';  // `_`, '.', anything else
  }
  out = TrimDashes(out);
  size_t start = 0;
  while (start < out.size() && !IsLower(out[start])) ++start;  // must start with a letter
  out = TrimDashes(out.substr(start));
  if (out.empty() || max_length < 10) return std::nullopt;
  if (out.size() > max_length) {
    std::string suffix = fmt::format("-{:08x}", Fnv1a(name));
    out = TrimDashes(out.substr(0, max_length - suffix.size())) + suffix;
  }
  return out;
}

}  // namespace avf::emit

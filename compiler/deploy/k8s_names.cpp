#include "deploy/k8s_names.h"

#include <cstdint>

#include <fmt/format.h>

namespace avf::deploy {

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

auto IsAlnum(char c) -> bool { return IsLower(c) || IsDigit(c) || (c >= 'A' && c <= 'Z'); }

// A qualified name's name part: [A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?, at most 63.
auto QualifiedPartProblem(std::string_view name) -> std::string {
  if (name.empty()) return "the name part is empty";
  if (name.size() > kMaxLabelLength) return fmt::format("the name part is {} characters, more than 63", name.size());
  if (!IsAlnum(name.front()) || !IsAlnum(name.back())) return "it must start and end with a letter or digit";
  for (char c : name) {
    if (!IsAlnum(c) && c != '-' && c != '_' && c != '.') return fmt::format("`{}` is not allowed in it", c);
  }
  return "";
}

}  // namespace

auto IsDns1123Subdomain(std::string_view name) -> bool {
  if (name.empty() || name.size() > 253) return false;
  size_t start = 0;
  while (true) {
    size_t dot = name.find('.', start);
    std::string_view part = name.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    if (!IsDns1123Label(part)) return false;
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

auto LabelKeyProblem(std::string_view key) -> std::string {
  size_t slash = key.find('/');
  if (slash != std::string_view::npos) {
    std::string_view prefix = key.substr(0, slash);
    if (!IsDns1123Subdomain(prefix)) return fmt::format("the prefix `{}` is not a DNS subdomain", prefix);
    key = key.substr(slash + 1);
  }
  return QualifiedPartProblem(key);
}

auto LabelValueProblem(std::string_view value) -> std::string {
  if (value.empty()) return "";
  return QualifiedPartProblem(value);
}

auto ResourceNameProblem(std::string_view name) -> std::string {
  size_t slash = name.find('/');
  if (slash == std::string_view::npos) return "an extended resource is named `domain/name`, e.g. `rdma/ib`";
  if (name.substr(0, slash) == "kubernetes.io" || name.substr(0, slash).ends_with(".kubernetes.io")) {
    return "the `kubernetes.io` domain is reserved for built-in resources";
  }
  return LabelKeyProblem(name);
}

auto SplitKeyValue(std::string_view text) -> KeyValue {
  KeyValue kv;
  size_t eq = text.find('=');
  kv.key = std::string(text.substr(0, eq));
  if (eq != std::string_view::npos) {
    kv.has_value = true;
    kv.value = std::string(text.substr(eq + 1));
  }
  return kv;
}

auto ParseTaint(std::string_view text, std::string& problem) -> Taint {
  Taint t;
  size_t colon = text.rfind(':');
  if (colon == std::string_view::npos) {
    problem = "a taint is written `key=value:Effect` or `key:Effect`";
    return t;
  }
  t.effect = std::string(text.substr(colon + 1));
  KeyValue kv = SplitKeyValue(text.substr(0, colon));
  t.key = kv.key;
  t.value = kv.value;
  if (t.effect != "NoSchedule" && t.effect != "PreferNoSchedule" && t.effect != "NoExecute") {
    problem = fmt::format("the effect `{}` is not `NoSchedule`, `PreferNoSchedule` or `NoExecute`", t.effect);
  } else if (std::string p = LabelKeyProblem(t.key); !p.empty()) {
    problem = fmt::format("the key `{}` is not valid: {}", t.key, p);
  } else if (std::string v = LabelValueProblem(t.value); !v.empty()) {
    problem = fmt::format("the value `{}` is not valid: {}", t.value, v);
  }
  return t;
}

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

}  // namespace avf::deploy

// Kubernetes object names derived from .avf names. Job names may hold `_`
// and upper case; Kubernetes wants DNS-1035 labels for PyTorchJob and
// Service names (lower-case letters, digits, '-', starting with a letter,
// at most 63 characters) and DNS-1123 labels/subdomains elsewhere. The
// mapping is deterministic, so re-emitting names the same objects.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace avf::deploy {

inline constexpr size_t kMaxLabelLength = 63;

// `llama7b_pretrain` -> "llama7b-pretrain"; `Big__Job` -> "big-job". A name
// too long for `max_length` is cut and given an 8-hex-digit hash of the whole
// name, so two long names never collide by truncation. nullopt when nothing
// valid is left (no letter to start with): the caller reports a diagnostic.
auto Dns1035Label(std::string_view name, size_t max_length = kMaxLabelLength) -> std::optional<std::string>;

// Whether `name` already is a DNS-1035 label / a DNS-1123 label.
auto IsDns1035Label(std::string_view name) -> bool;
auto IsDns1123Label(std::string_view name) -> bool;
// Dot-separated DNS-1123 labels, at most 253 characters (Secret, PVC,
// PriorityClass, StorageClass names).
auto IsDns1123Subdomain(std::string_view name) -> bool;

// Why `text` is not a valid label key / label value / extended resource name
// (apimachinery's validation rules); "" when it is valid.
auto LabelKeyProblem(std::string_view key) -> std::string;
auto LabelValueProblem(std::string_view value) -> std::string;
auto ResourceNameProblem(std::string_view name) -> std::string;

// `key=value` split at the first '=' (labels, `name=count` resources).
struct KeyValue {
  std::string key, value;
  bool has_value = false;
};
auto SplitKeyValue(std::string_view text) -> KeyValue;

// A node taint `key[=value]:Effect`, as `kubectl taint` writes it.
struct Taint {
  std::string key, value, effect;
};
// The taint, or the reason it is not one in `problem`.
auto ParseTaint(std::string_view text, std::string& problem) -> Taint;

}  // namespace avf::deploy

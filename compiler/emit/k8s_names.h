// Kubernetes object names derived from .avf names. Job names may hold `_`
// and upper case; Kubernetes wants DNS-1035 labels for PyTorchJob and
// Service names (lower-case letters, digits, '-', starting with a letter,
// at most 63 characters) and DNS-1123 labels/subdomains elsewhere. The
// mapping is deterministic, so re-emitting names the same objects.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace avf::emit {

inline constexpr size_t kMaxLabelLength = 63;

// `llama7b_pretrain` -> "llama7b-pretrain"; `Big__Job` -> "big-job". A name
// too long for `max_length` is cut and given an 8-hex-digit hash of the whole
// name, so two long names never collide by truncation. nullopt when nothing
// valid is left (no letter to start with): the caller reports a diagnostic.
auto Dns1035Label(std::string_view name, size_t max_length = kMaxLabelLength) -> std::optional<std::string>;

// Whether `name` already is a DNS-1035 label / a DNS-1123 label.
auto IsDns1035Label(std::string_view name) -> bool;
auto IsDns1123Label(std::string_view name) -> bool;

}  // namespace avf::emit

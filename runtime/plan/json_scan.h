// A pass over the raw text before llvm::json::parse, for what that parser
// does not guard against: it recurses once per nesting level (a file of a
// million `[` overflows the stack) and keeps the last of duplicate keys
// silently (a plan refuses them: two `rank` keys in one object are a broken
// writer, not a choice).
#pragma once

#include <optional>
#include <string>

#include <llvm/ADT/StringRef.h>

namespace avf::runtime {

// The first problem found, as "line L, column C: message"; nullopt when the
// text nests at most max_depth levels and no object repeats a key. Syntax is
// not checked here; json::parse does that next.
auto ScanJsonText(llvm::StringRef text, unsigned max_depth) -> std::optional<std::string>;

}  // namespace avf::runtime

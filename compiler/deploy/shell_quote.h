// One shell word for any text, for the commands lowering writes and the
// scripts the emitters spell.
#pragma once

#include <string>
#include <string_view>

namespace avf::deploy {

// `it's` -> `'it'\''s'`: one shell word whatever the text.
auto ShellQuote(std::string_view text) -> std::string;

}  // namespace avf::deploy

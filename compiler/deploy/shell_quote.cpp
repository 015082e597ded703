#include "deploy/shell_quote.h"

namespace avf::deploy {

auto ShellQuote(std::string_view text) -> std::string {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  return out + "'";
}

}  // namespace avf::deploy

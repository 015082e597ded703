// Phase: the tokens of one .avf file -> the same file in canonical layout
// (`aviflowc fmt`, docs/cli.md#fmt). The input must lex and parse without
// errors (the driver checks); the output has the same tokens but separators,
// and the same comments, so it means what the input meant. The rules:
//
//   - 2 spaces of indentation per `{`; no tabs; no trailing spaces; one
//     newline at the end of the file.
//   - Imports first, each on a line, sorted when no comment is among them
//     (one after a declaration, W0211, stays where it is); one blank line
//     after them and between two declarations. Inside a
//     block, one blank line is kept where the source had one or more.
//   - A declaration or record body goes on one line, its fields separated by
//     `; ` (`cluster pod { node = hgx_a100; nodes = 16 }`), when it holds no
//     record and no comment and the line fits in kWidth columns; otherwise
//     one field per line. An empty body is `{}`.
//   - ` = ` between a field and its value, ` : ` before a base, a space
//     around binary operators, none after a sign, `, ` in lists and calls
//     (no trailing comma), numbers with their units and strings as written.
//     A list or call that does not fit goes one element per line, each with
//     a trailing comma.
//   - Comments stay where they were: one after code stays at the end of that
//     line (two spaces before it), one on its own line stays on its own line,
//     at the indentation of what follows it.
#pragma once

#include <string>

#include "lex/tokenized_buffer.h"

namespace avf::format {

inline constexpr size_t kWidth = 100;

auto FormatFile(const lex::TokenizedBuffer& tokens) -> std::string;

}  // namespace avf::format

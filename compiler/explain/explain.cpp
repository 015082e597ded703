#include "explain/explain.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "diag/diagnostic.h"

namespace avf::explain {

namespace {

auto Explanations() -> const std::vector<Explanation>& {
  static const std::vector<Explanation> kAll = {
#define EXPLANATION(Code, Title, Text) {Code, Title, Text},
#include "explain/explanations.inc"
#undef EXPLANATION
  };
  return kAll;
}

constexpr const char* kListHint = "Run `aviflowc explain --list` for every code.\n";

// ` [e0501] ` -> "E0501": a code as typed or as pasted from a diagnostic.
auto Normalize(std::string_view text) -> std::string {
  auto is_space = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
  while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
  if (text.size() >= 2 && text.front() == '[' && text.back() == ']') text = text.substr(1, text.size() - 2);
  std::string code(text);
  for (char& c : code) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return code;
}

auto AllDigits(std::string_view text) -> bool {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// The number of `E0501`, `W0501` or a bare `501`; -1 for anything else.
auto CodeNumber(std::string_view code) -> int {
  if (code.size() == 5 && (code[0] == 'E' || code[0] == 'W')) code.remove_prefix(1);
  if (code.size() > 4 || !AllDigits(code)) return -1;
  return std::atoi(std::string(code).c_str());
}

// Registry codes a mistyped one may have meant: those with its number (the
// other letter, or a bare number), else the nearest below and above it.
auto NearestCodes(int number) -> std::vector<std::string_view> {
  std::vector<std::string_view> same, below, above;
  for (const diag::DiagInfo& info : diag::AllDiagInfos()) {
    int n = CodeNumber(info.code);
    if (n == number) same.push_back(info.code);
    if (n < number && (below.empty() || n > CodeNumber(below.front()))) below = {info.code};
    if (n > number && (above.empty() || n < CodeNumber(above.front()))) above = {info.code};
  }
  if (!same.empty()) return same;
  below.insert(below.end(), above.begin(), above.end());
  return below;
}

auto QuotedList(const std::vector<std::string_view>& codes) -> std::string {
  std::string list;
  for (std::string_view c : codes) list += (list.empty() ? "" : " or ") + diag::Quote(c);
  return list;
}

auto NotACode(std::string_view typed, const std::string& code, llvm::raw_ostream& err) -> int {
  std::string shown = diag::Quote(diag::ShortText(typed));
  int number = CodeNumber(code);
  if (number < 0) {
    err << "aviflowc: error: " << (code.empty() ? "the code is empty" : shown + " is not a diagnostic code")
        << "; a code is `E` or `W` and four digits, as in the `[E0501]` that ends a diagnostic\n"
        << kListHint;
    return 1;
  }
  std::vector<std::string_view> nearest = NearestCodes(number);
  bool same_number = !nearest.empty() && CodeNumber(nearest.front()) == number;
  err << "aviflowc: error: " << shown << " is not a diagnostic code; "
      << (same_number           ? "did you mean "
          : nearest.size() == 1 ? "the nearest is "
                                : "the nearest are ")
      << QuotedList(nearest) << (same_number ? "?\n" : "\n") << kListHint;
  return 1;
}

auto SeverityName(diag::Kind kind) -> std::string_view { return kind == diag::Kind::Warning ? "warning" : "error"; }

// The registry's message with `…` for its arguments.
auto MessageShape(std::string_view format) -> std::string {
  std::string shape;
  for (size_t i = 0; i < format.size(); ++i) {
    if (format.substr(i, 2) == "{{" || format.substr(i, 2) == "}}") {
      shape += format[i++];
    } else if (format[i] == '{') {
      size_t close = format.find('}', i);
      shape += "…";
      i = close == std::string_view::npos ? format.size() : close;
    } else {
      shape += format[i];
    }
  }
  return shape;
}

}  // namespace

auto FindExplanation(std::string_view code) -> const Explanation* {
  std::string wanted = Normalize(code);
  const auto& all = Explanations();
  auto it = std::find_if(all.begin(), all.end(), [&](const Explanation& e) { return e.code == wanted; });
  return it == all.end() ? nullptr : &*it;
}

auto Explain(std::string_view typed, llvm::raw_ostream& out, llvm::raw_ostream& err) -> int {
  if (const Explanation* e = FindExplanation(typed)) {
    out << e->text;
    if (!e->text.empty() && e->text.back() != '\n') out << "\n";
    return 0;
  }
  std::string code = Normalize(typed);
  for (const diag::DiagInfo& info : diag::AllDiagInfos()) {
    if (info.code != code) continue;
    err << "aviflowc: error: " << code << " has no explanation yet; its message is \"" << MessageShape(info.format)
        << "\" (docs/diagnostics.md)\n";
    return 1;
  }
  return NotACode(typed, code, err);
}

void ListCodes(llvm::raw_ostream& out) {
  std::vector<diag::DiagInfo> infos = diag::AllDiagInfos();
  std::stable_sort(infos.begin(), infos.end(), [](const diag::DiagInfo& a, const diag::DiagInfo& b) {
    return CodeNumber(a.code) < CodeNumber(b.code);
  });
  for (const diag::DiagInfo& info : infos) {
    const Explanation* e = FindExplanation(info.code);
    std::string title = e ? std::string(e->title) : MessageShape(info.format) + " (no explanation yet)";
    out << fmt::format("{}  {:<7}  {}\n", info.code, SeverityName(info.kind), title);
  }
}

}  // namespace avf::explain

#include "exposition/text_format.h"

#include <cmath>

#include <fmt/format.h>

namespace avf::exposition {

namespace {

// HELP text escapes backslash and newline; label values also the quote.
auto Escaped(const std::string& text, bool quote) -> std::string {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else if (c == '"' && quote) out += "\\\"";
    else out += c;
  }
  return out;
}

auto Value(double v) -> std::string {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  return fmt::format("{}", v);
}

void RenderSample(std::string& out, const std::string& name, const Sample& s) {
  out += name;
  if (!s.labels.empty()) {
    out += '{';
    for (size_t i = 0; i < s.labels.size(); ++i) {
      if (i > 0) out += ',';
      out += s.labels[i].first + "=\"" + Escaped(s.labels[i].second, true) + '"';
    }
    out += '}';
  }
  out += ' ' + Value(s.value) + '\n';
}

}  // namespace

auto RenderText(const std::vector<Family>& families) -> std::string {
  std::string out;
  for (const Family& f : families) {
    if (f.samples.empty()) continue;
    out += "# HELP " + f.name + ' ' + Escaped(f.help, false) + '\n';
    out += "# TYPE " + f.name + (f.type == MetricType::Counter ? " counter\n" : " gauge\n");
    for (const Sample& s : f.samples) RenderSample(out, f.name, s);
  }
  return out;
}

}  // namespace avf::exposition

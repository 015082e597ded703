#include "emit/plan_svg.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "check/check.h"
#include "emit/plan_svg_parts.h"

namespace avf::emit {

namespace {

// Tableau 10, less its grey (idle GPUs are grey).
constexpr std::string_view kStagePalette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                              "#edc948", "#b07aa1", "#ff9da7", "#9c755f"};

// HSL (hue in degrees, saturation and lightness 0..1) as #rrggbb.
auto HslColor(double hue, double saturation, double lightness) -> std::string {
  double c = (1 - std::fabs(2 * lightness - 1)) * saturation;
  double h = std::fmod(hue, 360.0) / 60.0;
  double x = c * (1 - std::fabs(std::fmod(h, 2.0) - 1));
  double rgb[3] = {0, 0, 0};
  int sector = static_cast<int>(h);
  int order[6][3] = {{0, 1, 2}, {1, 0, 2}, {2, 0, 1}, {2, 1, 0}, {1, 2, 0}, {0, 2, 1}};
  double parts[3] = {c, x, 0};
  for (int i = 0; i < 3; ++i) rgb[i] = parts[order[std::clamp(sector, 0, 5)][i]];
  double m = lightness - c / 2;
  auto byte = [&](double v) { return static_cast<int>(std::lround(std::clamp(v + m, 0.0, 1.0) * 255)); };
  return fmt::format("#{:02x}{:02x}{:02x}", byte(rgb[0]), byte(rgb[1]), byte(rgb[2]));
}

auto DrawTitle(const plan::Plan& plan, SvgWriter& svg, double width) -> double {
  const check::JobSpec& j = plan.job;
  const cost::Prediction& p = plan.chosen.prediction;
  svg.Text(kMargin, 34, fmt::format("job {}", j.name), {.size = 22, .bold = true});
  std::string setup = fmt::format("{} x {} on cluster {}: {} node{} of {} GPUs, {} leaf switch{}; model {}; {}",
                                  j.workload.gpus, j.gpu_name, j.cluster_name, plan.nodes_used,
                                  plan.nodes_used == 1 ? "" : "s", j.hardware.gpus_per_node, plan.leaves_used,
                                  plan.leaves_used == 1 ? "" : "es", j.model_name, LayoutText(plan.chosen.layout));
  std::string predicted = fmt::format(
      "predicted: {} per step; {:.1f}% MFU; {} of {} per GPU; binding: {}", DurationText(p.step_time, kNoBreakSpace),
      100 * p.mfu, check::BytesText(p.memory_per_gpu), check::BytesText(j.hardware.gpu_memory), plan.chosen.binding);
  double y = 58;
  for (const std::string& text : {setup, predicted}) {
    for (const std::string& line : WrapText(text, width - 2 * kMargin, 13)) {
      svg.Text(kMargin, y, line, {.size = 13, .fill = kMutedText});
      y += 18;
    }
  }
  return y + 6;
}

}  // namespace

auto UnitFor(double seconds) -> TimeUnit {
  if (seconds >= 1) return {};
  if (seconds >= 1e-3) return {1e-3, "ms", "milliseconds"};
  return {1e-6, "µs", "microseconds"};
}

auto DurationText(double seconds, std::string_view space) -> std::string {
  if (seconds == 0) return fmt::format("0{}s", space);
  TimeUnit unit = UnitFor(seconds);
  return fmt::format("{:.4g}{}{}", seconds / unit.seconds, space, unit.symbol);
}

auto StageColor(int64_t stage, int64_t stages) -> std::string {
  constexpr int64_t kPaletteSize = sizeof(kStagePalette) / sizeof(kStagePalette[0]);
  if (stages <= kPaletteSize) return std::string(kStagePalette[stage % kPaletteSize]);
  // More stages than distinct colours: hues around the circle, alternately
  // darker and lighter so that neighbouring stages stay apart.
  double hue = 300.0 * static_cast<double>(stage) / static_cast<double>(stages - 1);
  return HslColor(hue, 0.62, stage % 2 == 0 ? 0.48 : 0.64);
}

auto LayoutText(const cost::Layout& l) -> std::string {
  std::string text = fmt::format("tp {} · pp {} · dp {}", l.tensor, l.pipeline, l.data);
  if (l.schedule == cost::Schedule::Interleaved) text += fmt::format(" · vp {}", l.virtual_stages);
  if (l.schedule == cost::Schedule::GPipe) text += " · gpipe";
  text += fmt::format(" · zero {} · mb {}", l.zero, l.micro_batch);
  if (l.recompute != cost::Recompute::None) text += fmt::format(" · {}", cost::Name(l.recompute));
  if (l.sequence_parallel) text += " · sp";
  return text;
}

auto WrapText(std::string_view text, double width, double size) -> std::vector<std::string> {
  std::vector<std::string> lines;
  std::string line;
  size_t from = 0;
  while (from < text.size()) {
    size_t space = text.find(' ', from);
    std::string_view word = text.substr(from, space == std::string_view::npos ? text.size() - from : space - from);
    from = space == std::string_view::npos ? text.size() : space + 1;
    std::string longer = line.empty() ? std::string(word) : line + " " + std::string(word);
    if (!line.empty() && TextWidth(longer, size) > width) {
      lines.push_back(line);
      line = std::string(word);
    } else {
      line = longer;
    }
  }
  if (!line.empty()) lines.push_back(line);
  return lines;
}

auto DrawHeading(SvgWriter& svg, double top, std::string_view heading, std::string_view note) -> double {
  svg.Text(kMargin, top + 18, heading, {.size = 16, .bold = true});
  double y = top + 36;
  for (const std::string& line : WrapText(note, kPictureWidth - 2 * kMargin, 12)) {
    svg.Text(kMargin, y, line, {.size = 12, .fill = kMutedText});
    y += 16;
  }
  return y - 4;
}

auto DrawLegend(SvgWriter& svg, double left, double top, double width, const std::vector<LegendEntry>& entries)
    -> double {
  constexpr double kSwatch = 12, kSize = 12, kRow = 18;
  double x = left, y = top;
  for (const LegendEntry& e : entries) {
    double w = kSwatch + 5 + TextWidth(e.label, kSize) + 16;
    if (x > left && x + w > left + width) {
      x = left;
      y += kRow;
    }
    if (e.outlined)
      svg.Rect(x + 0.75, y + 0.75, kSwatch - 1.5, kSwatch - 1.5, "none", {.color = e.color, .width = 1.5});
    else svg.Rect(x, y, kSwatch, kSwatch, e.color);
    svg.Text(x + kSwatch + 5, y + 10.5, e.label, {.size = kSize});
    x += w;
  }
  return y + kRow;
}

auto PlanSvg(const plan::Plan& plan) -> std::string {
  SvgWriter svg;
  double width = kPictureWidth;
  double y = DrawTitle(plan, svg, width);
  y = DrawPlacement(plan, svg, y, width) + kPanelGap;
  y = DrawStep(plan, BuildTimeline(plan), svg, y, width) + kPanelGap;
  y = DrawMemory(plan, svg, y, width) + kMargin;
  return svg.Finish(width, y, fmt::format("aviflowc plan of job {}", plan.job.name));
}

}  // namespace avf::emit

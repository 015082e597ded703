// The memory panel: the predicted memory of the most loaded GPU, by kind,
// for the chosen layout and each alternative, against the GPU's capacity.
#include <algorithm>
#include <array>
#include <utility>

#include <fmt/format.h>

#include "check/check.h"
#include "emit/plan_svg_parts.h"

namespace avf::emit {

namespace {

constexpr double kRowHeight = 26;
constexpr double kBarHeight = 18;
constexpr double kMaxLabelWidth = 480;
constexpr double kTotalWidth = 96;
constexpr size_t kMaxBars = 8;

struct MemoryPart {
  std::string_view name;
  std::string_view color;
  double bytes;
};

auto PartsOf(const cost::MemoryBreakdown& m) -> std::array<MemoryPart, 5> {
  return {{{"weights", "#4e79a7", m.weights},
           {"gradients", "#f28e2b", m.gradients},
           {"optimizer", "#59a14f", m.optimizer},
           {"activations", "#e15759", m.activations},
           {"buffers", "#b07aa1", m.buffers}}};
}

struct BarScale {
  double left = 0;
  double right = 0;
  double bytes = 1;
  auto X(double b) const -> double { return left + (right - left) * b / bytes; }
};

void DrawBar(SvgWriter& svg, const BarScale& scale, const std::string& label, const plan::Candidate& c, double y,
             double capacity) {
  const cost::Prediction& p = c.prediction;
  svg.Text(scale.left - 8, y + 13, label, {.size = 11, .anchor = Anchor::End});
  double at = 0;
  for (const MemoryPart& part : PartsOf(p.memory)) {
    if (part.bytes <= 0) continue;
    double x0 = scale.X(at), x1 = scale.X(at + part.bytes);
    std::string bytes = check::BytesText(part.bytes);
    svg.OpenGroup(fmt::format("{}: {}", part.name, bytes));
    svg.Rect(x0, y, x1 - x0, kBarHeight, part.color);
    if (TextWidth(bytes, 10) + 6 <= x1 - x0) {
      svg.Text((x0 + x1) / 2, y + 13, bytes, {.size = 10, .anchor = Anchor::Middle, .fill = "#fff"});
    }
    svg.CloseGroup();
    at += part.bytes;
  }
  bool over = p.memory_per_gpu > capacity;
  std::string total = fmt::format("{}{}", check::BytesText(p.memory_per_gpu), over ? " (does not fit)" : "");
  svg.Rect(scale.X(at) + 3, y + 2, TextWidth(total, 11) + 6, kBarHeight - 4, "#fff");
  svg.Text(scale.X(at) + 6, y + 13, total, {.size = 11, .bold = over, .fill = over ? "#c00" : "#222"});
}

auto BarLabel(const std::string& which, const cost::Layout& l) -> std::string {
  return fmt::format("{}: {}", which, LayoutText(l));
}

}  // namespace

auto DrawMemory(const plan::Plan& plan, SvgWriter& svg, double top, double width) -> double {
  double capacity = plan.job.hardware.gpu_memory;
  std::vector<std::pair<std::string, const plan::Candidate*>> bars{{"chosen", &plan.chosen}};
  for (size_t i = 0; i < plan.alternatives.size() && bars.size() < kMaxBars; ++i) {
    bars.emplace_back(fmt::format("{}", i + 1), &plan.alternatives[i]);
  }
  std::string note = fmt::format(
      "the most loaded GPU's predicted memory, by kind, against the {} a GPU holds; the chosen layout{}",
      check::BytesText(capacity),
      bars.size() > 1 ? fmt::format(" and the {} best alternatives (as in `aviflowc plan`)", bars.size() - 1) : "");
  double y = DrawHeading(svg, top, "Memory per GPU", note);
  std::vector<LegendEntry> legend;
  for (const MemoryPart& part : PartsOf({})) legend.push_back({std::string(part.color), std::string(part.name)});
  y = DrawLegend(svg, kMargin, y, width - 2 * kMargin, legend) + 18;
  double most = capacity, max_total = 0, label_width = 0;
  for (const auto& [which, candidate] : bars) {
    max_total = std::max(max_total, candidate->prediction.memory_per_gpu);
    most = std::max(most, max_total);
    label_width = std::max(label_width, TextWidth(BarLabel(which, candidate->layout), 11));
  }
  // Bars far below the capacity are drawn to their own scale, so that
  // their parts can be seen; the capacity is then named, not drawn.
  bool capacity_shown = most < 4 * max_total;
  BarScale scale{kMargin + std::min(label_width, kMaxLabelWidth) + 10, width - kMargin - kTotalWidth,
                 capacity_shown ? std::max(most, 1.0) : max_total * 1.05};
  double capacity_x = scale.X(capacity);
  if (capacity_shown) {
    svg.Line(capacity_x, y - 8, capacity_x, y + kRowHeight * static_cast<double>(bars.size()),
             {.color = "#c00", .width = 1.5, .dashed = true});
    svg.Text(capacity_x, y - 11, fmt::format("capacity {}", check::BytesText(capacity)),
             {.size = 11, .anchor = Anchor::Middle, .fill = "#c00"});
  } else {
    svg.Text(scale.right + kTotalWidth, y - 11,
             fmt::format("capacity {}: far to the right of this scale", check::BytesText(capacity)),
             {.size = 11, .anchor = Anchor::End, .fill = "#c00"});
  }
  for (const auto& [which, candidate] : bars) {
    DrawBar(svg, scale, BarLabel(which, candidate->layout), *candidate, y, capacity);
    y += kRowHeight;
  }
  return y;
}

}  // namespace avf::emit

// The panels of a plan's picture (emit/plan_svg.h), each drawn below `top`
// across `width` pixels; each returns the y where the next panel may start.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "emit/pipeline_timeline.h"
#include "emit/svg_writer.h"
#include "plan/plan.h"

namespace avf::emit {

inline constexpr double kMargin = 20;
inline constexpr double kPanelGap = 28;
inline constexpr std::string_view kMutedText = "#555";
inline constexpr std::string_view kIdleColor = "#d9d9d9";

// The unit a time is read in: seconds, or milliseconds or microseconds for
// a short one.
struct TimeUnit {
  double seconds = 1;
  std::string_view symbol = "s";
  std::string_view name = "seconds";
};
auto UnitFor(double seconds) -> TimeUnit;

// Joins a number and its unit in text that may wrap.
inline constexpr std::string_view kNoBreakSpace = "\u00a0";

// "1.575 s", "91.01 µs": four significant digits in the unit that suits.
auto DurationText(double seconds, std::string_view space = " ") -> std::string;

// The colour of pipeline stage `stage` of `stages`.
auto StageColor(int64_t stage, int64_t stages) -> std::string;

// "tp 8 · pp 4 · dp 16 · vp 2 · zero 1 · mb 4 · selective · sp"
auto LayoutText(const cost::Layout& l) -> std::string;

// `text` broken at spaces into lines of at most `width` pixels (a word
// longer than that gets a line of its own).
auto WrapText(std::string_view text, double width, double size) -> std::vector<std::string>;

// A panel's heading and, below it, a line of explanation.
auto DrawHeading(SvgWriter& svg, double top, std::string_view heading, std::string_view note) -> double;

// A row of legend entries (a swatch and its label each) from `left`; returns
// the y below it. `outlined` entries are drawn as an empty box.
struct LegendEntry {
  std::string color;
  std::string label;
  bool outlined = false;
};
auto DrawLegend(SvgWriter& svg, double left, double top, double width, const std::vector<LegendEntry>& entries)
    -> double;

auto DrawPlacement(const plan::Plan& plan, SvgWriter& svg, double top, double width) -> double;
auto DrawStep(const plan::Plan& plan, const PipelineTimeline& timeline, SvgWriter& svg, double top, double width)
    -> double;
auto DrawMemory(const plan::Plan& plan, SvgWriter& svg, double top, double width) -> double;

}  // namespace avf::emit

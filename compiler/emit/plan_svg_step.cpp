// The step panel: one training step per pipeline stage on a common time
// axis (emit/pipeline_timeline.h), then the data-parallel sync and the
// optimizer step. Passes too narrow to draw one by one are drawn as runs.
#include <algorithm>
#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "emit/plan_svg_parts.h"

namespace avf::emit {

namespace {

constexpr std::string_view kForwardColor = "#5b9bd5";
constexpr std::string_view kBackwardColor = "#ed7d31";
constexpr std::string_view kCommColor = "#7b3f9e";
constexpr std::string_view kBubbleColor = "#ececec";
constexpr std::string_view kOptimizerColor = "#59a14f";
constexpr double kLabelWidth = 96;

struct Axis {
  double left = 0;
  double right = 0;
  double seconds = 1;
  auto X(double t) const -> double { return left + (right - left) * t / seconds; }
};

// A tick spacing of 1, 2 or 5 times a power of ten giving at most `most` ticks.
auto TickStep(double seconds, int most) -> double {
  double raw = seconds / most;
  double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * power >= raw) return m * power;
  }
  return 10 * power;
}

void DrawAxis(SvgWriter& svg, const Axis& axis, double y) {
  svg.Line(axis.left, y, axis.right, y, {.color = "#444"});
  TimeUnit unit = UnitFor(axis.seconds);
  double span = axis.seconds / unit.seconds, step = TickStep(span, 10);
  for (int i = 0; i * step <= span * 1.0001; ++i) {
    double x = axis.X(i * step * unit.seconds);
    svg.Line(x, y, x, y + 4, {.color = "#444"});
    svg.Text(x, y + 16, fmt::format("{:g}", i * step), {.size = 10, .anchor = Anchor::Middle});
  }
  svg.Text(axis.right, y + 30, fmt::format("{} into the step", unit.name),
           {.size = 10, .anchor = Anchor::End, .fill = kMutedText});
}

// One pass drawn whole: compute, then its communication; the micro-batch's
// number inside when there is room.
void DrawPass(SvgWriter& svg, const Axis& axis, const TimelineOp& op, double y, double h) {
  double x0 = axis.X(op.start), x1 = axis.X(op.compute_end), x2 = axis.X(op.end);
  svg.Rect(x0, y, x1 - x0, h, op.pass == Pass::Forward ? kForwardColor : kBackwardColor);
  if (x2 - x1 >= 0.5) svg.Rect(x1, y, x2 - x1, h, kCommColor);
  std::string label = fmt::format("{}", op.micro_batch);
  double size = std::min(10.0, h - 4);
  if (size >= 7 && TextWidth(label, size) + 3 <= x1 - x0) {
    svg.Text((x0 + x1) / 2, y + h / 2 + size * 0.36, label, {.size = size, .anchor = Anchor::Middle, .fill = "#fff"});
  }
}

// A block of passes drawn together: all forward, all backward, or both
// taking turns too quickly to draw apart (forward above, backward below).
void DrawBlock(SvgWriter& svg, const Axis& axis, const std::vector<TimelineOp>& ops, size_t from, size_t to, double y,
               double h) {
  bool forward = false, backward = false;
  for (size_t i = from; i < to; ++i) (ops[i].pass == Pass::Forward ? forward : backward) = true;
  double x0 = axis.X(ops[from].start), x1 = axis.X(ops[to - 1].end);
  svg.OpenGroup(
      fmt::format("{} passes, {} to {}", to - from, DurationText(ops[from].start), DurationText(ops[to - 1].end)));
  if (forward && backward) {
    svg.Rect(x0, y, x1 - x0, h / 2, kForwardColor);
    svg.Rect(x0, y + h / 2, x1 - x0, h / 2, kBackwardColor);
  } else {
    svg.Rect(x0, y, x1 - x0, h, forward ? kForwardColor : kBackwardColor);
  }
  svg.CloseGroup();
}

// Passes too narrow to draw one by one: each streak of one kind without a
// gap is a block of its colour when it is wide enough to see, and streaks
// too narrow to see (1F1B's alternation) are drawn together.
void DrawRuns(SvgWriter& svg, const Axis& axis, const std::vector<TimelineOp>& ops, double y, double h) {
  double tolerance = axis.seconds * 1e-9;
  size_t mixed = ops.size();  // first pass of the pending block of narrow streaks
  for (size_t i = 0; i < ops.size();) {
    size_t end = i + 1;
    while (end < ops.size() && ops[end].pass == ops[i].pass && ops[end].start <= ops[end - 1].end + tolerance) ++end;
    bool visible = axis.X(ops[end - 1].end) - axis.X(ops[i].start) >= 3;
    bool joined = i > 0 && ops[i].start <= ops[i - 1].end + tolerance;
    if (mixed < i && (visible || !joined)) {
      DrawBlock(svg, axis, ops, mixed, i, y, h);
      mixed = ops.size();
    }
    if (visible) DrawBlock(svg, axis, ops, i, end, y, h);
    else if (mixed == ops.size()) mixed = i;
    i = end;
  }
  if (mixed < ops.size()) DrawBlock(svg, axis, ops, mixed, ops.size(), y, h);
}

// The narrowest pass in pixels decides whether passes are drawn one by one.
auto NarrowestPass(const PipelineTimeline& t, const Axis& axis) -> double {
  double narrowest = 1e9;
  for (const auto& stage : t.ops) {
    for (const TimelineOp& op : stage) narrowest = std::min(narrowest, axis.X(op.compute_end) - axis.X(op.start));
  }
  return narrowest;
}

// Without a played schedule: each stage busy for the step's passes after
// its share of the fill, the rest of the pipeline time idle.
void DrawSummaryRow(SvgWriter& svg, const Axis& axis, const PipelineTimeline& t, int64_t stage, double y, double h) {
  double passes = static_cast<double>(t.micro_batches) * t.micro_batch.total();
  double fill = (t.pipeline_end - passes) * static_cast<double>(stage) / static_cast<double>(t.stages);
  double x0 = axis.X(fill), x1 = axis.X(fill + passes);
  svg.Rect(x0, y, x1 - x0, h / 2, kForwardColor);
  svg.Rect(x0, y + h / 2, x1 - x0, h / 2, kBackwardColor);
}

auto StepNote(const PipelineTimeline& t, const cost::Layout& l) -> std::string {
  std::string schedule = l.pipeline <= 1                             ? "no pipeline"
                         : l.schedule == cost::Schedule::GPipe       ? "GPipe"
                         : l.schedule == cost::Schedule::Interleaved ? fmt::format(
                                                                           "interleaved 1F1B, {} chunks per "
                                                                           "stage",
                                                                           l.virtual_stages)
                                                                     : "1F1B";
  return fmt::format("{}; {} micro-batch{} per step; each stage charged the busiest stage's work, as the planner does",
                     schedule, t.micro_batches, t.micro_batches == 1 ? "" : "es");
}

void DrawStageRows(SvgWriter& svg, const Axis& axis, const PipelineTimeline& t, double top, double row) {
  double h = std::max(row - 3, 3.0);
  bool one_by_one = t.played && NarrowestPass(t, axis) >= 3;
  int64_t label_every = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(13 / row)));
  for (int64_t s = 0; s < t.stages; ++s) {
    double y = top + row * static_cast<double>(s);
    svg.Rect(axis.X(0), y, axis.X(t.pipeline_end) - axis.X(0), h, kBubbleColor);
    if (s % label_every == 0) {
      svg.Rect(kMargin, y + h / 2 - 5, 10, 10, StageColor(s, t.stages));
      svg.Text(kMargin + 14, y + h / 2 + 4, fmt::format("stage {}", s), {.size = std::clamp(row, 9.0, 11.0)});
    }
    if (!t.played) DrawSummaryRow(svg, axis, t, s, y, h);
    else if (one_by_one) {
      for (const TimelineOp& op : t.ops[s]) DrawPass(svg, axis, op, y, h);
    } else {
      DrawRuns(svg, axis, t.ops[s], y, h);
    }
  }
  double bottom = top + row * static_cast<double>(t.stages) - 3;
  double x = axis.X(t.pipeline_end);
  svg.OpenGroup(fmt::format("data-parallel gradient sync left exposed: {}", DurationText(t.gradient_sync)));
  svg.Rect(x, top, axis.X(t.pipeline_end + t.gradient_sync) - x, bottom - top, kCommColor);
  svg.CloseGroup();
  x = axis.X(t.pipeline_end + t.gradient_sync);
  svg.OpenGroup(fmt::format("optimizer step: {}", DurationText(t.optimizer)));
  svg.Rect(x, top, axis.X(t.end()) - x, bottom - top, kOptimizerColor);
  svg.CloseGroup();
}

auto StepSummary(const plan::Plan& plan, const PipelineTimeline& t) -> std::string {
  const cost::TimeBreakdown& b = plan.chosen.prediction.time;
  auto s = [](double seconds) { return DurationText(seconds, kNoBreakSpace); };
  return fmt::format(
      "planner: compute {} + tensor comm {} + pipeline comm {} + bubble {} + data comm {} + optimizer {} = {}; one "
      "micro-batch: forward {}, backward {}, its communication {}",
      s(b.compute), s(b.tensor_comm), s(b.pipeline_comm), s(b.bubble), s(b.data_comm), s(b.optimizer),
      s(t.planner_step), s(t.micro_batch.forward), s(t.micro_batch.backward()),
      s(t.micro_batch.total() - t.micro_batch.compute));
}

}  // namespace

auto DrawStep(const plan::Plan& plan, const PipelineTimeline& t, SvgWriter& svg, double top, double width) -> double {
  svg.Desc(
      fmt::format("one step: the schedule played with the planner's micro-batch times ends at {:.6g} s; the "
                  "planner's step time is {:.6g} s",
                  t.end(), t.planner_step));
  double y = DrawHeading(svg, top, "One training step", StepNote(t, plan.chosen.layout));
  y = DrawLegend(svg, kMargin, y, width - 2 * kMargin,
                 {{std::string(kForwardColor), "forward"},
                  {std::string(kBackwardColor), "backward (with recomputation)"},
                  {std::string(kCommColor), "communication (tensor, pipeline, data)"},
                  {std::string(kBubbleColor), "bubble (idle)"},
                  {std::string(kOptimizerColor), "optimizer step"}}) +
      6;
  Axis axis{kMargin + kLabelWidth, width - kMargin - 8, std::max({t.end(), t.planner_step, 1e-9})};
  double row = std::clamp(320.0 / static_cast<double>(t.stages), 4.0, 26.0);
  DrawStageRows(svg, axis, t, y, row);
  double bottom = y + row * static_cast<double>(t.stages);
  double step_x = axis.X(t.planner_step);
  svg.Line(step_x, y - 4, step_x, bottom + 2, {.color = "#c00", .width = 1.5, .dashed = true});
  std::string step_label = fmt::format("step {} (planner)", DurationText(t.planner_step));
  svg.Text(step_x - 4, y - 6, step_label, {.size = 11, .anchor = Anchor::End, .fill = "#c00"});
  DrawAxis(svg, axis, bottom + 2);
  y = bottom + 48;
  std::string summary = StepSummary(plan, t);
  if (!t.played || NarrowestPass(t, axis) < 3) {
    summary += "; passes too narrow to draw one by one are drawn as runs (forward above, backward below)";
  }
  for (const std::string& line : WrapText(summary, width - 2 * kMargin, 11)) {
    svg.Text(kMargin, y, line, {.size = 11, .fill = kMutedText});
    y += 15;
  }
  return y;
}

}  // namespace avf::emit

// The placement panel: the fat tree's leaf switches as columns, each with
// its nodes as rows of GPUs coloured by pipeline stage and tensor groups
// boxed. When that is too much to read, like neighbours are merged (runs of
// nodes, then runs of leaves with the same content); when even that is too
// much, each leaf becomes a bar of its GPUs by stage, beside one node drawn
// GPU by GPU.
#include <algorithm>
#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "emit/plan_svg_parts.h"

namespace avf::emit {

namespace {

constexpr size_t kMaxColumns = 12;
constexpr size_t kMaxRows = 8;
constexpr double kColumnGap = 14;
constexpr double kRowLabel = 13;

// What a node holds, GPU slot by slot: the stage of its rank (-1: idle) and
// whether the slot starts a new tensor group.
struct NodeContent {
  std::vector<int32_t> stage;
  std::vector<bool> group_start;
  friend auto operator==(const NodeContent&, const NodeContent&) -> bool = default;
};

// `count` neighbouring nodes (from `first`) with the same content.
struct NodeRun {
  NodeContent content;
  int64_t first = 0;
  int64_t count = 1;
};

// `leaves` neighbouring leaves (from `first`), each with these node runs.
struct Column {
  int64_t first = 0;
  int64_t leaves = 1;
  std::vector<NodeRun> rows;
};

auto SameRows(const Column& a, const Column& b) -> bool {
  if (a.rows.size() != b.rows.size()) return false;
  for (size_t i = 0; i < a.rows.size(); ++i) {
    if (!(a.rows[i].content == b.rows[i].content) || a.rows[i].count != b.rows[i].count) return false;
  }
  return true;
}

// Every node's content and leaf, from the plan's rank table.
struct Nodes {
  std::vector<NodeContent> content;
  std::vector<int32_t> leaf;
};

auto NodesOf(const plan::Plan& plan) -> Nodes {
  int64_t slots = std::max<int64_t>(plan.job.hardware.gpus_per_node, 1);
  Nodes nodes;
  nodes.content.assign(plan.nodes_used, {std::vector<int32_t>(slots, -1), std::vector<bool>(slots, false)});
  nodes.leaf.assign(plan.nodes_used, 0);
  // The tensor group of each slot: ranks with the same data and pipeline coordinates.
  std::vector<int64_t> group(plan.nodes_used * slots, -1);
  for (const plan::Rank& r : plan.ranks) {
    if (r.node < 0 || r.node >= plan.nodes_used || r.gpu < 0 || r.gpu >= slots) continue;
    nodes.content[r.node].stage[r.gpu] = r.pipeline;
    group[r.node * slots + r.gpu] = int64_t{r.pipeline} * plan.chosen.layout.data + r.data;
    nodes.leaf[r.node] = r.leaf;
  }
  for (int64_t n = 0; n < plan.nodes_used; ++n) {
    for (int64_t i = 0; i < slots; ++i) {
      nodes.content[n].group_start[i] = i == 0 || group[n * slots + i] != group[n * slots + i - 1];
    }
  }
  return nodes;
}

auto ColumnsOf(const Nodes& nodes, bool merge_nodes, bool merge_leaves) -> std::vector<Column> {
  std::vector<Column> columns;
  for (size_t n = 0; n < nodes.content.size(); ++n) {
    if (columns.empty() || nodes.leaf[n] != nodes.leaf[n - 1]) columns.push_back({nodes.leaf[n], 1, {}});
    std::vector<NodeRun>& rows = columns.back().rows;
    if (merge_nodes && !rows.empty() && rows.back().content == nodes.content[n]) {
      ++rows.back().count;
    } else {
      rows.push_back({nodes.content[n], static_cast<int64_t>(n), 1});
    }
  }
  if (!merge_leaves) return columns;
  std::vector<Column> merged;
  for (Column& c : columns) {
    if (!merged.empty() && SameRows(merged.back(), c)) ++merged.back().leaves;
    else merged.push_back(std::move(c));
  }
  return merged;
}

auto Fits(const std::vector<Column>& columns) -> bool {
  if (columns.size() > kMaxColumns) return false;
  return std::all_of(columns.begin(), columns.end(), [](const Column& c) { return c.rows.size() <= kMaxRows; });
}

auto RangeText(const char* one, const char* many, int64_t first, int64_t count) -> std::string {
  if (count == 1) return fmt::format("{} {}", one, first);
  return fmt::format("{} {}–{}", many, first, first + count - 1);
}

// A node's GPUs as squares from (x, y), tensor groups outlined.
void DrawNode(SvgWriter& svg, const NodeContent& node, double x, double y, double square, int64_t stages, bool boxes) {
  double step = square + 2;
  size_t slots = node.stage.size();
  svg.Rect(x - 3, y - 3, static_cast<double>(slots) * step + 4, square + 6, "#f4f4f4", {.color = "#999"});
  for (size_t i = 0; i < slots; ++i) {
    std::string color = node.stage[i] < 0 ? std::string(kIdleColor) : StageColor(node.stage[i], stages);
    svg.Rect(x + static_cast<double>(i) * step, y, square, square, color);
  }
  if (!boxes) return;
  for (size_t i = 0; i < slots;) {
    size_t end = i + 1;
    while (end < slots && !node.group_start[end]) ++end;
    if (node.stage[i] >= 0) {
      svg.Rect(x + static_cast<double>(i) * step - 1.5, y - 1.5, static_cast<double>(end - i) * step - 2 + 3,
               square + 3, "none", {.color = "#111", .width = 1.5});
    }
    i = end;
  }
}

// The spine above the columns whose centres are `centres`.
void DrawSpine(const plan::Plan& plan, SvgWriter& svg, double top, double width, const std::vector<double>& centres) {
  const cost::Hardware& hw = plan.job.hardware;
  std::string label = hw.nodes_per_leaf > 0 ? "spine switches" : "one switch";
  if (hw.leaves_per_spine > 0 && plan.leaves_used > hw.leaves_per_spine) {
    label = fmt::format("spine blocks of {} leaves, joined by core switches", hw.leaves_per_spine);
  }
  double w = TextWidth(label, 12) + 24, x = (width - w) / 2;
  svg.Rect(x, top, w, 24, "#fafafa", {.color = "#666"});
  svg.Text(width / 2, top + 16, label, {.size = 12, .anchor = Anchor::Middle});
  for (double c : centres) svg.Line(width / 2, top + 24, c, top + 52, {.color = "#888", .width = 1.2});
}

struct ColumnGeometry {
  double width = 0;
  double square = 0;
};

auto GeometryOf(size_t columns, double width, int64_t slots) -> ColumnGeometry {
  double available = width - 2 * kMargin - kColumnGap * static_cast<double>(columns - 1);
  ColumnGeometry g;
  g.width = std::min(300.0, available / static_cast<double>(columns));
  g.square = std::clamp((g.width - 16) / static_cast<double>(slots) - 2, 4.0, 18.0);
  return g;
}

// The node runs of one column from `top`; returns the y below them.
auto DrawRows(const plan::Plan& plan, SvgWriter& svg, const Column& c, double x, double top, const ColumnGeometry& g)
    -> double {
  double y = top;
  bool boxes = plan.chosen.layout.tensor > 1;
  for (const NodeRun& row : c.rows) {
    std::string label = c.leaves == 1 ? RangeText("node", "nodes", row.first, row.count)
                                      : fmt::format("{} node{}", row.count, row.count == 1 ? "" : "s");
    svg.Text(x + 6, y + 10, label, {.size = 10, .fill = kMutedText});
    DrawNode(svg, row.content, x + 9, y + kRowLabel + 3, g.square, plan.chosen.layout.pipeline, boxes);
    y += kRowLabel + g.square + 12;
  }
  return y;
}

auto DrawColumns(const plan::Plan& plan, SvgWriter& svg, const std::vector<Column>& columns, double top, double width)
    -> double {
  ColumnGeometry g = GeometryOf(columns.size(), width, plan.job.hardware.gpus_per_node);
  double total = g.width * static_cast<double>(columns.size()) + kColumnGap * static_cast<double>(columns.size() - 1);
  double left = (width - total) / 2;
  std::vector<double> centres;
  for (size_t i = 0; i < columns.size(); ++i) centres.push_back(left + (g.width + kColumnGap) * i + g.width / 2);
  DrawSpine(plan, svg, top, width, centres);
  double bottom = top;
  int64_t per_leaf = plan.job.hardware.nodes_per_leaf;
  for (size_t i = 0; i < columns.size(); ++i) {
    const Column& c = columns[i];
    double x = left + (g.width + kColumnGap) * static_cast<double>(i), y = top + 52;
    int64_t nodes = 0;
    for (const NodeRun& r : c.rows) nodes += r.count;
    std::string head = RangeText("leaf", "leaves", c.first, c.leaves);
    std::string sub = fmt::format("{}{}{} node{}", c.leaves > 1 ? "each: " : "", nodes,
                                  per_leaf > 0 ? fmt::format(" of {}", per_leaf) : "",
                                  (per_leaf > 0 ? per_leaf : nodes) == 1 ? "" : "s");
    double rows_bottom = DrawRows(plan, svg, c, x, y + 36, g);
    svg.Rect(x, y, g.width, rows_bottom - y, "none", {.color = "#666"});
    svg.Text(x + 6, y + 15, head, {.size = 12, .bold = true});
    svg.Text(x + 6, y + 29, sub, {.size = 10, .fill = kMutedText});
    bottom = std::max(bottom, rows_bottom);
  }
  return bottom + 8;
}

// Too many leaves to draw their nodes: each bar is one or more leaves, its
// height the GPUs, split by stage; beside them, node 0 GPU by GPU.
// What the bars of DrawLeafBars stand for: groups of `per_bar` leaf
// switches, or, when the job uses too few leaves to show its stages apart,
// groups of `per_bar` nodes.
struct BarUnit {
  bool leaves = true;
  size_t count = 1;  // leaves or nodes in all
  size_t per_bar = 1;
  auto Bars() const -> size_t { return (count + per_bar - 1) / per_bar; }
  auto Name(size_t bar) const -> std::string {
    size_t first = bar * per_bar, last = std::min(count, first + per_bar) - 1;
    if (first == last) return fmt::format("{} {}", leaves ? "leaf" : "node", first);
    return fmt::format("{} {}–{}", leaves ? "leaves" : "nodes", first, last);
  }
};

auto BarUnitOf(const plan::Plan& plan) -> BarUnit {
  constexpr size_t kMaxBars = 128, kFewestLeaves = 8;
  BarUnit unit;
  unit.leaves = plan.leaves_used >= static_cast<int64_t>(kFewestLeaves);
  unit.count = static_cast<size_t>(std::max<int64_t>(unit.leaves ? plan.leaves_used : plan.nodes_used, 1));
  unit.per_bar = (unit.count + kMaxBars - 1) / kMaxBars;
  return unit;
}

// GPUs per stage of each bar.
auto GpusPerBar(const Nodes& nodes, const BarUnit& unit, int64_t stages) -> std::vector<std::vector<int64_t>> {
  size_t bars = unit.Bars();
  std::vector<std::vector<int64_t>> gpus(bars, std::vector<int64_t>(stages, 0));
  for (size_t n = 0; n < nodes.content.size(); ++n) {
    size_t index = unit.leaves ? static_cast<size_t>(nodes.leaf[n]) : n;
    for (int32_t s : nodes.content[n].stage) {
      if (s >= 0 && s < stages) ++gpus[std::min(index / unit.per_bar, bars - 1)][s];
    }
  }
  return gpus;
}

auto Sum(const std::vector<int64_t>& values) -> int64_t {
  int64_t sum = 0;
  for (int64_t v : values) sum += v;
  return sum;
}

// Too many leaves to draw their nodes: each bar is one or more leaves, its
// height the GPUs, split by stage; beside them, node 0 GPU by GPU.
auto DrawLeafBars(const plan::Plan& plan, const Nodes& nodes, SvgWriter& svg, double top, double width) -> double {
  constexpr double kBarHeight = 110, kNodeWidth = 260, kLeft = kMargin + 44;
  BarUnit unit = BarUnitOf(plan);
  size_t bars = unit.Bars();
  int64_t stages = plan.chosen.layout.pipeline;
  std::vector<std::vector<int64_t>> gpus = GpusPerBar(nodes, unit, stages);
  int64_t most = 1;
  for (const auto& bar : gpus) most = std::max(most, Sum(bar));
  double pitch = (width - kLeft - kNodeWidth - 2 * kMargin) / static_cast<double>(bars), y0 = top + 28;
  DrawSpine(plan, svg, top - 24, width - kNodeWidth, {});
  for (size_t b = 0; b < bars; ++b) {
    double x = kLeft + pitch * static_cast<double>(b), y = y0 + kBarHeight;
    svg.OpenGroup(fmt::format("{}: {} GPUs", unit.Name(b), Sum(gpus[b])));
    for (int64_t s = 0; s < stages; ++s) {
      double h = kBarHeight * static_cast<double>(gpus[b][s]) / static_cast<double>(most);
      if (h <= 0) continue;
      y -= h;
      svg.Rect(x + 0.5, y, std::max(pitch - 1.5, 1.0), h, StageColor(s, stages));
    }
    svg.CloseGroup();
  }
  TextStyle small{.size = 10, .anchor = Anchor::End, .fill = kMutedText};
  svg.Text(kLeft - 6, y0 + 10, fmt::format("{}", most), small);
  svg.Text(kLeft - 6, y0 + kBarHeight, "0", small);
  svg.Text(kLeft - 40, y0 + kBarHeight / 2, "GPUs", {.size = 10, .fill = kMutedText});
  size_t label_every = std::max<size_t>(1, static_cast<size_t>(std::ceil(60 / pitch)));
  for (size_t b = 0; b < bars; b += label_every) {
    svg.Text(kLeft + pitch * (static_cast<double>(b) + 0.5), y0 + kBarHeight + 14, fmt::format("{}", b * unit.per_bar),
             {.size = 10, .anchor = Anchor::Middle, .fill = kMutedText});
  }
  std::string what = unit.leaves ? "leaf switch" : "node";
  std::string plural = what + (unit.leaves ? "es" : "s");
  std::string caption = fmt::format("{}; each bar: {} {}, its GPUs by pipeline stage from the bottom", plural,
                                    unit.per_bar, unit.per_bar == 1 ? what : plural);
  if (!unit.leaves) caption += fmt::format(" ({} leaf switch{})", plan.leaves_used, plan.leaves_used == 1 ? "" : "es");
  svg.Text(kLeft, y0 + kBarHeight + 30, caption, {.size = 11, .fill = kMutedText});
  double nx = width - kMargin - kNodeWidth + 20;
  svg.Text(nx, y0 + 10, "node 0, GPU by GPU:", {.size = 12, .bold = true});
  double square = std::min(GeometryOf(1, kNodeWidth, plan.job.hardware.gpus_per_node).square, 22.0);
  if (!nodes.content.empty()) {
    DrawNode(svg, nodes.content.front(), nx + 4, y0 + 26, square, stages, plan.chosen.layout.tensor > 1);
  }
  return y0 + kBarHeight + 40;
}

auto PlacementNote(const plan::Plan& plan) -> std::string {
  const cost::Layout& l = plan.chosen.layout;
  int64_t per_node = std::max<int64_t>(plan.job.hardware.gpus_per_node, 1);
  std::string tensor = l.tensor <= 1 ? "no tensor groups (tp 1)"
                       : l.tensor <= per_node
                           ? fmt::format("boxed: tensor groups of {} GPUs inside a node", l.tensor)
                           : fmt::format("boxed: each node's part of a tensor group of {} GPUs", l.tensor);
  return fmt::format(
      "ranks in Megatron order (tensor fastest, then data, then pipeline), filled node by node and leaf "
      "by leaf; colour: pipeline stage; {}",
      tensor);
}

auto StageLegend(const plan::Plan& plan) -> std::vector<LegendEntry> {
  int64_t stages = plan.chosen.layout.pipeline;
  std::vector<LegendEntry> entries;
  if (stages <= 16) {
    std::vector<int64_t> layers(stages, 0);
    for (const plan::StageChunk& c : plan.stages) {
      if (c.stage >= 0 && c.stage < stages) layers[c.stage] += c.layers;
    }
    for (int64_t s = 0; s < stages; ++s) {
      entries.push_back({StageColor(s, stages), fmt::format("stage {}: {} layers", s, layers[s])});
    }
  } else {
    for (int64_t s : {int64_t{0}, stages / 4, stages / 2, 3 * stages / 4, stages - 1}) {
      entries.push_back({StageColor(s, stages), fmt::format("stage {}", s)});
    }
  }
  entries.push_back({std::string(kIdleColor), "idle GPU"});
  if (plan.chosen.layout.tensor > 1) {
    entries.push_back({"#111", fmt::format("tensor group ({} GPUs)", plan.chosen.layout.tensor), true});
  }
  return entries;
}

}  // namespace

auto DrawPlacement(const plan::Plan& plan, SvgWriter& svg, double top, double width) -> double {
  double y = DrawHeading(svg, top, "Placement on the fat tree", PlacementNote(plan));
  y = DrawLegend(svg, kMargin, y, width - 2 * kMargin, StageLegend(plan)) + 8;
  Nodes nodes = NodesOf(plan);
  for (auto [merge_nodes, merge_leaves] : {std::pair{false, false}, {true, false}, {true, true}}) {
    std::vector<Column> columns = ColumnsOf(nodes, merge_nodes, merge_leaves);
    if (!columns.empty() && Fits(columns)) return DrawColumns(plan, svg, columns, y, width);
  }
  return DrawLeafBars(plan, nodes, svg, y + 24, width);
}

}  // namespace avf::emit

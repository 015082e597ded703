#include "emit/plan_html.h"

#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <llvm/Support/raw_ostream.h>

#include "check/check.h"
#include "emit/json_writer.h"
#include "emit/plan_fields.h"
#include "emit/plan_svg.h"
#include "emit/plan_svg_parts.h"
#include "emit/svg_writer.h"

namespace avf::emit {

namespace {

constexpr std::string_view kStyle = R"(body{font-family:"DejaVu Sans",Verdana,Arial,sans-serif;margin:24px;color:#222}
h1{font-size:24px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 8px}p{margin:4px 0;color:#555}
.picture{overflow-x:auto;border:1px solid #ddd}
table{border-collapse:collapse;font-size:13px}th,td{padding:4px 8px;border-bottom:1px solid #e4e4e4;text-align:right}
th{cursor:pointer;background:#f4f4f4;user-select:none;white-space:nowrap}th.asc::after{content:" \25B2"}
th.desc::after{content:" \25BC"}td.text,th.text{text-align:left}tbody tr{cursor:pointer}
tbody tr:hover,tbody tr:focus{background:#eef4fb;outline:none}tbody tr.selected{background:#dbe8f6}
tr.chosen td:first-child{font-weight:bold}
#detail{margin-top:16px;max-width:1000px}.bar{display:flex;height:22px;margin:4px 0 2px;background:#f4f4f4}
.bar div{height:100%}.keys span{display:inline-block;margin-right:14px;font-size:12px}
.keys i{display:inline-block;width:10px;height:10px;margin-right:4px;vertical-align:middle}
)";

// Sorting, and the breakdown of the row under the pointer or selected.
constexpr std::string_view kScript = R"((function () {
  "use strict";
  var layouts = JSON.parse(document.getElementById("layout-data").textContent);
  var table = document.getElementById("layouts");
  var body = table.tBodies[0];
  var detail = document.getElementById("detail");
  var selected = 0;
  function escapeText(s) {
    return String(s).replace(/[&<>"]/g, function (c) {
      return {"&": "&amp;", "<": "&lt;", ">": "&gt;", "\"": "&quot;"}[c];
    });
  }
  function bar(parts, whole) {
    var html = "<div class=\"bar\">", keys = "<div class=\"keys\">";
    parts.forEach(function (p) {
      var width = whole > 0 ? Math.max(0, 100 * p.value / whole) : 0;
      html += "<div style=\"width:" + width.toFixed(3) + "%;background:" + p.color + "\" title=\"" +
        escapeText(p.name + ": " + p.text) + "\"></div>";
      keys += "<span><i style=\"background:" + p.color + "\"></i>" + escapeText(p.name + " " + p.text) + "</span>";
    });
    return html + "</div>" + keys + "</div>";
  }
  function show(index) {
    var l = layouts[index];
    detail.innerHTML = "<h3>" + escapeText(l.label + ": " + l.layout) + "</h3>" +
      "<p>memory per GPU: " + escapeText(l.memory_text) + " of " + escapeText(l.capacity_text) + "</p>" +
      bar(l.memory, Math.max(l.memory_total, l.capacity)) +
      "<p>time per step: " + escapeText(l.step_text) + "</p>" + bar(l.time, l.step);
  }
  function select(row) {
    Array.prototype.forEach.call(body.rows, function (r) { r.classList.remove("selected"); });
    row.classList.add("selected");
    selected = Number(row.getAttribute("data-index"));
    show(selected);
  }
  Array.prototype.forEach.call(body.rows, function (row) {
    row.addEventListener("mouseenter", function () { show(Number(row.getAttribute("data-index"))); });
    row.addEventListener("mouseleave", function () { show(selected); });
    row.addEventListener("click", function () { select(row); });
    row.addEventListener("focus", function () { select(row); });
  });
  Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, column) {
    th.addEventListener("click", function () {
      var ascending = !th.classList.contains("asc");
      Array.prototype.forEach.call(table.tHead.rows[0].cells, function (c) { c.classList.remove("asc", "desc"); });
      th.classList.add(ascending ? "asc" : "desc");
      var numeric = th.getAttribute("data-type") === "number";
      var rows = Array.prototype.slice.call(body.rows);
      rows.sort(function (a, b) {
        var x = a.cells[column].getAttribute("data-value"), y = b.cells[column].getAttribute("data-value");
        var order = numeric ? Number(x) - Number(y) : (x < y ? -1 : x > y ? 1 : 0);
        if (order === 0) order = Number(a.getAttribute("data-index")) - Number(b.getAttribute("data-index"));
        return ascending ? order : -order;
      });
      rows.forEach(function (r) { body.appendChild(r); });
    });
  });
  select(body.rows[0]);
})();
)";

struct Column {
  std::string_view heading;
  bool number;
};

constexpr Column kColumns[] = {{"#", true},       {"tp", true},      {"pp", true},      {"dp", true},
                               {"vp", true},      {"zero", true},    {"mb", true},      {"recompute", false},
                               {"sp", false},     {"mem/GPU", true}, {"step s", true},  {"tokens/s", true},
                               {"TFLOP/s", true}, {"MFU", true},     {"binding", false}};

auto Cell(std::string_view value, std::string_view text, bool number) -> std::string {
  return fmt::format("<td{} data-value=\"{}\">{}</td>", number ? "" : " class=\"text\"", XmlEscape(value),
                     XmlEscape(text));
}

auto Row(size_t index, const std::string& label, const plan::Candidate& c) -> std::string {
  const cost::Layout& l = c.layout;
  const cost::Prediction& p = c.prediction;
  int64_t vp = l.schedule == cost::Schedule::Interleaved ? l.virtual_stages : 1;
  std::string vp_text = l.schedule == cost::Schedule::GPipe ? "gp" : fmt::format("{}", vp);
  std::string row =
      fmt::format("<tr data-index=\"{}\" tabindex=\"0\"{}>", index, index == 0 ? " class=\"chosen\"" : "");
  auto whole = [](int64_t v) { return fmt::format("{}", v); };
  row += Cell(whole(static_cast<int64_t>(index)), label, true);
  for (int64_t v : {l.tensor, l.pipeline, l.data}) row += Cell(whole(v), whole(v), true);
  row += Cell(whole(vp), vp_text, true) + Cell(whole(l.zero), whole(l.zero), true);
  row += Cell(whole(l.micro_batch), whole(l.micro_batch), true);
  row += Cell(cost::Name(l.recompute), cost::Name(l.recompute), false);
  row += Cell(l.sequence_parallel ? "yes" : "no", l.sequence_parallel ? "yes" : "no", false);
  row += Cell(fmt::format("{:.0f}", p.memory_per_gpu), check::BytesText(p.memory_per_gpu), true);
  row += Cell(fmt::format("{:.6g}", p.step_time), fmt::format("{:.4g}", p.step_time), true);
  row += Cell(fmt::format("{:.0f}", p.tokens_per_s), GroupedDigits(p.tokens_per_s), true);
  row += Cell(fmt::format("{:.3f}", p.tflops_per_gpu), fmt::format("{:.1f}", p.tflops_per_gpu), true);
  row += Cell(fmt::format("{:.5f}", p.mfu), fmt::format("{:.1f}%", 100 * p.mfu), true);
  return row + Cell(c.binding, c.binding, false) + "</tr>\n";
}

void Parts(JsonWriter& j, std::string_view key, const std::vector<std::pair<std::string_view, double>>& parts,
           const std::vector<std::string_view>& colors, bool bytes) {
  j.ArrayField(key, [&] {
    for (size_t i = 0; i < parts.size(); ++i) {
      j.Object([&] {
        j.Field("name", parts[i].first);
        j.NumberField("value", parts[i].second);
        j.Field("text", bytes ? check::BytesText(parts[i].second) : DurationText(parts[i].second));
        j.Field("color", colors[i]);
      });
    }
  });
}

void LayoutData(JsonWriter& j, const std::string& label, const plan::Candidate& c, double capacity) {
  const cost::Prediction& p = c.prediction;
  const cost::MemoryBreakdown& m = p.memory;
  const cost::TimeBreakdown& t = p.time;
  j.Object([&] {
    j.Field("label", label);
    j.Field("layout", fmt::format("tp {}, pp {}, dp {}, zero {}, micro-batch {}", c.layout.tensor, c.layout.pipeline,
                                  c.layout.data, c.layout.zero, c.layout.micro_batch));
    j.NumberField("memory_total", p.memory_per_gpu);
    j.Field("memory_text", check::BytesText(p.memory_per_gpu));
    j.NumberField("capacity", capacity);
    j.Field("capacity_text", check::BytesText(capacity));
    j.NumberField("step", p.step_time);
    j.Field("step_text", fmt::format("{}, likely {} to {}", DurationText(p.step_time), DurationText(p.step_time_low),
                                     DurationText(p.step_time_high)));
    Parts(j, "memory",
          {{"weights", m.weights},
           {"gradients", m.gradients},
           {"optimizer", m.optimizer},
           {"activations", m.activations},
           {"buffers", m.buffers}},
          {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#b07aa1"}, true);
    Parts(j, "time",
          {{"compute", t.compute},
           {"tensor comm", t.tensor_comm},
           {"pipeline comm", t.pipeline_comm},
           {"bubble", t.bubble},
           {"data comm", t.data_comm},
           {"optimizer", t.optimizer}},
          {"#5b9bd5", "#7b3f9e", "#a77fc2", "#bbbbbb", "#d4a6e8", "#59a14f"}, false);
  });
}

// The layouts as JSON for the script; "</" written as "<\/" so that no
// string can end the <script> element.
auto LayoutsJson(const plan::Plan& plan) -> std::string {
  std::string json;
  llvm::raw_string_ostream out(json);
  {
    JsonWriter j(out, 0);
    j.Array([&] {
      LayoutData(j, "chosen", plan.chosen, plan.job.hardware.gpu_memory);
      for (size_t i = 0; i < plan.alternatives.size(); ++i) {
        LayoutData(j, fmt::format("{}", i + 1), plan.alternatives[i], plan.job.hardware.gpu_memory);
      }
    });
  }
  out.flush();
  std::string safe;
  for (size_t i = 0; i < json.size(); ++i) {
    safe += json[i];
    if (json[i] == '<' && i + 1 < json.size() && json[i + 1] == '/') safe += '\\';
  }
  return safe;
}

auto LayoutTable(const plan::Plan& plan) -> std::string {
  std::string html = "<table id=\"layouts\"><thead><tr>";
  for (const Column& c : kColumns) {
    html += fmt::format("<th data-type=\"{}\"{}>{}</th>", c.number ? "number" : "text",
                        c.number ? "" : " class=\"text\"", XmlEscape(c.heading));
  }
  html += "</tr></thead><tbody>\n" + Row(0, "chosen", plan.chosen);
  for (size_t i = 0; i < plan.alternatives.size(); ++i) {
    html += Row(i + 1, fmt::format("{}", i + 1), plan.alternatives[i]);
  }
  return html + "</tbody></table>\n";
}

}  // namespace

auto PlanHtml(const plan::Plan& plan) -> std::string {
  std::string svg = PlanSvg(plan);
  std::string name = XmlEscape(plan.job.name);
  std::string html = fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      "<title>aviflowc plan: {0}</title>\n<style>\n{1}</style>\n</head>\n<body>\n<h1>job {0}</h1>\n"
      "<p>The plan of <code>aviflowc plan</code>: placement, one step and memory per GPU as the planner predicts "
      "them, then the chosen layout and the best alternatives.</p>\n",
      name, kStyle);
  html += "<div class=\"picture\">\n" + svg + "</div>\n";
  html += fmt::format(
      "<h2>Layouts</h2>\n<p>{} layouts evaluated. Click a column's heading to sort by it; hover or click a row for "
      "its memory and time breakdown.</p>\n",
      GroupedDigits(static_cast<double>(plan.candidates_evaluated)));
  html += LayoutTable(plan) + "<div id=\"detail\" aria-live=\"polite\"></div>\n";
  html += "<script type=\"application/json\" id=\"layout-data\">" + LayoutsJson(plan) + "</script>\n";
  html += fmt::format("<script>\n{}</script>\n</body>\n</html>\n", kScript);
  return html;
}

}  // namespace avf::emit

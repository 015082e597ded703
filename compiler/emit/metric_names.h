// avf-run's Prometheus metrics as the alerts and the dashboard name them,
// from their one definition, runtime/plan_format/metrics.def (which avf-run's
// exporter reads too): no metric name is spelled anywhere else.
#pragma once

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace avf::emit {

enum class Metric : uint8_t {
#define AVF_METRIC(Id, Name, Type, Label, Predicted, Help) Id,
#include "plan_format/metrics.def"
};

namespace metric_rows {
struct Row {
  std::string_view name;
  bool predicted;
};
inline constexpr Row kRows[] = {
#define AVF_METRIC(Id, Name, Type, Label, Predicted, Help) {Name, Predicted},
#include "plan_format/metrics.def"
};
}  // namespace metric_rows

// The label of every series that names the job (the .avf job's name).
inline constexpr std::string_view kJobLabel = "job";

constexpr auto MetricName(Metric m) -> std::string_view { return metric_rows::kRows[static_cast<size_t>(m)].name; }

// Whether the plan's prediction of `m` is served beside it.
constexpr auto HasPrediction(Metric m) -> bool { return metric_rows::kRows[static_cast<size_t>(m)].predicted; }

// NAME_predicted, the plan's value of `m` (metrics.def's convention).
inline auto PredictedName(Metric m) -> std::string {
  assert(HasPrediction(m));
  return std::string(MetricName(m)) + "_predicted";
}

// `NAME{job="JOB"}` in PromQL (`NAME_predicted{...}` with `predicted`), with
// more matchers after the job's: `,rank="0"`.
inline auto JobSeries(Metric m, std::string_view job, std::string_view more = "", bool predicted = false)
    -> std::string {
  std::string quoted;
  for (char ch : job) quoted += ch == '"' || ch == '\\' ? std::string("\\") + ch : std::string(1, ch);
  return fmt::format("{}{{{}=\"{}\"{}}}", predicted ? PredictedName(m) : std::string(MetricName(m)), kJobLabel, quoted,
                     more);
}

}  // namespace avf::emit

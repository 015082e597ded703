// Prometheus's text exposition format 0.0.4: metric families of samples,
// each family with its HELP and TYPE lines, label values escaped, values
// as Go's ParseFloat reads them (NaN, +Inf, -Inf).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace avf::exposition {

enum class MetricType { Gauge, Counter };

struct Sample {
  std::vector<std::pair<std::string, std::string>> labels;  // name, value
  double value = 0;
};

struct Family {
  std::string name;  // [a-zA-Z_:][a-zA-Z0-9_:]*
  std::string help;
  MetricType type = MetricType::Gauge;
  std::vector<Sample> samples;
};

// The families in order, one HELP and one TYPE line each; a family without
// samples is left out.
auto RenderText(const std::vector<Family>& families) -> std::string;

// The media type a scrape of RenderText's output is served with.
inline constexpr const char* kContentType = "text/plain; version=0.0.4; charset=utf-8";

}  // namespace avf::exposition

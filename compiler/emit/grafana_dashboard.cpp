// The Grafana dashboard of a job that runs avf-run (`monitoring { dashboard
// = true }`): what the job does against what the plan predicted, from the
// series of metrics.def, as the JSON a Grafana sidecar loads from a
// ConfigMap labelled `grafana_dashboard: "1"` (monitoring.cpp writes it).
#include "emit/grafana_dashboard.h"

#include <string>
#include <vector>

#include <fmt/format.h>

#include "emit/json_writer.h"
#include "emit/metric_names.h"

namespace avf::emit {

namespace {

using deploy::Deployment;

// Grafana's limit on a dashboard's uid.
constexpr size_t kMaxUid = 40;
constexpr int64_t kWidth = 12, kHeight = 8;  // two panels a row, of Grafana's 24 columns

struct Query {
  std::string expr;
  std::string legend;
};

// A time series; `stacked`: the measured parts add up, the predictions are lines.
struct Panel {
  std::string title;
  std::string unit;
  std::vector<Query> queries;
  bool stacked = false;
};

auto Panels(const Deployment& d) -> std::vector<Panel> {
  auto s = [&](Metric m, bool predicted = false) { return JobSeries(m, d.job, "", predicted); };
  return {
      {"Loss", "none", {{fmt::format("avg({})", s(Metric::Loss)), "loss"}}},
      {"Tokens per second",
       "short",
       {{fmt::format("max({})", s(Metric::TokensPerSecond)), "measured"},
        {fmt::format("max({})", s(Metric::TokensPerSecond, true)), "predicted"}}},
      {"MFU",
       "percentunit",
       {{fmt::format("avg({})", s(Metric::Mfu)), "measured"},
        {fmt::format("avg({})", s(Metric::Mfu, true)), "predicted"}}},
      {"Step time by part (mean over the ranks)",
       "s",
       {{fmt::format("avg by (part) ({})", s(Metric::StepPart)), "{{part}}"},
        {fmt::format("max({})", s(Metric::StepSeconds, true)), "predicted step"}},
       true},
      {"Memory per GPU by category (the most loaded rank)",
       "bytes",
       {{fmt::format("max by (category) ({})", s(Metric::Memory)), "{{category}}"},
        {fmt::format("max by (category) ({})", s(Metric::Memory, true)), "predicted {{category}}"},
        {fmt::format("max({})", s(Metric::MemoryPeak, true)), "predicted peak"}},
       true},
      {"Age of the newest checkpoint",
       "s",
       {{fmt::format("time() - max({} > 0)", s(Metric::CheckpointCommit)), "age"},
        {fmt::format("max({})", s(Metric::CheckpointInterval, true)), "predicted interval"}}},
      {"Restarts (the most of any rank)", "none", {{fmt::format("max({})", s(Metric::Restarts)), "restarts"}}},
      {"Data position", "none", {{fmt::format("max({})", s(Metric::DataSequence)), "sequence in the epoch"}}},
  };
}

void WriteDatasource(JsonWriter& j) {
  j.ObjectField("datasource", [&] {
    j.Field("type", "prometheus");
    j.Field("uid", "${datasource}");
  });
}

// The predictions are dashed lines, never stacked on the measured parts.
void WriteFieldConfig(JsonWriter& j, const Panel& p) {
  j.ObjectField("fieldConfig", [&] {
    j.ObjectField("defaults", [&] {
      j.Field("unit", p.unit);
      j.ObjectField("custom", [&] {
        j.NumberField("fillOpacity", p.stacked ? 40 : 0);
        j.ObjectField("stacking", [&] { j.Field("mode", p.stacked ? "normal" : "none"); });
      });
    });
    j.ArrayField("overrides", [&] {
      j.Object([&] {
        j.ObjectField("matcher", [&] {
          j.Field("id", "byRegexp");
          j.Field("options", "predicted.*");
        });
        j.ArrayField("properties", [&] {
          j.Object([&] {
            j.Field("id", "custom.lineStyle");
            j.ObjectField("value", [&] { j.Field("fill", "dash"); });
          });
          j.Object([&] {
            j.Field("id", "custom.stacking");
            j.ObjectField("value", [&] { j.Field("mode", "none"); });
          });
          j.Object([&] {
            j.Field("id", "custom.fillOpacity");
            j.NumberField("value", 0);
          });
        });
      });
    });
  });
}

void WritePanel(JsonWriter& j, const Panel& p, int64_t index) {
  j.Object([&] {
    j.Field("id", index + 1);
    j.Field("type", "timeseries");
    j.Field("title", p.title);
    WriteDatasource(j);
    j.ObjectField("gridPos", [&] {
      j.Field("h", kHeight);
      j.Field("w", kWidth);
      j.Field("x", index % 2 * kWidth);
      j.Field("y", index / 2 * kHeight);
    });
    j.ArrayField("targets", [&] {
      for (size_t i = 0; i < p.queries.size(); ++i) {
        j.Object([&] {
          j.Field("refId", std::string(1, static_cast<char>('A' + i)));
          WriteDatasource(j);
          j.Field("expr", p.queries[i].expr);
          j.Field("legendFormat", p.queries[i].legend);
        });
      }
    });
    WriteFieldConfig(j, p);
  });
}

auto DashboardUid(const Deployment& d) -> std::string { return ("aviflow-" + d.name).substr(0, kMaxUid); }

}  // namespace

auto DashboardJson(const Deployment& d) -> std::string {
  std::string text;
  llvm::raw_string_ostream out(text);
  {
    JsonWriter j(out, 2);
    j.Object([&] {
      j.Field("uid", DashboardUid(d));
      j.Field("title", fmt::format("aviflow job {} ({})", d.job, d.k8s_namespace));
      j.ArrayField("tags", [&] { j.String("aviflow"); });
      j.Field("schemaVersion", 39);
      j.Field("refresh", "1m");
      j.ObjectField("time", [&] {
        j.Field("from", "now-24h");
        j.Field("to", "now");
      });
      j.ObjectField("templating", [&] {
        j.ArrayField("list", [&] {
          j.Object([&] {
            j.Field("name", "datasource");
            j.Field("label", "Prometheus");
            j.Field("type", "datasource");
            j.Field("query", "prometheus");
          });
        });
      });
      j.ArrayField("panels", [&] {
        std::vector<Panel> panels = Panels(d);
        for (size_t i = 0; i < panels.size(); ++i) WritePanel(j, panels[i], static_cast<int64_t>(i));
      });
    });
  }
  out << "\n";
  return out.str();
}

}  // namespace avf::emit

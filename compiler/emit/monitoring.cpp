// monitoring.yaml, for the Prometheus Operator: a PodMonitor of the training
// pods' metrics ports, the job's alerts as a PrometheusRule whose thresholds
// are numbers lowering computed from the plan, and optionally the Grafana
// dashboard's ConfigMap. Every series name comes from metrics.def
// (emit/metric_names.h).
#include <fmt/format.h>

#include "emit/grafana_dashboard.h"
#include "emit/k8s_pod.h"
#include "emit/manifests.h"
#include "emit/metric_names.h"

namespace avf::emit {

namespace {

using deploy::Deployment;
using deploy::Monitoring;

// The alerts keep the job's labels (the namespace is the scrape target's).
constexpr std::string_view kBy = "by (namespace, job)";
// The Kubernetes node of a rank's pod, for joins with DCGM's per-node
// series; the series' own `node` is the plan's node index.
constexpr std::string_view kNodeNameLabel = "kubernetes_node";
// A stall is a stall for one more minute: a scrape that came late is not.
constexpr int64_t kStallForSeconds = 60;

struct Alert {
  std::string name;
  std::string severity;
  std::string expr;
  int64_t for_seconds = 0;
  std::string summary;
  std::string runbook;
};

// A duration as Prometheus writes it, in its largest whole unit: 1h, 5m, 90s.
auto Duration(int64_t seconds) -> std::string {
  if (seconds > 0 && seconds % 3600 == 0) return fmt::format("{}h", seconds / 3600);
  if (seconds > 0 && seconds % 60 == 0) return fmt::format("{}m", seconds / 60);
  return fmt::format("{}s", seconds);
}

// A duration for a person: 3.41 s, 5.18 min, 2.5 h.
auto Human(double seconds) -> std::string {
  if (seconds < 120) return fmt::format("{:.3g} s", seconds);
  if (seconds < 7200) return fmt::format("{:.3g} min", seconds / 60);
  return fmt::format("{:.3g} h", seconds / 3600);
}

auto Series(Metric m, const Deployment& d, std::string_view more = "") -> std::string {
  return JobSeries(m, d.job, more);
}

auto Max(const std::string& inner) -> std::string { return fmt::format("max {} ({})", kBy, inner); }

// `-l KEY=VALUE,...` of kubectl for the training pods.
auto TrainerPods(const Deployment& d) -> std::string {
  std::string selector;
  for (const auto& [k, v] : TrainerPodSelector(d)) selector += (selector.empty() ? "" : ",") + k + "=" + v;
  return fmt::format("-n {} -l {}", d.k8s_namespace, selector);
}

// Where a person reads the ranks' last lines: the pods' logs, or the batch
// job's output file (slurm.sbatch's --output=%x-%j.out).
auto Logs(const Deployment& d) -> std::string {
  if (d.target == deploy::Target::Slurm) {
    return fmt::format("tail -n 50 {}-JOBID.out in the folder the job was submitted from", d.name);
  }
  return fmt::format("kubectl logs {} --tail=50", TrainerPods(d));
}

auto LastEnd(const Deployment& d) -> std::string {
  if (d.target == deploy::Target::Slurm) {
    return fmt::format(
        "the previous run's end (sacct --name={} --format=JobID,State,ExitCode,NodeList): OUT_OF_MEMORY, PREEMPTED, "
        "NODE_FAIL, or a rank's error in its output file",
        d.name);
  }
  return fmt::format(
      "the training pods' last termination (kubectl describe pods {}): OOMKilled, 143 (preempted), or a rank's "
      "error in the log",
      TrainerPods(d));
}

// Seconds since the newest step; before a rank's first step, since it started training.
auto Stalled(const Deployment& d, const Monitoring& m) -> Alert {
  std::string last = Max(Series(Metric::StepEnd, d) + " > 0 or " + Series(Metric::Start, d));
  return {"AvfTrainingStalled",
          "critical",
          fmt::format("time() - {} > {}", last, m.stall_seconds),
          kStallForSeconds,
          fmt::format("job {} has finished no step for {}: {} x its predicted step of {}, at least 5 minutes{}", d.job,
                      Human(m.stall_seconds), m.stall_factor, Human(m.step_seconds),
                      m.write_seconds > 0 ? ", plus a checkpoint's write of " + Human(m.write_seconds) : ""),
          fmt::format("Look first at the last lines of every rank ({}): the last step, a rank waiting on a silent "
                      "peer, a checkpoint being written.",
                      Logs(d))};
}

auto LossNotFinite(const Deployment& d) -> Alert {
  std::string loss = Series(Metric::Loss, d);
  return {"AvfLossNotFinite",
          "critical",
          fmt::format("count {} ({} != {} or abs({}) == +Inf) > 0", kBy, loss, loss, loss),
          0,
          fmt::format("the training loss of job {} is NaN or infinite", d.job),
          fmt::format("Look first at {} and {} over the steps before it; resume from the last checkpoint with a lower "
                      "`optimizer.lr`.",
                      MetricName(Metric::GradientNorm), MetricName(Metric::LearningRate))};
}

auto MfuLow(const Deployment& d, const Monitoring& m) -> Alert {
  return {
      "AvfMfuBelowPrediction",
      "warning",
      fmt::format("avg {} ({}) < {:.4g}", kBy, Series(Metric::Mfu, d), m.mfu_below),
      m.mfu_seconds,
      fmt::format("job {} has run below {:.1f}% MFU for {}: {:.3g} x the plan's {:.1f}%", d.job, 100 * m.mfu_below,
                  Human(m.mfu_seconds), m.mfu_predicted > 0 ? m.mfu_below / m.mfu_predicted : 0, 100 * m.mfu_predicted),
      fmt::format("Look first at {} against {}: the part that grew (compute: a throttled GPU; tensor_comm, "
                  "data_comm: a slow link; bubble: a slow stage).",
                  MetricName(Metric::StepPart), PredictedName(Metric::StepPart))};
}

// Rank 0 commits; before this run's first commit, the age counts from its start.
auto CheckpointOverdue(const Deployment& d, const Monitoring& m) -> Alert {
  std::string newest = Max(Series(Metric::CheckpointCommit, d) + " > 0 or " + Series(Metric::Start, d, ",rank=\"0\""));
  return {"AvfCheckpointOverdue",
          "warning",
          fmt::format("time() - {} > {}", newest, m.checkpoint_seconds),
          0,
          fmt::format("job {} has committed no checkpoint for {}: {} x its interval of {}, at least 5 minutes{}", d.job,
                      Human(m.checkpoint_seconds), m.checkpoint_factor, Human(m.checkpoint_interval),
                      m.write_seconds > 0 ? ", plus a checkpoint's write of " + Human(m.write_seconds) : ""),
          fmt::format("Look first at {} and rank 0's log ({}): a write that failed, or a full or slow checkpoint "
                      "tier.",
                      MetricName(Metric::CheckpointHold), Logs(d))};
}

// The most starts any rank counts: a new pod's series starts at the new
// count, which increase() over each series alone would not see.
auto Restarted(const Deployment& d, const Monitoring& m) -> Alert {
  return {"AvfRestarted",
          "warning",
          fmt::format("increase({}[{}:{}]) > 0", Max(Series(Metric::Restarts, d)), Duration(m.restart_window_seconds),
                      Duration(m.scrape_seconds)),
          0,
          fmt::format("a rank of job {} restarted in the last {}", d.job, Human(m.restart_window_seconds)),
          fmt::format("Look first at {}.", LastEnd(d))};
}

// Once the series are older than the window, the epoch or the sequence
// must have moved within it.
auto DataStuck(const Deployment& d, const Monitoring& m) -> Alert {
  std::string window = fmt::format("[{}:{}]", Duration(m.stall_seconds), Duration(m.scrape_seconds));
  std::string sequence = Max(Series(Metric::DataSequence, d));
  return {"AvfDataNotAdvancing",
          "warning",
          fmt::format("changes({}{}) + changes({}{}) == 0 and {}", sequence, window, Max(Series(Metric::DataEpoch, d)),
                      window, Max(Series(Metric::DataSequence, d) + " offset " + Duration(m.stall_seconds))),
          0,
          fmt::format("the data position of job {} has not moved for {}", d.job, Human(m.stall_seconds)),
          fmt::format("Look first at AvfTrainingStalled: without it, {} moves but the data does not; read the "
                      "loader's lines in the logs ({}).",
                      MetricName(Metric::Step), Logs(d))};
}

auto Alerts(const Deployment& d) -> std::vector<Alert> {
  const Monitoring& m = *d.monitoring;
  std::vector<Alert> alerts{Stalled(d, m), LossNotFinite(d)};
  if (m.mfu_below > 0) alerts.push_back(MfuLow(d, m));
  if (m.checkpoint_seconds > 0) alerts.push_back(CheckpointOverdue(d, m));
  alerts.push_back(Restarted(d, m));
  alerts.push_back(DataStuck(d, m));
  return alerts;
}

void WritePodMonitor(YamlWriter& y, const Deployment& d) {
  const Monitoring& m = *d.monitoring;
  y.Map([&] {
    y.Field("apiVersion", "monitoring.coreos.com/v1");
    y.Field("kind", "PodMonitor");
    WriteMetadata(y, d, d.name);
    y.MapField("spec", [&] {
      y.MapField("selector", [&] {
        y.MapField("matchLabels", [&] {
          for (const auto& [k, v] : TrainerPodSelector(d)) y.Field(k, v);
        });
      });
      y.SeqField("podMetricsEndpoints", [&] {
        for (int64_t i = 0; i < m.ports; ++i) {
          y.Map([&] {
            y.Field("port", m.port_name(i));
            y.Field("path", "/metrics");
            y.Field("interval", Duration(m.scrape_seconds));
            // The series' own `job` (the .avf job's name) wins over the scrape job's.
            y.Field("honorLabels", true);
            y.SeqField("relabelings", [&] {
              y.Map([&] {
                y.Key("sourceLabels");
                y.StringSeq({"__meta_kubernetes_pod_node_name"});
                y.Field("targetLabel", kNodeNameLabel);
              });
            });
          });
        }
      });
    });
  });
}

void WriteRule(YamlWriter& y, const Alert& a) {
  y.Map([&] {
    y.Field("alert", a.name);
    y.Key("expr");
    y.Text(a.expr + "\n");
    y.Field("for", Duration(a.for_seconds));
    y.MapField("labels", [&] { y.Field("severity", a.severity); });
    y.MapField("annotations", [&] {
      y.Field("summary", a.summary);
      y.Field("runbook", a.runbook);
    });
  });
}

void WritePrometheusRule(YamlWriter& y, const Deployment& d) {
  y.Map([&] {
    y.Field("apiVersion", "monitoring.coreos.com/v1");
    y.Field("kind", "PrometheusRule");
    WriteMetadata(y, d, d.name);
    y.MapField("spec", [&] {
      y.SeqField("groups", [&] {
        y.Map([&] {
          y.Field("name", "aviflow-" + d.name);
          y.SeqField("rules", [&] {
            for (const Alert& a : Alerts(d)) WriteRule(y, a);
          });
        });
      });
    });
  });
}

// Grafana's dashboard sidecar loads every ConfigMap with this label.
void WriteDashboard(YamlWriter& y, const Deployment& d) {
  y.Map([&] {
    y.Field("apiVersion", "v1");
    y.Field("kind", "ConfigMap");
    WriteMetadata(y, d, d.name + "-dashboard", {{"grafana_dashboard", "1"}});
    y.MapField("data", [&] {
      y.Key(d.name + ".json");
      y.Text(DashboardJson(d));
    });
  });
}

}  // namespace

auto MonitoringYaml(const Deployment& d) -> std::string {
  if (!d.monitoring) return "";
  // A Slurm job's Prometheus is the site's own, which reads rule files.
  bool slurm = d.target == deploy::Target::Slurm;
  YamlWriter y(
      HeaderComment(d, "monitoring.yaml") +
      (slurm ? "\nThe PrometheusRule's spec (its `groups`) is a Prometheus rules file for the site's Prometheus;\n"
               "its scrape configuration lists the nodes' metrics ports."
             : "\nFor the Prometheus Operator (its CRDs): kubectl apply -f monitoring.yaml"));
  WritePodMonitor(y, d);
  if (d.monitoring->alerts) {
    y.NewDocument();
    WritePrometheusRule(y, d);
  }
  if (d.monitoring->dashboard) {
    y.NewDocument();
    WriteDashboard(y, d);
  }
  return y.Output();
}

}  // namespace avf::emit

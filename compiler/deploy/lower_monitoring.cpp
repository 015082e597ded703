// avf-run's Prometheus endpoint in the training pods, and the thresholds of
// the job's alerts: the plan's predictions times the job's `monitoring`
// factors (docs/deploy.md, Monitoring). Only avf-run serves the metrics.
#include <algorithm>
#include <cmath>
#include <string>

#include "deploy/lower_context.h"
#include "plan_format/plan_format.h"

namespace avf::deploy {

namespace {

using diag::DiagId;

// The pod's IP from the downward API; the kubelet expands `$(POD_IP)` in the
// container's command, so each pod serves on its own address.
constexpr const char* kPodIpEnv = "POD_IP";
// No alert on time comes sooner: start-up before the first step and the
// ordinary hiccups of a large job (a slow collective, a slow write) fit in it.
constexpr double kMinAlertSeconds = 300;
// Prometheus scrapes about once a predicted step, within these bounds.
constexpr double kMinScrapeSeconds = 15;
constexpr double kMaxScrapeSeconds = 60;
// A restart alert stays this long, so that one restart is seen by a person.
constexpr int64_t kRestartWindowSeconds = 3600;
constexpr int64_t kHighestPort = 65535;

auto Ceil(double seconds) -> int64_t { return static_cast<int64_t>(std::ceil(std::min(seconds, 1e12))); }

// The ports must exist and miss the rendezvous store's (node 0's pod).
auto CheckPorts(LowerContext& c, const Monitoring& m) -> bool {
  int64_t last = m.port + m.ports - 1;
  std::string why;
  if (last > kHighestPort) why = fmt::format("run past {}, the highest port", kHighestPort);
  else if (m.port <= c.out.port && c.out.port <= last) why = fmt::format("include the rendezvous port {}", c.out.port);
  if (why.empty()) return true;
  c.Report(DiagId::MetricsPortsUnusable, c.job.deploy.monitoring.port_range, c.job.name, m.port, last, why)
      .Help(fmt::format("give `monitoring {{ port = P }}` with P to P + {} clear of {} and at most {}, such as the "
                        "default 9400",
                        m.ports - 1, c.out.port, kHighestPort));
  return false;
}

// One checkpoint's write: the step that takes it (and the last step) holds
// training this long; 0 when the tier's bandwidth is not declared.
auto CheckpointWriteSeconds(const plan::Plan& plan) -> double {
  const std::optional<plan::CheckpointTime>& t = plan.totals.checkpoints;
  if (!t || !t->write_bw || *t->write_bw <= 0) return 0;
  return t->bytes / *t->write_bw;
}

// Seconds between two checkpoints, as avf-run exports their prediction.
auto CheckpointInterval(const plan::Plan& plan) -> double {
  const check::CheckpointSpec& ck = plan.job.checkpoint;
  if (!plan.totals.checkpoints) return 0;
  return plan_format::PredictedCheckpointInterval(ck.every_seconds, ck.every_steps, plan.chosen.prediction.step_time);
}

void LowerThresholds(LowerContext& c, Monitoring& m) {
  const check::MonitoringSpec& s = c.job.deploy.monitoring;
  const cost::Prediction& p = c.plan.chosen.prediction;
  m.step_seconds = p.step_time;
  m.stall_factor = s.stall_factor;
  m.checkpoint_factor = s.checkpoint_factor;
  m.scrape_seconds = Ceil(std::clamp(p.step_time, kMinScrapeSeconds, kMaxScrapeSeconds));
  m.write_seconds = CheckpointWriteSeconds(c.plan);
  m.stall_seconds = Ceil(std::max(s.stall_factor * p.step_time, kMinAlertSeconds) + m.write_seconds);
  m.mfu_predicted = p.mfu;
  // On CPUs the prediction (for the GPUs) is no measure: no MFU alert.
  m.mfu_below = c.job.deploy.on_cpu ? 0 : s.mfu_fraction * p.mfu;
  m.mfu_seconds = std::max<int64_t>(1, Ceil(s.mfu_for));
  m.checkpoint_interval = CheckpointInterval(c.plan);
  if (m.checkpoint_interval > 0) {
    m.checkpoint_seconds =
        Ceil(std::max(s.checkpoint_factor * m.checkpoint_interval, kMinAlertSeconds) + m.write_seconds);
  }
  m.restart_window_seconds = kRestartWindowSeconds;
}

// Kubernetes: each pod serves on its IP. Slurm: the batch script gives each
// node's avf-run the node's address (emit/slurm.cpp).
void LowerEndpoint(Deployment& o, Monitoring& m) {
  o.command.insert(o.command.end(), {"--metrics-port", std::to_string(m.port)});
  if (o.target == Target::Slurm) return;
  m.address_env = kPodIpEnv;
  o.env.push_back(EnvVar::FromField(m.address_env, "status.podIP"));
  o.command.insert(o.command.end(), {"--metrics-address", "$(" + m.address_env + ")"});
}

}  // namespace

void LowerMonitoring(LowerContext& c) {
  const check::MonitoringSpec& s = c.job.deploy.monitoring;
  if (c.job.trainer.kind != check::TrainerKind::Avf) {
    if (s.written) {
      c.Report(DiagId::MonitoringWithoutMetrics, *s.written, c.job.name, Name(c.job.trainer.kind))
          .Note(c.job.trainer.kind_range, fmt::format("the job runs {} here", Name(c.job.trainer.kind)))
          .Help("remove `monitoring`, or train with avf-run (remove `trainer`)");
    }
    return;
  }
  Monitoring m;
  m.port = static_cast<int>(s.port);
  m.ports = c.out.procs_per_node;
  m.alerts = s.alerts;
  m.dashboard = s.dashboard;
  if (!CheckPorts(c, m)) return;
  LowerThresholds(c, m);
  LowerEndpoint(c.out, m);
  c.out.monitoring = std::move(m);
}

}  // namespace avf::deploy

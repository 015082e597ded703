// What every site adds to a job's pods: image pull Secrets, environment,
// labels and annotations, Guaranteed QoS, Multus networks and the CA of an
// https object store (job.pod, cluster.pod_networks, storage.ca_bundle),
// each checked as the API server would check it, and never at the cost of
// what aviflowc itself relies on.
#include <algorithm>

#include "check/check.h"
#include "deploy/k8s_names.h"
#include "deploy/lower_context.h"
#include "plan_format/launch.h"

namespace avf::deploy {

namespace {

using check::Written;
using diag::DiagId;

constexpr std::string_view kMultusAnnotation = "k8s.v1.cni.cncf.io/networks";

void Invalid(LowerContext& c, const Written& w, const std::string& what, const std::string& why) {
  c.Report(DiagId::InvalidKubernetesValue, w.range, Printable(w.value), what, Printable(why));
}

auto IsEnvName(const std::string& name) -> bool {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) return false;
  return std::all_of(name.begin(), name.end(), [](char ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_';
  });
}

// Keys whose meaning is aviflowc's, or the schedulers': a job's own value
// would break the selectors, the admission or the gang.
auto ReservedKeyProblem(const std::string& key) -> std::string {
  for (std::string_view prefix : {"aviflow.dev/", "app.kubernetes.io/managed-by", "app.kubernetes.io/name"}) {
    if (key.rfind(prefix, 0) == 0) return "aviflowc sets it on every object of the job";
  }
  for (std::string_view prefix : {"kueue.x-k8s.io/", "scheduling.k8s.io/", "volcano.sh/", "scheduling.volcano.sh/"}) {
    if (key.rfind(prefix, 0) == 0) return "it steers the scheduler; use the job's `queue` and `priority`";
  }
  if (key == kMultusAnnotation) return "use the cluster's `pod_networks`";
  return "";
}

// `key=value` pairs of labels (`label_value`) or annotations, checked.
auto KeyValues(LowerContext& c, const std::vector<Written>& items, const std::string& what, bool label_value)
    -> std::vector<std::pair<std::string, std::string>> {
  std::vector<std::pair<std::string, std::string>> out;
  for (const Written& w : items) {
    KeyValue kv = SplitKeyValue(w.value);
    std::string why = !kv.has_value ? "it is written `key=value`" : LabelKeyProblem(kv.key);
    if (why.empty()) why = ReservedKeyProblem(kv.key);
    if (why.empty() && label_value) why = LabelValueProblem(kv.value);
    for (const auto& [key, value] : out) {
      if (why.empty() && key == kv.key) why = fmt::format("the key `{}` is already `{}`", key, value);
    }
    if (!why.empty()) Invalid(c, w, what, why);
    else if (CheckScriptSafe(c, kv.value, what, w.range)) out.emplace_back(kv.key, kv.value);
  }
  return out;
}

// A variable of aviflowc's takes the job's value; the rank and rendezvous
// variables and the token's are avf-run's contract and stay.
void LowerEnv(LowerContext& c) {
  Deployment& o = c.out;
  std::vector<std::string> seen;
  for (const Written& w : c.job.deploy.extra_env) {
    KeyValue kv = SplitKeyValue(w.value);
    std::string why = !kv.has_value || !IsEnvName(kv.key)
                          ? "it is written `NAME=value`, NAME of letters, digits and `_`"
                      : plan_format::IsLaunchVariable(kv.key) || kv.key == o.token.env
                          ? "avf-run reads it to find its rank and the rendezvous; aviflowc sets it"
                      : o.monitoring && kv.key == o.monitoring->address_env
                          ? "avf-run serves its metrics on this address, the pod's IP; aviflowc sets it"
                          : "";
    if (why.empty() && std::find(seen.begin(), seen.end(), kv.key) != seen.end()) why = "it is set twice";
    if (!why.empty()) {
      Invalid(c, w, "environment variable", why);
      continue;
    }
    if (!CheckScriptSafe(c, kv.value, "environment value", w.range)) continue;
    seen.push_back(kv.key);
    auto mine = std::find_if(o.env.begin(), o.env.end(), [&](const EnvVar& e) { return e.name == kv.key; });
    if (mine == o.env.end()) {
      o.env.push_back(EnvVar::Literal(kv.key, kv.value, "the job's `pod.env`"));
    } else {
      *mine = EnvVar::Literal(kv.key, kv.value, fmt::format("the job's `pod.env` (aviflowc's: {})", mine->value));
    }
  }
}

void LowerNetworks(LowerContext& c) {
  std::string list;
  for (const Written& w : c.job.deploy.pod_networks) {
    size_t slash = w.value.find('/');
    bool ok = slash == std::string::npos
                  ? IsDns1123Label(w.value)
                  : IsDns1123Label(w.value.substr(0, slash)) && IsDns1123Label(w.value.substr(slash + 1));
    if (!ok) {
      Invalid(c, w, "Multus network", "a NetworkAttachmentDefinition is named `name` or `namespace/name`");
      continue;
    }
    list += (list.empty() ? "" : ",") + w.value;
  }
  if (!list.empty()) c.out.trainer_annotations.emplace_back(kMultusAnnotation, list);
}

void LowerQos(LowerContext& c) {
  const check::DeploySpec& d = c.job.deploy;
  Resources& r = c.out.resources;
  if (!d.guaranteed_qos) return;
  if (!r.cpus || r.memory.empty()) {
    c.Report(DiagId::GuaranteedWithoutLimits, d.qos_range, c.job.name, !r.cpus ? "CPUs" : "memory")
        .Help("give the job `resources { cpus = N; memory = SIZE }`, or the node's `cpus` and `cpu_memory`");
    return;
  }
  r.guaranteed = true;
}

}  // namespace

void LowerSiteNeeds(LowerContext& c) {
  const check::DeploySpec& d = c.job.deploy;
  Deployment& o = c.out;
  for (const Written& w : d.image_pull_secrets) {
    if (!IsDns1123Subdomain(w.value)) Invalid(c, w, "Secret name", "lower-case letters, digits, `-` and `.`");
    else o.image_pull_secrets.push_back(w.value);
  }
  LowerEnv(c);
  o.extra_labels = KeyValues(c, d.extra_labels, "label", true);
  o.pod_annotations = KeyValues(c, d.extra_annotations, "annotation", false);
  o.trainer_annotations = o.pod_annotations;
  LowerNetworks(c);
  LowerQos(c);
  o.socket_interface = d.socket_interface.value;
}

}  // namespace avf::deploy

// plan-configmap.yaml (the plan every pod mounts, and the claims of `pvc`
// tiers) and rbac.yaml (what the workflow's steps may do, nothing more).
#include <fmt/format.h>

#include "emit/k8s_pod.h"
#include "emit/manifests.h"

namespace avf::emit {

namespace {

using deploy::Deployment;

void WriteConfigMap(YamlWriter& y, const Deployment& d) {
  y.Map([&] {
    y.Field("apiVersion", "v1");
    y.Field("kind", "ConfigMap");
    WriteMetadata(y, d, d.configmap);
    // The API server refuses any change: a plan the pods read never changes under them.
    y.Field("immutable", true);
    y.MapField("data", [&] {
      y.Key("plan.json");
      y.Text(d.plan_json);
      if (!d.trainer_config_name.empty()) {
        y.Key(d.trainer_config_name);
        y.Text(d.trainer_config);
      }
      for (const auto& [name, text] : d.trainer_files) {
        y.Key(name);
        y.Text(text);
      }
    });
  });
}

void WriteClaim(YamlWriter& y, const Deployment& d, const deploy::Claim& c) {
  y.Map([&] {
    y.Field("apiVersion", "v1");
    y.Field("kind", "PersistentVolumeClaim");
    WriteMetadata(y, d, c.name, {{"aviflow.dev/storage", c.storage}});
    y.MapField("spec", [&] {
      // Every node's pods mount the tier at once.
      y.Key("accessModes");
      y.StringSeq({"ReadWriteMany"});
      if (!c.storage_class.empty()) y.Field("storageClassName", c.storage_class);
      y.MapField("resources", [&] { y.MapField("requests", [&] { y.Field("storage", c.capacity); }); });
    });
  });
}

// `names`: the rule covers only the objects of these names (resourceNames);
// `why`: a comment on the verbs, for a rule whose reach needs one.
void WriteRule(YamlWriter& y, std::string_view group, const std::vector<std::string>& resources,
               const std::vector<std::string>& verbs, const std::vector<std::string>& names = {},
               std::string_view why = "") {
  y.Map([&] {
    y.Key("apiGroups");
    y.StringSeq({std::string(group)});
    y.Key("resources");
    y.StringSeq(resources);
    if (!names.empty()) {
      y.Key("resourceNames");
      y.StringSeq(names);
    }
    y.Key("verbs");
    y.Seq([&] {
      for (const std::string& v : verbs) y.String(v);
      if (!why.empty()) y.Comment(why);
    });
  });
}

}  // namespace

auto PlanConfigMapYaml(const Deployment& d) -> std::string {
  std::string header =
      HeaderComment(d, "plan-configmap.yaml") +
      "\nThe plan every training pod reads at /etc/aviflow/plan.json: kubectl apply -f plan-configmap.yaml";
  YamlWriter y(header);
  WriteConfigMap(y, d);
  for (const deploy::Claim& c : d.claims) {
    y.NewDocument();
    WriteClaim(y, d, c);
  }
  return y.Output();
}

auto RbacYaml(const Deployment& d) -> std::string {
  std::string header = HeaderComment(d, "rbac.yaml") +
                       "\nThe identity of the workflow's steps: they create the job token's Secret, create and watch\n"
                       "the training object, and report their results to Argo. kubectl apply -f rbac.yaml";
  YamlWriter y(header);
  ObjectKind k = TrainingObjectKind(d);
  y.Map([&] {
    y.Field("apiVersion", "v1");
    y.Field("kind", "ServiceAccount");
    WriteMetadata(y, d, d.service_account);
  });
  y.NewDocument();
  y.Map([&] {
    y.Field("apiVersion", "rbac.authorization.k8s.io/v1");
    y.Field("kind", "Role");
    WriteMetadata(y, d, d.service_account);
    y.SeqField("rules", [&] {
      // start-training and create-podgroup create, train reads, the exit handler deletes.
      WriteRule(y, k.group, {k.plural}, {"create", "get", "delete"});
      if (HasPodGroup(d)) WriteRule(y, "scheduling.volcano.sh", {"podgroups"}, {"create", "get", "delete"});
      // make-token reads the job token's Secret, and no other, to see whether it exists; it never
      // lists, updates or deletes Secrets (the garbage collector deletes it with the workflow).
      WriteRule(y, "", {"secrets"}, {"get"}, {d.token.secret}, "make-token: does the job token's Secret exist?");
      WriteRule(y, "", {"secrets"}, {"create"}, {},
                "make-token creates the job token's Secret; RBAC cannot limit `create` to a name");
      WriteRule(y, "argoproj.io", {"workflowtaskresults"}, {"create", "patch"});
      // An owner reference with blockOwnerDeletion needs update on the owner's finalizers.
      WriteRule(y, "argoproj.io", {"workflows/finalizers"}, {"update"});
    });
  });
  y.NewDocument();
  y.Map([&] {
    y.Field("apiVersion", "rbac.authorization.k8s.io/v1");
    y.Field("kind", "RoleBinding");
    WriteMetadata(y, d, d.service_account);
    y.MapField("roleRef", [&] {
      y.Field("apiGroup", "rbac.authorization.k8s.io");
      y.Field("kind", "Role");
      y.Field("name", d.service_account);
    });
    y.SeqField("subjects", [&] {
      y.Map([&] {
        y.Field("kind", "ServiceAccount");
        y.Field("name", d.service_account);
        if (!d.k8s_namespace.empty()) y.Field("namespace", d.k8s_namespace);
      });
    });
  });
  return y.Output();
}

}  // namespace avf::emit

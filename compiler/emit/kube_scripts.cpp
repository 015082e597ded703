#include "emit/kube_scripts.h"

#include <fmt/format.h>

#include "emit/scripts.h"

namespace avf::emit {

namespace {

// The Secret's manifest as the arguments of `printf '%s\n'`: literal lines
// single-quoted, the ones with the name, the workflow and the token
// double-quoted so that the shell fills them in.
auto SecretManifestArgs(const deploy::JobToken& t, const std::vector<std::pair<std::string, std::string>>& labels)
    -> std::string {
  // `KEY: "$VAR"`, which the shell completes.
  auto filled = [](std::string_view key, std::string_view var) { return fmt::format("\"{}: \\\"${}\\\"\"", key, var); };
  std::vector<std::string> args{
      ShellQuote("apiVersion: \"v1\""), ShellQuote("kind: \"Secret\""),     ShellQuote("metadata:"),
      filled("  name", "secret"),       filled("  namespace", "namespace"), ShellQuote("  labels:")};
  for (const auto& [k, v] : labels) args.push_back(ShellQuote(fmt::format("    {}: \"{}\"", k, v)));
  std::vector<std::string> rest{ShellQuote("  ownerReferences:"),
                                ShellQuote("    - apiVersion: \"argoproj.io/v1alpha1\""),
                                ShellQuote("      kind: \"Workflow\""),
                                filled("      name", "WF_NAME"),
                                filled("      uid", "WF_UID"),
                                ShellQuote("type: \"Opaque\""),
                                ShellQuote("stringData:"),
                                filled("  " + t.key, "token")};
  args.insert(args.end(), rest.begin(), rest.end());
  std::string out;
  for (size_t i = 0; i < args.size(); ++i) out += "    " + args[i] + (i + 1 < args.size() ? " \\\n" : "\n");
  return out;
}

// Shell lines setting $resource, $name and $namespace.
auto ObjectVars(const KubeObject& o) -> std::string {
  return fmt::format("resource={}\nname={}\nnamespace={}\n", ShellQuote(o.resource), ShellQuote(o.name),
                     ShellQuote(o.k8s_namespace));
}

// kubectl's jsonpath of the uids of the Workflows that own an object.
constexpr std::string_view kOwnersPath = "{.metadata.ownerReferences[?(@.kind==\"Workflow\")].uid}";

// ObjectVars, and $owners: the uids of the Workflows that own that object
// ("" when it is gone or has none).
auto OwnersQuery(const KubeObject& o) -> std::string {
  return ObjectVars(o) + fmt::format(
                             "owners=\"$(kubectl get \"$resource\" \"$name\" --namespace \"$namespace\" "
                             "--ignore-not-found \\\n"
                             "  -o jsonpath='{}')\"\n",
                             kOwnersPath);
}

// A shell function `state` that prints the object's `jsonpath`, a
// `|`-separated list of fields led by its uid (`what` says which), and ""
// when the object is gone.
auto StateFunction(std::string_view what, std::string_view jsonpath) -> std::string {
  return fmt::format(
      "# \"{}\", \"\" when the object is gone.\n"
      "state() {{\n"
      "  kubectl get \"$resource\" \"$name\" --namespace \"$namespace\" --ignore-not-found \\\n"
      "    -o jsonpath='{{.metadata.uid}}|{}'\n"
      "}}\n",
      what, jsonpath);
}

// A function `attach` of "UID|OWNER UIDS" (an object that exists): exits 0
// when this workflow owns it, else kTrainingEndedStatus with who does.
auto AttachFunction() -> std::string {
  return fmt::format(
      "attach() {{\n"
      "  owners=\"${{1#*|}}\"\n"
      "  case \" $owners \" in\n"
      "    *\" $WF_UID \"*)\n"
      "      echo \"$resource $name exists (this workflow's): it goes on\"\n"
      "      exit 0 ;;\n"
      "    \"  \") echo \"error: $resource $name exists, made by no workflow (kubectl apply?): delete it first\" >&2 "
      ";;\n"
      "    *) echo \"error: $resource $name belongs to another workflow (uid $owners): argo delete that one first\" "
      ">&2 ;;\n"
      "  esac\n"
      "  exit {}\n"
      "}}\n",
      kTrainingEndedStatus);
}

}  // namespace

auto DeleteIfOwnedScript(const KubeObject& o) -> std::string {
  return "set -eu\n" + OwnersQuery(o) +
         "case \" $owners \" in\n"
         "  *\" $WF_UID \"*) kubectl delete \"$resource\" \"$name\" --namespace \"$namespace\" --ignore-not-found ;;\n"
         "  \"  \") echo \"$resource $name: none of this workflow's to delete\" ;;\n"
         "  *) echo \"$resource $name belongs to another workflow (uid $owners): left running\" ;;\n"
         "esac\n";
}

auto UnlessAnotherRunsScript(const KubeObject& o, const std::string& body) -> std::string {
  return "set -eu\n" + OwnersQuery(o) +
         "case \" $owners \" in\n"
         "  \"  \" | *\" $WF_UID \"*) ;;\n"
         "  *) echo \"$resource $name of another workflow (uid $owners) is running: nothing done\"; exit 0 ;;\n"
         "esac\n" +
         body;
}

auto CreateOwnedScript(const KubeObject& o, const std::string& manifest) -> std::string {
  return "set -eu\n" + ObjectVars(o) + StateFunction("UID|OWNER UIDS", kOwnersPath) + AttachFunction() +
         fmt::format(
             "found=\"$(state)\"\n"
             "[ -z \"$found\" ] || attach \"$found\"\n"
             "manifest() {{\n"
             "  cat <<'AVF_MANIFEST'\n"
             "{}"
             "AVF_MANIFEST\n"
             "}}\n"
             "if ! manifest | kubectl create --namespace \"$namespace\" -f -; then\n"
             "  # Made meanwhile, by a lost attempt of this step or by someone else?\n"
             "  found=\"$(state)\"\n"
             "  [ -z \"$found\" ] || attach \"$found\"\n"
             "  exit 1\n"
             "fi\n",
             manifest);
}

auto AwaitTrainingScript(const KubeObject& o, const std::string& done_condition) -> std::string {
  std::string holds = std::string(kOwnersPath) + "|{.status.conditions[?(@.status==\"True\")].type}";
  return "set -eu\n" + ObjectVars(o) +
         fmt::format("done_condition={}\npoll=\"${{AVF_POLL_SECONDS:-30}}\"\n", ShellQuote(done_condition)) +
         StateFunction("UID|OWNER UIDS|CONDITIONS THAT HOLD", holds) +
         fmt::format(
             "echo \"waiting for $resource $name to end ($done_condition or Failed)\"\n"
             "errors=0\n"
             "seen=-\n"
             "while :; do\n"
             "  if ! found=\"$(state)\"; then\n"
             "    errors=$((errors + 1))\n"
             "    if [ \"$errors\" -ge 10 ]; then\n"
             "      echo \"error: no answer from the API server 10 times in a row; a retry waits again\" >&2\n"
             "      exit 1\n"
             "    fi\n"
             "    sleep \"$poll\"\n"
             "    continue\n"
             "  fi\n"
             "  errors=0\n"
             "  if [ -z \"$found\" ]; then\n"
             "    echo \"error: $resource $name is gone: it was deleted outside this workflow\" >&2\n"
             "    exit {0}\n"
             "  fi\n"
             "  rest=\"${{found#*|}}\"\n"
             "  owners=\"${{rest%%|*}}\"\n"
             "  holds=\"${{rest#*|}}\"\n"
             "  case \" $owners \" in\n"
             "    *\" $WF_UID \"*) ;;\n"
             "    *) echo \"error: $resource $name is not this workflow's (owners: ${{owners:-none}})\" >&2; exit {0} "
             ";;\n"
             "  esac\n"
             "  if [ \"$holds\" != \"$seen\" ]; then\n"
             "    echo \"$resource $name: ${{holds:-no condition yet}}\"\n"
             "    seen=\"$holds\"\n"
             "  fi\n"
             "  case \" $holds \" in\n"
             "    *\" $done_condition \"*) exit 0 ;;\n"
             "    *\" Failed \"*)\n"
             "      why=\"$(kubectl get \"$resource\" \"$name\" --namespace \"$namespace\" \\\n"
             "        -o jsonpath='{{.status.conditions[?(@.type==\"Failed\")].message}}' 2>/dev/null || true)\"\n"
             "      echo \"error: $resource $name failed: ${{why:-no message}}\" >&2\n"
             "      exit {0} ;;\n"
             "  esac\n"
             "  sleep \"$poll\"\n"
             "done\n",
             kTrainingEndedStatus);
}

// The Secret's manifest goes to `kubectl create -f -` from printf, a shell
// built-in, so that the token is never an argument of a process (visible in
// /proc), never in a file and never printed; the step's output (its Argo
// result) only says what it did.
auto MakeTokenScript(const deploy::JobToken& t, const std::string& k8s_namespace,
                     const std::vector<std::pair<std::string, std::string>>& labels) -> std::string {
  return fmt::format(
      "set -eu\n"
      "secret={0}\n"
      "namespace={1}\n"
      "# The uids of the Workflows that own the Secret, \"\" for none; fails without a Secret.\n"
      "owners() {{\n"
      "  kubectl get secret \"$secret\" --namespace \"$namespace\" \\\n"
      "    -o jsonpath='{{.metadata.ownerReferences[?(@.kind==\"Workflow\")].uid}}' 2>/dev/null\n"
      "}}\n"
      "# A Secret that exists is used as it is, unless another workflow owns it:\n"
      "# deleting that one deletes the Secret (a retry of this step then makes a new one).\n"
      "use() {{\n"
      "  case \" $1 \" in\n"
      "    \"  \" | *\" $WF_UID \"*)\n"
      "      echo \"Secret $secret exists: the ranks use its token\"\n"
      "      exit 0 ;;\n"
      "  esac\n"
      "  echo \"error: Secret $secret belongs to another workflow (uid $1), which deletes it when it is deleted\" >&2\n"
      "  exit 1\n"
      "}}\n"
      "if owner=\"$(owners)\"; then use \"$owner\"; fi\n"
      "# {2} random bytes as {3} hex digits, kept in this shell.\n"
      "token=\"$(od -An -N{2} -tx1 /dev/urandom | tr -d ' \\n')\"\n"
      "if [ \"${{#token}}\" -ne {3} ]; then\n"
      "  echo \"error: could not read {2} random bytes from /dev/urandom\" >&2\n"
      "  exit 1\n"
      "fi\n"
      "# Owned by the workflow: deleting the workflow deletes the Secret.\n"
      "manifest() {{\n"
      "  printf '%s\\n' \\\n"
      "{4}"
      "}}\n"
      "if ! manifest | kubectl create --namespace \"$namespace\" -f - >/dev/null; then\n"
      "  # Made meanwhile, by hand or by another run?\n"
      "  owner=\"$(owners)\"\n"
      "  use \"$owner\"\n"
      "fi\n"
      "echo \"created Secret $secret with a fresh token\"\n",
      ShellQuote(t.secret), ShellQuote(k8s_namespace), t.random_bytes, 2 * t.random_bytes,
      SecretManifestArgs(t, labels));
}

}  // namespace avf::emit

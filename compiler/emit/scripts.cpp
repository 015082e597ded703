#include "emit/scripts.h"

#include <cctype>

#include <fmt/format.h>

namespace avf::emit {

namespace {

using deploy::EnvVar;
using deploy::Staging;

auto UpperName(std::string_view name) -> std::string {
  std::string out;
  for (char c : name) out += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

// rclone flags of every copy: retries inside the step, progress once a
// minute. Files are compared by size and modification time (rclone's
// default), so a copy from another source never keeps a same-size file.
auto RcloneFlags(int64_t bwlimit_kib) -> std::string {
  std::string flags = "--transfers 4 --checkers 8 --retries 3 --low-level-retries 10 --stats 60s --stats-one-line -v";
  if (bwlimit_kib > 0) flags += fmt::format(" --bwlimit {}K", bwlimit_kib);
  return flags;
}

// verify_shards DIR: every shard file has the size its token count gives.
auto VerifyFunction(const Staging& s) -> std::string {
  return fmt::format(
      "# shard_NNNNNN.bin: a {}-byte header, then {}-byte tokens (docs/plan-format.md#shard-files)\n"
      "verify_shards() {{\n"
      "  bad=0\n"
      "  i=0\n"
      "  while [ \"$i\" -lt {} ]; do\n"
      "    want={}\n"
      "    [ \"$i\" -eq {} ] && want={}\n"
      "    f=\"$(printf '%s/shard_%06d.bin' \"$1\" \"$i\")\"\n"
      "    have=\"$(stat -c %s \"$f\" 2>/dev/null || echo missing)\"\n"
      "    if [ \"$have\" != \"$want\" ]; then\n"
      "      bad=$((bad + 1))\n"
      "      [ \"$bad\" -le 10 ] && echo \"$f: $have bytes, expected $want\" >&2\n"
      "    fi\n"
      "    i=$((i + 1))\n"
      "  done\n"
      "  [ \"$bad\" -eq 0 ]\n"
      "}}\n",
      s.header_bytes, s.token_bytes, s.shards, s.shard_bytes, s.shards - 1, s.last_shard_bytes);
}

auto Prologue(const Staging& s) -> std::string {
  return fmt::format("set -eu\ndir={}\nmarker={}\n", ShellQuote(s.dest_dir), ShellQuote(s.marker));
}

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

}  // namespace

auto ShellQuote(std::string_view text) -> std::string {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  return out + "'";
}

auto RemotePath(const deploy::Remote& r, const std::string& path) -> std::string {
  if (r.is_local()) return path.empty() ? r.local_root : r.local_root + "/" + path;
  return r.name + ":" + r.bucket + (path.empty() ? "" : "/" + path);
}

auto RemoteEnv(const deploy::Remote& r) -> std::vector<EnvVar> {
  if (r.is_local()) return {};
  std::string p = "RCLONE_CONFIG_" + UpperName(r.name) + "_";
  std::vector<EnvVar> env{
      EnvVar::Literal(p + "TYPE", "s3"),
      EnvVar::Literal(p + "PROVIDER", r.provider),
      EnvVar::Literal(p + "ENDPOINT", r.endpoint),
      EnvVar::Literal(p + "ENV_AUTH", r.secret.empty() ? "false" : "true"),
  };
  if (!r.secret.empty()) {
    env.push_back(EnvVar::FromSecret("AWS_ACCESS_KEY_ID", r.secret, "AWS_ACCESS_KEY_ID"));
    env.push_back(EnvVar::FromSecret("AWS_SECRET_ACCESS_KEY", r.secret, "AWS_SECRET_ACCESS_KEY"));
  }
  return env;
}

auto CheckStagedScript(const Staging& s) -> std::string {
  return Prologue(s) + VerifyFunction(s) +
         fmt::format(
             "if [ -f \"$dir/{0}\" ] && [ \"$(cat \"$dir/{0}\")\" = \"$marker\" ] && verify_shards \"$dir\" "
             "2>/dev/null; then\n"
             "  echo staged\n"
             "else\n"
             "  echo missing\n"
             "fi\n",
             kStagedMarker);
}

auto CopyShardsScript(const Staging& s, int64_t bwlimit_kib) -> std::string {
  return fmt::format(
      "set -eu\n"
      "dir={}\n"
      "mkdir -p \"$dir\"\n"
      "list=\"$(mktemp)\"\n"
      "i=\"$FIRST\"\n"
      "while [ \"$i\" -le \"$LAST\" ]; do\n"
      "  printf 'shard_%06d.bin\\n' \"$i\" >> \"$list\"\n"
      "  i=$((i + 1))\n"
      "done\n"
      "echo \"copying shards $FIRST..$LAST to $dir\"\n"
      "rclone copy {} \"$dir\" --files-from-raw \"$list\" --no-traverse {}\n",
      ShellQuote(s.dest_dir), ShellQuote(RemotePath(s.source, s.source_path)), RcloneFlags(bwlimit_kib));
}

auto SealStagedScript(const Staging& s) -> std::string {
  return Prologue(s) + VerifyFunction(s) +
         fmt::format(
             "if ! verify_shards \"$dir\"; then\n"
             "  echo \"error: some of the {0} shards in $dir are missing or have the wrong size\" >&2\n"
             "  exit 1\n"
             "fi\n"
             "printf '%s\\n' \"$marker\" > \"$dir/{1}.tmp\"\n"
             "mv \"$dir/{1}.tmp\" \"$dir/{1}\"\n"
             "echo \"staged {0} shards in $dir\"\n",
             s.shards, kStagedMarker);
}

auto ExportScript(const deploy::Export& e) -> std::string {
  std::string keep = e.keep ? fmt::format(" | tail -n {}", *e.keep) : "";
  return fmt::format(
      "set -eu\n"
      "dir={}\n"
      "kept=\"$(mktemp)\"\n"
      "# committed checkpoints: step_NNNNNNNN directories holding COMMITTED (docs/deploy.md)\n"
      "for d in \"$dir\"/step_*; do\n"
      "  if [ -f \"$d/COMMITTED\" ]; then basename \"$d\"; fi\n"
      "done | sort{} > \"$kept\"\n"
      "if [ ! -s \"$kept\" ]; then\n"
      "  echo \"error: no committed checkpoint in $dir\" >&2\n"
      "  exit 1\n"
      "fi\n"
      "while read -r name; do\n"
      "  echo \"exporting $name\"\n"
      "  rclone copy \"$dir/$name\" {}\"/$name\" {}\n"
      "done < \"$kept\"\n",
      ShellQuote(e.checkpoint_dir), keep, ShellQuote(RemotePath(e.dest, e.dest_path)), RcloneFlags(0));
}

auto CleanupScript(const Staging& s) -> std::string {
  return fmt::format(
      "set -eu\n"
      "dir={}\n"
      "if [ -d \"$dir\" ]; then\n"
      "  rm -rf -- \"$dir\"\n"
      "  echo \"removed the staged copy in $dir\"\n"
      "fi\n",
      ShellQuote(s.dest_dir));
}

// The manifest goes to `kubectl create -f -` from printf, a shell built-in,
// so that the token is never an argument of a process (visible in /proc),
// never in a file and never printed; the step's output (its Argo result)
// only says what it did.
namespace {

// Shell lines setting $resource, $name, $namespace, and $owners to the uids of
// the Workflows that own that object ("" when it is gone or has none).
auto OwnersQuery(const std::string& resource, const std::string& name, const std::string& k8s_namespace)
    -> std::string {
  return fmt::format(
      "resource={0}\n"
      "name={1}\n"
      "namespace={2}\n"
      "owners=\"$(kubectl get \"$resource\" \"$name\" --namespace \"$namespace\" --ignore-not-found \\\n"
      "  -o jsonpath='{{.metadata.ownerReferences[?(@.kind==\"Workflow\")].uid}}')\"\n",
      ShellQuote(resource), ShellQuote(name), ShellQuote(k8s_namespace));
}

}  // namespace

auto DeleteIfOwnedScript(const std::string& resource, const std::string& name, const std::string& k8s_namespace)
    -> std::string {
  return "set -eu\n" + OwnersQuery(resource, name, k8s_namespace) +
         "case \" $owners \" in\n"
         "  *\" $WF_UID \"*) kubectl delete \"$resource\" \"$name\" --namespace \"$namespace\" --ignore-not-found ;;\n"
         "  \"  \") echo \"$resource $name: none of this workflow's to delete\" ;;\n"
         "  *) echo \"$resource $name belongs to another workflow (uid $owners): left running\" ;;\n"
         "esac\n";
}

auto UnlessAnotherRunsScript(const std::string& resource, const std::string& name, const std::string& k8s_namespace,
                             const std::string& body) -> std::string {
  return "set -eu\n" + OwnersQuery(resource, name, k8s_namespace) +
         "case \" $owners \" in\n"
         "  \"  \" | *\" $WF_UID \"*) ;;\n"
         "  *) echo \"$resource $name of another workflow (uid $owners) is running: nothing done\"; exit 0 ;;\n"
         "esac\n" +
         body;
}

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

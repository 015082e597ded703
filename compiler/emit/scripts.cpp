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

auto CaCertDir(const deploy::Remote& r) -> std::string { return "/etc/aviflow/ca/" + r.name; }

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
      "dir={0}\n"
      "kept=\"$(mktemp)\"\n"
      "# committed checkpoints: step_NNNNNNNN directories holding COMMITTED (docs/deploy.md)\n"
      "for d in \"$dir\"/step_*; do\n"
      "  if [ -f \"$d/COMMITTED\" ]; then basename \"$d\"; fi\n"
      "done | sort{1} > \"$kept\"\n"
      "if [ ! -s \"$kept\" ]; then\n"
      "  echo \"error: no committed checkpoint in $dir\" >&2\n"
      "  exit 1\n"
      "fi\n"
      "while read -r name; do\n"
      "  echo \"exporting $name\"\n"
      "  rclone copy \"$dir/$name\" {2}\"/$name\" {3}\n"
      "done < \"$kept\"\n"
      "# metrics.jsonl and the memory reports of the run\n"
      "if [ -d \"$dir/{4}\" ]; then\n"
      "  echo \"exporting {4}\"\n"
      "  rclone copy \"$dir/{4}\" {2}\"/{4}\" {3}\n"
      "fi\n",
      ShellQuote(e.checkpoint_dir), keep, ShellQuote(RemotePath(e.dest, e.dest_path)), RcloneFlags(0),
      deploy::kRunFolder);
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

auto TierCheckScript(const std::vector<deploy::Volume>& mounts) -> std::string {
  std::string checks;
  for (const deploy::Volume& v : mounts) {
    if (v.kind != deploy::VolumeKind::HostPath || v.fs_types.empty()) continue;
    std::string types;
    for (const std::string& t : v.fs_types) types += (types.empty() ? "" : " ") + t;
    checks += fmt::format("check_tier {} {}\n", ShellQuote(v.mount_path), ShellQuote(types));
  }
  if (checks.empty()) return "";
  return "# check_tier DIR TYPES: DIR is a mount of one of the file systems TYPES.\n"
         "check_tier() {\n"
         "  found=\"$(awk -v dir=\"$1\" '$5 == dir { for (i = 7; i < NF; i++) if ($i == \"-\") { print $(i + 1); "
         "break } }' \\\n"
         "    \"${AVF_MOUNTINFO:-/proc/self/mountinfo}\" | tail -n 1)\"\n"
         "  case \" $2 \" in\n"
         "    *\" ${found:-none} \"*) return 0 ;;\n"
         "  esac\n"
         "  echo \"error: $1 on node ${NODE_NAME:-unknown} is ${found:-no mount} where the tier is $2:\" \\\n"
         "    \"is the tier mounted on this node? Nothing is written to the node's own disk\" >&2\n"
         "  exit 1\n"
         "}\n" +
         checks;
}

auto InterfaceCheckScript(const std::string& interface) -> std::string {
  return fmt::format(
      "interface={}\n"
      "net=\"${{AVF_SYS_CLASS_NET:-/sys/class/net}}\"\n"
      "if [ ! -e \"$net/$interface\" ]; then\n"
      "  echo \"error: the pod on node ${{NODE_NAME:-unknown}} has no network interface $interface (the cluster's\" "
      "\\\n"
      "    \"socket_interface), only: $(ls \"$net\" | tr '\\n' ' ')\" >&2\n"
      "  exit 1\n"
      "fi\n",
      ShellQuote(interface));
}

auto StagedCopyCheckScript(const Staging& s) -> std::string {
  return Prologue(s) +
         fmt::format(
             "if [ \"$(cat \"$dir/{0}\" 2>/dev/null)\" != \"$marker\" ]; then\n"
             "  echo \"error: $dir on node ${{NODE_NAME:-unknown}} holds no sealed copy of the dataset\" \\\n"
             "    \"(its {0} is not: $marker)\" >&2\n"
             "  exit 1\n"
             "fi\n",
             kStagedMarker);
}

}  // namespace avf::emit

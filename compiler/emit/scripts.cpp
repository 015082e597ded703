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

// The token-shard header (docs/data-format.md): 256 little-endian uint32
// words; word 0 the magic, word 1 the version, then aviflow's bytes per token
// (word 2) and 64-bit count (words 4-5), or llm.c's 32-bit count (word 2).
constexpr uint32_t kAviflowMagic = 0x54465641;  // "AVFT"
constexpr uint32_t kAviflowVersion = 1;
constexpr uint32_t kLlmcMagicU16 = 20240520, kLlmcVersionU16 = 1;
constexpr uint32_t kLlmcMagicU32 = 20240801, kLlmcVersionU32 = 7;

// read_header FILE: `count` and `width` (bytes per token) of the shard header
// FILE starts with; else `why` it is not one. Only its first 24 bytes are read.
auto ReadHeaderFunction(const Staging& s) -> std::string {
  return fmt::format(
      "# Token shards (docs/data-format.md): a {0}-byte header of little-endian uint32 words, then the tokens.\n"
      "# read_header FILE: count and width (bytes per token) of the shard header FILE starts with; else why.\n"
      "read_header() {{\n"
      "  set -- $(od -A n -t u1 -N 24 -v \"$1\")\n"
      "  if [ \"$#\" -lt 24 ]; then\n"
      "    why=\"cannot read its header\"\n"
      "    return 1\n"
      "  fi\n"
      "  w0=$(($1 + $2 * 256 + $3 * 65536 + $4 * 16777216))\n"
      "  w1=$(($5 + $6 * 256 + $7 * 65536 + $8 * 16777216))\n"
      "  w2=$(($9 + ${{10}} * 256 + ${{11}} * 65536 + ${{12}} * 16777216))\n"
      "  lo=$((${{17}} + ${{18}} * 256 + ${{19}} * 65536 + ${{20}} * 16777216))\n"
      "  hi=$((${{21}} + ${{22}} * 256 + ${{23}} * 65536 + ${{24}} * 16777216))\n"
      "  why=\"\"\n"
      "  case \"$w0.$w1\" in\n"
      "    {1}.{2})\n"
      "      if [ \"$hi\" -ge 1048576 ]; then why=\"a count of 2^52 tokens or more\"; return 1; fi\n"
      "      width=\"$w2\"\n"
      "      count=$((hi * 4294967296 + lo)) ;;\n"
      "    {3}.{4}) width=2; count=\"$w2\" ;;\n"
      "    {5}.{6}) width=4; count=\"$w2\" ;;\n"
      "    {1}.*) why=\"aviflow shard of version $w1; expected version {2}\" ;;\n"
      "    {3}.*) why=\"llm.c shard (magic {3}) of version $w1; expected version {4}\" ;;\n"
      "    {5}.*) why=\"llm.c shard (magic {5}) of version $w1; expected version {6}\" ;;\n"
      "    *) why=\"$(printf 'not a token shard (magic 0x%08x; aviflow shards start with \"AVFT\")' \"$w0\")\" ;;\n"
      "  esac\n"
      "  [ -z \"$why\" ]\n"
      "}}\n",
      s.header_bytes, kAviflowMagic, kAviflowVersion, kLlmcMagicU16, kLlmcVersionU16, kLlmcMagicU32, kLlmcVersionU32);
}

// check_shards WHERE FIRST LAST: shards FIRST..LAST of WHERE are whole shards
// of the dataset's format, each as long as its header says; `total` is their
// tokens, `bad` how many are not (the first ten named, with why).
// `shard_at WHERE NAME` gives a shard's `size` (or `missing`) and `header`,
// a file that starts with its bytes.
auto CheckShardsFunction(const Staging& s) -> std::string {
  return ReadHeaderFunction(s) +
         fmt::format(
             "# check_shards WHERE FIRST LAST: shards FIRST..LAST of WHERE are whole {0} shards, as long as their\n"
             "# headers say; total is their tokens, bad how many are not (the first ten named).\n"
             "check_shards() {{\n"
             "  bad=0\n"
             "  total=0\n"
             "  i=\"$2\"\n"
             "  while [ \"$i\" -le \"$3\" ]; do\n"
             "    name=\"$(printf 'shard_%06d.bin' \"$i\")\"\n"
             "    shard_at \"$1\" \"$name\"\n"
             "    if [ \"$size\" = missing ]; then\n"
             "      why=missing\n"
             "    elif [ \"$size\" -lt {1} ]; then\n"
             "      why=\"$size bytes, shorter than the {1}-byte header\"\n"
             "    elif read_header \"$header\"; then\n"
             "      want=$(({1} + count * {2}))\n"
             "      if [ \"$width\" -ne {2} ]; then\n"
             "        why=\"$width-byte tokens, but the dataset's format is {0} ({2}-byte tokens)\"\n"
             "      elif [ \"$size\" -ne \"$want\" ]; then\n"
             "        why=\"$size bytes, but its header says $count tokens: $want bytes (truncated or not a shard)\"\n"
             "      fi\n"
             "    fi\n"
             "    if [ -z \"$why\" ]; then\n"
             "      total=$((total + count))\n"
             "    else\n"
             "      bad=$((bad + 1))\n"
             "      [ \"$bad\" -gt 10 ] || echo \"$1/$name: $why\" >&2\n"
             "    fi\n"
             "    i=$((i + 1))\n"
             "  done\n"
             "  [ \"$bad\" -eq 0 ]\n"
             "}}\n",
             s.format, s.header_bytes, s.token_bytes);
}

// shard_at for a directory: the file itself.
auto LocalShardAt() -> std::string {
  return "shard_at() {\n"
         "  header=\"$1/$2\"\n"
         "  size=missing\n"
         "  if [ -f \"$header\" ]; then size=\"$(stat -c %s \"$header\")\"; fi\n"
         "}\n";
}

// shard_at for an object store: the size from the listing `rclone lsf` made
// of the source ($listing: NAME;SIZE lines), the header read with
// `rclone cat --count` into $head.
auto RemoteShardAt(const Staging& s) -> std::string {
  return fmt::format(
      "shard_at() {{\n"
      "  header=\"$head\"\n"
      "  size=\"$(sed -n \"s/^${{2%.bin}}\\\\.bin;//p\" \"$listing\")\"\n"
      "  if [ -z \"$size\" ]; then\n"
      "    size=missing\n"
      "  elif ! rclone cat --count {} \"$1/$2\" > \"$head\"; then\n"
      "    echo \"error: cannot read the header of $1/$2\" >&2\n"
      "    exit 1\n"
      "  fi\n"
      "}}\n",
      s.header_bytes);
}

// The hot tier's copy: its directory and the marker a complete copy holds.
auto Prologue(const Staging& s) -> std::string {
  return fmt::format("set -eu\ndir={}\nmarker={}\n", ShellQuote(s.dest_dir), ShellQuote(s.marker));
}

}  // namespace

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
  return Prologue(s) + CheckShardsFunction(s) + LocalShardAt() +
         fmt::format(
             "if [ -f \"$dir/{0}\" ] && [ \"$(cat \"$dir/{0}\")\" = \"$marker\" ] && check_shards \"$dir\" 0 {1} "
             "2>/dev/null; then\n"
             "  echo staged\n"
             "else\n"
             "  echo missing\n"
             "fi\n",
             kStagedMarker, s.shards - 1);
}

auto CheckSourceScript(const Staging& s) -> std::string {
  bool remote = !s.source.is_local();
  std::string source = RemotePath(s.source, s.source_path);
  std::string list = remote ? "listing=\"$(mktemp)\"\n"
                              "head=\"$(mktemp)\"\n"
                              "trap 'rm -f \"$listing\" \"$head\"' EXIT\n"
                              "rclone lsf --files-only --format ps \"$src\" > \"$listing\"\n"
                            : "";
  return "set -eu\n" + CheckShardsFunction(s) + (remote ? RemoteShardAt(s) : LocalShardAt()) +
         fmt::format(
             "src={0}\n"
             "echo \"reading the headers of the {1} shards in $src\"\n"
             "{2}"
             "if ! check_shards \"$src\" 0 {3}; then\n"
             "  echo \"error: $bad of the {1} shards in $src are not whole {4} shards (the first ten above);\" \\\n"
             "    \"nothing is copied\" >&2\n"
             "  exit {5}\n"
             "fi\n"
             "echo \"the {1} shards in $src hold $total tokens; the job declares {6}\"\n",
             ShellQuote(source), s.shards, list, s.shards - 1, s.format, kBadShardsStatus, s.declared_tokens);
}

auto CopyShardsScript(const Staging& s, int64_t bwlimit_kib) -> std::string {
  return "set -eu\n" + CheckShardsFunction(s) + LocalShardAt() +
         fmt::format(
             "dir={}\n"
             "mkdir -p \"$dir\"\n"
             "list=\"$(mktemp)\"\n"
             "i=\"$FIRST\"\n"
             "while [ \"$i\" -le \"$LAST\" ]; do\n"
             "  printf 'shard_%06d.bin\\n' \"$i\" >> \"$list\"\n"
             "  i=$((i + 1))\n"
             "done\n"
             "echo \"copying shards $FIRST..$LAST to $dir\"\n"
             "rclone copy {} \"$dir\" --files-from-raw \"$list\" --no-traverse {}\n"
             "if ! check_shards \"$dir\" \"$FIRST\" \"$LAST\"; then\n"
             "  echo \"error: $bad of the copies of shards $FIRST..$LAST in $dir do not match their headers\" >&2\n"
             "  exit 1\n"
             "fi\n"
             "echo \"copied shards $FIRST..$LAST: $total tokens\"\n",
             ShellQuote(s.dest_dir), ShellQuote(RemotePath(s.source, s.source_path)), RcloneFlags(bwlimit_kib));
}

auto SealStagedScript(const Staging& s) -> std::string {
  return Prologue(s) + CheckShardsFunction(s) + LocalShardAt() +
         fmt::format(
             "if ! check_shards \"$dir\" 0 {2}; then\n"
             "  echo \"error: $bad of the {0} shards in $dir are missing or do not match their headers\" >&2\n"
             "  exit 1\n"
             "fi\n"
             "printf '%s\\n' \"$marker\" > \"$dir/{1}.tmp\"\n"
             "mv \"$dir/{1}.tmp\" \"$dir/{1}\"\n"
             "echo \"staged {0} shards in $dir: $total tokens; the job declares {3}\"\n",
             s.shards, kStagedMarker, s.shards - 1, s.declared_tokens);
}

// The committed checkpoints, step_NNNNNNNN directories holding COMMITTED, in
// `order` of their names (docs/deploy.md).
auto CommittedList(std::string_view order) -> std::string {
  return fmt::format(
      "# committed checkpoints: step_NNNNNNNN directories holding COMMITTED (docs/deploy.md)\n"
      "for d in \"$dir\"/step_*; do\n"
      "  if [ -f \"$d/COMMITTED\" ]; then basename \"$d\"; fi\n"
      "done | sort{} > \"$found\"\n"
      "if [ ! -s \"$found\" ]; then\n"
      "  echo \"error: no committed checkpoint in $dir\" >&2\n"
      "  exit 1\n"
      "fi\n",
      order);
}

auto VerifyCheckpointsScript(const deploy::Export& e) -> std::string {
  std::string more = e.keep ? fmt::format("[ \"$n\" -lt {} ] && ", *e.keep) : "";
  return fmt::format(
             "set -eu\n"
             "dir={}\n"
             "found=\"$(mktemp)\"\n"
             "verified=\"$(mktemp)\"\n",
             ShellQuote(e.checkpoint_dir)) +
         CommittedList(" -r") +
         fmt::format(
             "# {0}: avf-run checks index.json and every file it lists against its SHA-256\n"
             "n=0\n"
             "while {1}read -r name; do\n"
             "  status=0\n"
             "  avf-run checkpoint verify \"$dir/$name\" < /dev/null || status=$?\n"
             "  if [ \"$status\" -eq 0 ]; then\n"
             "    echo \"$name verifies\"\n"
             "    echo \"$name\" >> \"$verified\"\n"
             "    n=$((n + 1))\n"
             "  elif [ \"$status\" -eq 1 ]; then\n"
             "    echo \"warning: $name does not verify (above): it is not exported\" >&2\n"
             "  else\n"
             "    echo \"error: avf-run checkpoint verify $dir/$name failed with status $status\" >&2\n"
             "    exit 1\n"
             "  fi\n"
             "done < \"$found\"\n"
             "if [ \"$n\" -eq 0 ]; then\n"
             "  echo \"error: no committed checkpoint in $dir verifies\" >&2\n"
             "  exit 1\n"
             "fi\n"
             "sort \"$verified\" > \"${2}\"\n",
             e.keep ? fmt::format("the newest {} that verify", *e.keep) : "every one that verifies", more,
             kExportListEnv);
}

auto CompletedCheckpointsScript(const deploy::Export& e) -> std::string {
  std::string list =
      e.trainer == check::TrainerKind::Torchtitan
          ? "# torchtitan's checkpoints: step-N folders whose .metadata is written (the save completed)\n"
            "for d in \"$dir\"/step-*; do\n"
            "  if [ -f \"$d/.metadata\" ]; then basename \"$d\"; fi\n"
            "done | sort -t- -k2,2n > \"$found\"\n"
          : "# Megatron-LM's checkpoints: iter_N folders up to the iteration its tracker names (written\n"
            "# once a save completed)\n"
            "last=\"$(cat \"$dir/latest_checkpointed_iteration.txt\" 2>/dev/null || echo -1)\"\n"
            "case \"$last\" in ''|*[!0-9-]*) last=-1 ;; esac\n"
            "for d in \"$dir\"/iter_*; do\n"
            "  n=\"${d##*/iter_}\"\n"
            "  case \"$n\" in ''|*[!0-9]*) continue ;; esac\n"
            "  if [ -d \"$d\" ] && [ \"$(expr \"$n\" + 0)\" -le \"$last\" ]; then basename \"$d\"; fi\n"
            "done | sort > \"$found\"\n";
  std::string keep = e.keep ? fmt::format("tail -n {} \"$found\"", *e.keep) : "cat \"$found\"";
  return fmt::format(
      "set -eu\n"
      "dir={0}\n"
      "found=\"$(mktemp)\"\n"
      "{1}"
      "if [ ! -s \"$found\" ]; then\n"
      "  echo \"error: no completed checkpoint in $dir\" >&2\n"
      "  exit 1\n"
      "fi\n"
      "{2} > \"${3}\"\n"
      "while read -r name; do echo \"$name is complete\"; done < \"${3}\"\n",
      ShellQuote(e.checkpoint_dir), list, keep, kExportListEnv);
}

auto ListCheckpointsScript(const deploy::Export& e) -> std::string {
  return e.trainer == check::TrainerKind::Avf ? VerifyCheckpointsScript(e) : CompletedCheckpointsScript(e);
}

auto ExportScript(const deploy::Export& e) -> std::string {
  return fmt::format(
      "set -eu\n"
      "dir={0}\n"
      "# the checkpoints to export, oldest first: the newest complete ones (verified, for avf-run's)\n"
      "list=\"${1}\"\n"
      "if [ ! -s \"$list\" ]; then\n"
      "  echo \"error: no verified checkpoint of $dir to export\" >&2\n"
      "  exit 1\n"
      "fi\n"
      "while read -r name; do\n"
      "  echo \"exporting $name\"\n"
      "  rclone copy \"$dir/$name\" {2}\"/$name\" {3}\n"
      "done < \"$list\"\n"
      "# metrics.jsonl and the memory reports of the run\n"
      "if [ -d \"$dir/{4}\" ]; then\n"
      "  echo \"exporting {4}\"\n"
      "  rclone copy \"$dir/{4}\" {2}\"/{4}\" {3}\n"
      "fi\n",
      ShellQuote(e.checkpoint_dir), kExportListEnv, ShellQuote(RemotePath(e.dest, e.dest_path)), RcloneFlags(0),
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

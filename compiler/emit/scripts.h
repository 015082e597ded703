// The POSIX shell scripts of the staging, export and cleanup steps, shared
// by the Argo workflow and the Slurm batch script (the workflow's kubectl
// steps are in kube_scripts.h). Every value from the .avf file enters a
// script single-quoted; the scripts need `sh`, `stat`, `od`, `sed` and
// `rclone` (docs/deploy.md, "Images").
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "deploy/deployment.h"
#include "deploy/shell_quote.h"

namespace avf::emit {

using deploy::ShellQuote;

// rclone's name of `path` in a remote: `avfsrc:bucket/path`, or a directory.
auto RemotePath(const deploy::Remote& r, const std::string& path) -> std::string;
// The environment that configures an rclone remote, credentials by reference.
auto RemoteEnv(const deploy::Remote& r) -> std::vector<deploy::EnvVar>;
// rclone reads the CA of a remote with a `ca_configmap` from $RCLONE_CA_CERT,
// the file `ca.crt` of this folder, where the steps mount the ConfigMap.
auto CaCertDir(const deploy::Remote& r) -> std::string;

// A shard is whole when its header (docs/data-format.md) is known, says the
// dataset's bytes per token, and the file is exactly 1024 + count x those
// bytes long: the declared `tokens` may be approximate, the headers are not.
//
// Prints `staged` when the marker matches and every staged shard is whole, else `missing`.
auto CheckStagedScript(const deploy::Staging& s) -> std::string;
// Before any copy: reads every source shard's header (1 KiB each: `rclone
// cat --count` from an object store, the file itself on a file system) and
// its size (one `rclone lsf` listing, or `stat`). Names the first ten shards
// that are not whole and exits kBadShardsStatus; else prints the exact total
// of tokens next to the declared one.
auto CheckSourceScript(const deploy::Staging& s) -> std::string;
// Copies shards $FIRST..$LAST at most `bwlimit_kib` KiB/s (0: unlimited),
// then checks each copy against its header; rclone skips files already there
// with the source's size and time.
auto CopyShardsScript(const deploy::Staging& s, int64_t bwlimit_kib) -> std::string;
// Checks every staged shard against its header, then writes the marker (last,
// atomically) and prints the staged tokens.
auto SealStagedScript(const deploy::Staging& s) -> std::string;
// Lists in $AVF_EXPORT_LIST, oldest first, the newest `keep` committed
// checkpoints that `avf-run checkpoint verify` accepts (all that do without
// `keep`), newest first until there are that many; warns of each that does
// not verify and skips it. Fails when none does, or when avf-run fails
// otherwise than by refusing a checkpoint (status 1). Needs avf-run: on
// Kubernetes it runs in the job's `image`.
auto VerifyCheckpointsScript(const deploy::Export& e) -> std::string;
// The same list for another trainer's checkpoints, which avf-run cannot
// verify: the newest `keep` (all without it) that the trainer completed —
// torchtitan's step-N folders holding the .metadata its save writes last,
// Megatron-LM's iter_N folders up to latest_checkpointed_iteration.txt.
// Fails when there is none. Needs only a POSIX shell.
auto CompletedCheckpointsScript(const deploy::Export& e) -> std::string;
// VerifyCheckpointsScript for avf-run's checkpoints, else CompletedCheckpointsScript.
auto ListCheckpointsScript(const deploy::Export& e) -> std::string;
// Copies the checkpoints in $AVF_EXPORT_LIST, then the run folder, to the export tier.
auto ExportScript(const deploy::Export& e) -> std::string;
// Deletes the staged copy.
auto CleanupScript(const deploy::Staging& s) -> std::string;
// Stops the script unless every host-path tier of `mounts` is mounted in this
// container with its declared file system, per /proc/self/mountinfo
// ($AVF_MOUNTINFO in tests): an empty mount point on a node would send copies
// and checkpoints to the node's own disk. Needs `awk`; names the node from
// $NODE_NAME. "" when no mount is a host-path tier of a known file system.
auto TierCheckScript(const std::vector<deploy::Volume>& mounts) -> std::string;
// Stops the script unless the pod has the network interface NCCL is told to
// use (the cluster's `socket_interface`; a Multus network's, say), per
// /sys/class/net ($AVF_SYS_CLASS_NET in tests).
auto InterfaceCheckScript(const std::string& interface) -> std::string;
// Stops the script unless the hot tier holds this dataset's sealed copy (its
// marker), as a training pod needs it.
auto StagedCopyCheckScript(const deploy::Staging& s) -> std::string;

// The marker file of a staged dataset, beside its shards.
inline constexpr std::string_view kStagedMarker = ".aviflow-staged";
// Exit status of the source check when a shard is not whole: no retry mends it.
inline constexpr int kBadShardsStatus = 3;
// The variable that names the file of checkpoints to export, which
// VerifyCheckpointsScript writes and ExportScript reads.
inline constexpr std::string_view kExportListEnv = "AVF_EXPORT_LIST";

}  // namespace avf::emit

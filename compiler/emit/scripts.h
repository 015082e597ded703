// The POSIX shell scripts of the staging, export and cleanup steps, shared
// by the Argo workflow and the Slurm batch script (the workflow's kubectl
// steps are in kube_scripts.h). Every value from the .avf file enters a
// script single-quoted; the scripts need `sh`, `stat` and `rclone`
// (docs/deploy.md, "Images").
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "deploy/deployment.h"

namespace avf::emit {

// `it's` -> `'it'\''s'`: one shell word whatever the text.
auto ShellQuote(std::string_view text) -> std::string;

// rclone's name of `path` in a remote: `avfsrc:bucket/path`, or a directory.
auto RemotePath(const deploy::Remote& r, const std::string& path) -> std::string;
// The environment that configures an rclone remote, credentials by reference.
auto RemoteEnv(const deploy::Remote& r) -> std::vector<deploy::EnvVar>;
// rclone reads the CA of a remote with a `ca_configmap` from $RCLONE_CA_CERT,
// the file `ca.crt` of this folder, where the steps mount the ConfigMap.
auto CaCertDir(const deploy::Remote& r) -> std::string;

// Prints `staged` when the marker matches and every shard has its size, else `missing`.
auto CheckStagedScript(const deploy::Staging& s) -> std::string;
// Copies shards $FIRST..$LAST at most `bwlimit_kib` KiB/s (0: unlimited);
// rclone skips files already there with the source's size and time.
auto CopyShardsScript(const deploy::Staging& s, int64_t bwlimit_kib) -> std::string;
// Verifies every shard's size, then writes the marker (last, atomically).
auto SealStagedScript(const deploy::Staging& s) -> std::string;
// Copies the newest `keep` committed checkpoints to the export tier.
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

}  // namespace avf::emit

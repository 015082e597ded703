// The POSIX shell scripts of the staging, export and cleanup steps, shared
// by the Argo workflow and the Slurm batch script, and the workflow's
// make-token step. Every value from the .avf file enters a script
// single-quoted; the scripts need `sh`, `stat` and `rclone`, make-token
// `od`, `tr` and `kubectl` (docs/deploy.md, "Images").
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
// The exit handler's delete of `resource` (kubectl's `plural.group`) `name`:
// only when this workflow ($WF_UID) owns it, so that a duplicate workflow of
// the job never stops the run another workflow started. Not there, or not
// this workflow's: left alone, said so, success.
auto DeleteIfOwnedScript(const std::string& resource, const std::string& name, const std::string& k8s_namespace)
    -> std::string;
// `body` (a script), unless `resource` `name` exists and another workflow
// owns it: its run may be reading what `body` would remove.
auto UnlessAnotherRunsScript(const std::string& resource, const std::string& name, const std::string& k8s_namespace,
                             const std::string& body) -> std::string;

// The workflow's make-token step: creates the Secret `t.secret` in
// `k8s_namespace` with a fresh random token (`t.random_bytes` of
// /dev/urandom as hex, needing `od` and `tr`), labelled `labels` and owned
// by the workflow $WF_NAME / $WF_UID, unless a Secret of that name exists.
// It talks to the API server with `kubectl` as the step's ServiceAccount;
// the token is never printed, written to a file or put on a command line.
auto MakeTokenScript(const deploy::JobToken& t, const std::string& k8s_namespace,
                     const std::vector<std::pair<std::string, std::string>>& labels) -> std::string;

// The marker file of a staged dataset, beside its shards.
inline constexpr std::string_view kStagedMarker = ".aviflow-staged";

}  // namespace avf::emit

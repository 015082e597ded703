// The POSIX shell scripts of the workflow's steps that talk to the API server
// with `kubectl`, as the workflow's ServiceAccount: make-token, the start of
// the training object and the wait for its end, and the exit handler's
// deletes. Each acts on an object of the job only when this workflow
// ($WF_UID, Argo's `{{workflow.uid}}`) owns it, so that a second workflow of
// a job never disturbs the run of the first; each is safe to run again, so
// that a retry after a lost step pod picks up where the last attempt was.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "deploy/deployment.h"

namespace avf::emit {

// One object of the job, as kubectl names it: `plural.group` (or a core
// resource such as `secret`), name and namespace.
struct KubeObject {
  std::string resource;
  std::string name;
  std::string k8s_namespace;
};

// The exit handler's delete of `o`: only when this workflow owns it. Not
// there, or not this workflow's: left alone, said so, success.
auto DeleteIfOwnedScript(const KubeObject& o) -> std::string;
// `body` (a script), unless `o` exists and another workflow owns it: its run
// may be reading what `body` would remove.
auto UnlessAnotherRunsScript(const KubeObject& o, const std::string& body) -> std::string;

// Creates `o` from `manifest` (which names this workflow as its owner),
// unless this workflow's `o` exists: then it is used as it is, so that a
// retry never makes a second one. Refuses, with the owner's uid, an `o` that
// another workflow made or that was made by hand.
auto CreateOwnedScript(const KubeObject& o, const std::string& manifest) -> std::string;

// Exit status of the wait for the training object when the object itself
// ended the run (failed, deleted, or not this workflow's): no retry helps.
inline constexpr int kTrainingEndedStatus = 3;

// Waits for the training object `o`, this workflow's, to reach one of its own
// terminal conditions: `done_condition` (PyTorchJob `Succeeded`, JobSet
// `Completed`) succeeds, `Failed` fails with the object's message and
// kTrainingEndedStatus. Restarts, evictions and transient replica counts are
// not terminal and are only logged. The step creates and deletes nothing, so
// a retry after a lost step pod attaches to the same run. The API server may
// fail to answer 10 polls in a row (a poll every $AVF_POLL_SECONDS, default 30)
// before the step fails and is retried.
auto AwaitTrainingScript(const KubeObject& o, const std::string& done_condition) -> std::string;

// The workflow's make-token step: creates the Secret `t.secret` in
// `k8s_namespace` with a fresh random token (`t.random_bytes` of
// /dev/urandom as hex, needing `od` and `tr`), labelled `labels` and owned
// by the workflow $WF_NAME / $WF_UID, unless a Secret of that name exists.
// The token is never printed, written to a file or put on a command line.
auto MakeTokenScript(const deploy::JobToken& t, const std::string& k8s_namespace,
                     const std::vector<std::pair<std::string, std::string>>& labels) -> std::string;

}  // namespace avf::emit

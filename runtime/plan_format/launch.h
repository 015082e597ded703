// The other half of the contract between aviflowc and avf-run: what a
// launcher hands avf-run besides plan.json. The rank environment is spelled
// here once for the manifests, `aviflowc run --local` and avf-run's identity
// and launcher; the flags both command lines accept are checked the same way.
#pragma once

#include <string>
#include <string_view>

namespace avf::plan_format {

// The node's place in the job (the PyTorchJob operator's names).
inline constexpr const char* kEnvNodeRank = "PET_NODE_RANK";
inline constexpr const char* kEnvNodes = "PET_NNODES";
inline constexpr const char* kEnvRanksPerNode = "PET_NPROC_PER_NODE";
// torchrun's names for the same, and for this process's rank.
inline constexpr const char* kEnvRank = "RANK";
inline constexpr const char* kEnvWorldSize = "WORLD_SIZE";
inline constexpr const char* kEnvLocalRank = "LOCAL_RANK";
inline constexpr const char* kEnvGroupRank = "GROUP_RANK";
inline constexpr const char* kEnvLocalWorldSize = "LOCAL_WORLD_SIZE";
// Rank 0's store.
inline constexpr const char* kEnvMasterAddr = "MASTER_ADDR";
inline constexpr const char* kEnvMasterPort = "MASTER_PORT";
// Every variable a rank's identity is read from (runtime/plan/identity.h).
inline constexpr const char* kRankVariables[] = {kEnvNodeRank,   kEnvRanksPerNode, kEnvNodes,     kEnvRank,
                                                 kEnvWorldSize,  kEnvLocalRank,    kEnvGroupRank, kEnvLocalWorldSize,
                                                 kEnvMasterAddr, kEnvMasterPort};
// An elastic job's launchers (run/elastic_launcher.h): PET_NNODES is then
// MIN:MAX, the rounds' host is at PET_RDZV_ENDPOINT, each launcher has a slot,
// and its ranks learn how often the node count changed.
inline constexpr const char* kEnvRdzvEndpoint = "PET_RDZV_ENDPOINT";
inline constexpr const char* kEnvMaxRestarts = "PET_MAX_RESTARTS";
inline constexpr const char* kEnvNodeSlot = "AVF_NODE_SLOT";
inline constexpr const char* kEnvNodeCountChanges = "AVF_NODE_COUNT_CHANGES";
// The job token, or the file (a mounted Secret) that holds it.
inline constexpr const char* kEnvJobToken = "AVF_JOB_TOKEN";
inline constexpr const char* kEnvJobTokenFile = "AVF_JOB_TOKEN_FILE";
// The process whose death stops the launcher or rank (aviflowc run --local).
inline constexpr const char* kEnvSupervisorPid = "AVF_SUPERVISOR_PID";

// Whether a launcher sets the variable `name` for what it starts (a rank
// variable, the job token or its file, the supervisor), so that a launcher
// drops any it inherited before it sets its own.
auto IsLaunchVariable(std::string_view name) -> bool;

// --peer-timeout and --join-timeout, in seconds.
inline constexpr double kMinTimeoutSeconds = 0.1;
inline constexpr double kMaxTimeoutSeconds = 86400;

// "" when `text` is a finite number of seconds from lo to hi; else why not.
auto SecondsProblem(const std::string& text, double lo = kMinTimeoutSeconds, double hi = kMaxTimeoutSeconds)
    -> std::string;

// "" when `text` is a seed: digits only, at most 2^64 - 1 (a parser of
// unsigned numbers would take `-5` for 2^64 - 5); else why not.
auto SeedProblem(const std::string& text) -> std::string;

}  // namespace avf::plan_format

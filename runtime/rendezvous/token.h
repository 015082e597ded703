// The job token: a shared secret that every rank presents when it joins the
// rendezvous store, so that only this job's pods are admitted. On a cluster it
// comes from a mounted Secret (a file) or an environment variable; a local run
// makes a fresh one and hands it to the ranks it starts.
#pragma once

#include <string>
#include <string_view>

#include <llvm/Support/Error.h>

#include "plan_format/launch.h"

namespace avf::rendezvous {

// The variables TokenFromEnvironment reads by default.
inline constexpr const char* kTokenFileEnv = plan_format::kEnvJobTokenFile;
inline constexpr const char* kTokenEnv = plan_format::kEnvJobToken;
// Shorter tokens are refused: a guessable token admits anyone on the network.
inline constexpr size_t kMinTokenBytes = 16;

// Reads a token file (the Secret's key, mounted read-only). Trailing
// whitespace (the newline of `echo ... >`) is dropped; the rest must be
// kMinTokenBytes..wire::kMaxTokenBytes long.
auto ReadTokenFile(const std::string& path) -> llvm::Expected<std::string>;

// The token from $<file_var> (a path; preferred) or else $<value_var> (the
// token itself). Neither set is an error that names both variables.
auto TokenFromEnvironment(const char* file_var = kTokenFileEnv, const char* value_var = kTokenEnv)
    -> llvm::Expected<std::string>;

// 32 bytes of /dev/urandom as 64 lowercase hex digits.
auto MakeRandomToken() -> llvm::Expected<std::string>;

// Length checks shared by the readers and the store's options; `origin` says
// where the token came from ("$AVF_JOB_TOKEN", "the file /var/run/...").
auto ValidateToken(std::string_view token, std::string_view origin) -> llvm::Error;

// Compares in time that depends only on the length of `presented` (which the
// peer knows anyway), never on where the first difference is.
auto TokensEqual(std::string_view expected, std::string_view presented) -> bool;

}  // namespace avf::rendezvous

// `avf-run checkpoint inspect|verify|convert|export|eval`: the offline
// checkpoint tools (docs/checkpoints.md#tools).
#pragma once

#include <string>

#include <CLI/CLI.hpp>

namespace avf::run {

struct CheckpointFlags {
  std::string dir, plan, output, data, format = "safetensors", dtype = "fp32", key_file;
  bool tensors = false;
};

// The subcommand and its five commands; RunCheckpointCommand runs the one parsed.
auto AddCheckpointCommands(CLI::App& app, CheckpointFlags& flags) -> CLI::App*;
auto RunCheckpointCommand(const CLI::App& command, const CheckpointFlags& flags) -> int;

}  // namespace avf::run

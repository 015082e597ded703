// Helpers of the avf_runplan tests: the plans the build generates from the
// examples and Inputs/runplan/*.avf, the hand-written ones of Inputs/runplan/,
// and edits to their JSON at a key path. The edits need llvm::json, so they
// live in runplan_test_util.cpp (C++17 under clang); this header does not.
#pragma once

#include <string>
#include <string_view>

#include "plan/plan.h"

namespace avf::runtime::testing {

// The generated plan NAME, else Inputs/runplan/NAME, read whole; fails the
// test when missing.
auto Fixture(std::string_view name) -> std::string;
auto FixturePath(std::string_view name) -> std::string;
// test/run/Inputs/plan_v2/NAME: a plan the aviflowc of format version 2 wrote,
// which lists the rank, group and slice tables (version 3 derives them).
auto FixtureV2(std::string_view name) -> std::string;

// `text` with the value at `path` (the reader's syntax: `ranks[17].tensor`,
// `groups.tensor[3][1]`) replaced by the JSON `value`; an object key that is
// absent is added. Fails the test when the path does not lead anywhere.
auto SetAt(std::string_view text, std::string_view path, std::string_view value) -> std::string;

// `text` without the object key or array element at `path`.
auto RemoveAt(std::string_view text, std::string_view path) -> std::string;

// The JSON at `path`, printed compactly ("[0, 1]" prints as "[0,1]").
auto GetAt(std::string_view text, std::string_view path) -> std::string;

// ParsePlan(text) must succeed; the plan, or a default one after a failure.
auto MustParse(std::string_view text) -> RunPlan;

// ParsePlan(text) must fail; its message (every line), or "" after a success.
auto ParseFailure(std::string_view text) -> std::string;

// ValidatePlan(plan) must fail; its message.
auto ValidateFailure(const RunPlan& plan) -> std::string;

// `text` with the first `from` replaced by `to`, for edits SetAt cannot
// write (numbers that do not survive a round trip through llvm::json).
auto ReplaceFirst(std::string text, std::string_view from, std::string_view to) -> std::string;

// A valid plan built in code, for shapes no fixture has: T x D x P ranks on
// nodes of gpus_per_node, 2 layers per chunk, interleaved when chunks > 1
// (then P micro-batches per step, else 2).
struct Shape {
  int64_t tensor = 1, data = 1, pipeline = 1, gpus_per_node = 8, chunks = 1, zero = 0;
  bool tied = false;
};
auto MakePlan(const Shape& shape) -> RunPlan;

}  // namespace avf::runtime::testing

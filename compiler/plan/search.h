// The `auto` search: every assignment of the parallel fields that the fixed
// fields and the divisibility rules allow, predicted and ranked.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "check/job_spec.h"
#include "plan/plan.h"
#include "trainers/trainer.h"

namespace avf::plan {

// A layout the job's trainer cannot run (trainers::LimitOf), left out.
struct Untrainable {
  Candidate candidate;
  trainers::Limit limit;
};

struct SearchResult {
  std::vector<Candidate> best;        // fitting layouts, fastest first, at most `keep`
  std::optional<Candidate> smallest;  // the layout needing least memory, fitting or not
  int64_t evaluated = 0;              // layouts predicted: every one that satisfies the divisibility rules
  // The best layout left out because the trainer cannot run it: fitting
  // ones first, then the fastest.
  std::optional<Untrainable> untrainable;
};

// Searches the layouts allowed by `choices` (a fixed field stays fixed) that
// the job's trainer can run.
auto Search(const check::JobSpec& job, const check::ParallelChoices& choices, size_t keep) -> SearchResult;

// Every field `auto`: the whole space, for alternatives and suggestions.
auto AllAuto(const check::ParallelChoices& choices) -> check::ParallelChoices;

// Only the fields the user wrote stay fixed; defaulted ones become `auto`.
auto WrittenOnly(const check::ParallelChoices& choices) -> check::ParallelChoices;

// Orders candidates: faster first, then less memory, then smaller degrees, so
// that equal predictions always rank the same way.
auto Better(const Candidate& a, const Candidate& b) -> bool;

auto Describe(const Candidate& c, const cost::Hardware& hw) -> std::string;  // the binding constraint

}  // namespace avf::plan

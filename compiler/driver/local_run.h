// `aviflowc run FILE.avf --local`: writes the job's plan.json to the run
// folder and executes it here with avf-run (the CPU backend), reading the
// shards, the held-out shards and the `init` weights of `local` tiers and
// checkpointing to one; an encrypting job's key comes from
// --checkpoint-key-file (there are no Secrets here). It starts one avf-run per
// node of the plan, each the node's launcher (which starts, supervises and
// stops that node's ranks and sets their thread variables), passes SIGTERM
// and SIGINT on to them, and returns their status.
#pragma once

#include "diag/diagnostic.h"
#include "driver/options.h"
#include "plan/plan.h"

namespace avf::driver {

// Returns the exit status, or -1 after a diagnostic (nothing was run).
auto RunLocal(const Options& o, const plan::Plan& plan, diag::DiagnosticEngine& diags) -> int;

}  // namespace avf::driver

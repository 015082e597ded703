// Phase 4: parsed modules -> checked Program. Resolves names across files and
// inheritance, checks every body against its kind's schema (names, types,
// dimensions, units, ranges, references) and fills defaults.
#pragma once

#include "diag/diagnostic.h"
#include "imports/imports.h"
#include "sema/value.h"

namespace avf::sema {

auto Analyze(const imports::ModuleSet& modules, diag::DiagnosticEngine& diags) -> Program;

}  // namespace avf::sema

// docs/plan.schema.json, generated from keys.def and enums.def (JSON Schema
// draft 2020-12; strict: every key required but groups.embedding, no other
// keys). `avf-plan-schema` prints it; a test compares it with the committed file.
#pragma once

#include <ostream>

namespace avf::plan_format {

void WriteSchema(std::ostream& out);

}  // namespace avf::plan_format

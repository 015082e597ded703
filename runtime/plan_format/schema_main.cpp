// avf-plan-schema: prints docs/plan.schema.json, generated from the plan
// format's definitions. `avf-plan-schema > docs/plan.schema.json` regenerates
// the committed copy (test: lit/emit plan_schema_current.test).
#include <iostream>

#include "plan_format/schema.h"

auto main(int argc, char** argv) -> int {
  if (argc > 1) {
    std::cerr << "usage: avf-plan-schema  (prints the JSON Schema of plan.json; takes no arguments)\n";
    return 2;
  }
  avf::plan_format::WriteSchema(std::cout);
  return std::cout.good() ? 0 : 1;
}

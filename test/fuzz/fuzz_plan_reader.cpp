// Feeds arbitrary bytes to avf-run's plan reader as if they were plan.json:
// JSON parsing, every section's reader and the consistency rules. Any crash,
// hang, leak or sanitizer report is a bug; a refusal is an llvm::Error.
#include <cstddef>
#include <cstdint>

#include <llvm/ADT/StringRef.h>
#include <llvm/Support/Error.h>

#include "plan/plan.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  llvm::StringRef text(reinterpret_cast<const char*>(data), size);
  llvm::Expected<avf::runtime::ValidPlan> plan = avf::runtime::ParsePlan(text, "fuzz.json");
  if (!plan) llvm::consumeError(plan.takeError());
  return 0;
}

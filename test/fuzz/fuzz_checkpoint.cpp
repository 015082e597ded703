// Feeds arbitrary bytes to the checkpoint reader as if they were a rank's
// checkpoint file: once as the rank of the seeds (corpus/checkpoint,
// seed_shapes.h) would read it, and once as a rank that
// expects exactly what the header claims, so that the sizes, the CRC and the
// decoding of any shape are reached. Any crash, leak or sanitizer report is
// a bug; a refusal is an llvm::Error.
#include <cstddef>
#include <cstdint>

#include "seed_shapes.h"
#include "train/checkpoint.h"

namespace {

auto Le(const uint8_t* p, size_t bytes) -> uint64_t {
  uint64_t v = 0;
  for (size_t i = 0; i < bytes; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

void Parse(llvm::ArrayRef<uint8_t> bytes, int32_t rank, int32_t world, int64_t params, int64_t moments) {
  llvm::Expected<avf::train::RankState> s = avf::train::ParseRank(bytes, "fuzz.bin", rank, world, params, moments);
  if (!s) return llvm::consumeError(s.takeError());
  if (s->params.size() != static_cast<size_t>(params) || s->m.size() != static_cast<size_t>(moments) ||
      s->v.size() != s->m.size()) {
    __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  llvm::ArrayRef<uint8_t> bytes(data, size);
  using namespace avf::fuzz;
  Parse(bytes, kCheckpointRank, kCheckpointWorld, kCheckpointParams, kCheckpointMoments);
  if (size < 60) return 0;
  // The header: u32 magic, version, world, rank; ...; u64 count at 40, u64
  // moments at 52 (version 1: as many as the parameters).
  auto world = static_cast<int32_t>(Le(data + 8, 4)), rank = static_cast<int32_t>(Le(data + 12, 4));
  uint64_t params = Le(data + 40, 8), moments = Le(data + 4, 4) == 1 ? params : Le(data + 52, 8);
  if (params > INT64_MAX || moments > INT64_MAX) return 0;
  Parse(bytes, rank, world, static_cast<int64_t>(params), static_cast<int64_t>(moments));
  return 0;
}

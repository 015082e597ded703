// Feeds arbitrary bytes to the checkpoint index reader (ParseIndex) and to a
// rank's part of an index (ParseRankPart). An index that parses must keep
// every chunk inside its tensor: each run of each chunk is walked and
// checked. Any crash, leak or sanitizer report is a bug; a refusal is an
// llvm::Error.
#include <cstddef>
#include <cstdint>

#include "checkpoint/chunks.h"
#include "checkpoint/index.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  llvm::StringRef text(reinterpret_cast<const char*>(data), size);
  llvm::Expected<avf::checkpoint::Index> index = avf::checkpoint::ParseIndex(text, "fuzz.json");
  if (!index) {
    llvm::consumeError(index.takeError());
  } else {
    for (const avf::checkpoint::Tensor& t : index->tensors) {
      for (const avf::checkpoint::Chunk& c : t.chunks) {
        int64_t seen = 0;
        avf::checkpoint::ForEachRun(c.part, c.first, c.count, [&](avf::checkpoint::PartRun r) {
          if (r.full < 0 || r.count < 1 || r.full + r.count > t.rows * t.cols) __builtin_trap();
          seen += r.count;
        });
        if (seen != c.count) __builtin_trap();
      }
    }
  }
  llvm::Expected<avf::checkpoint::RankPart> part = avf::checkpoint::ParseRankPart(text, "fuzz.part.json");
  if (!part) llvm::consumeError(part.takeError());
  return 0;
}

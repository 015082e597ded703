// ParseRank, the bytes-level checkpoint reader (LoadRank reads the file and
// calls it; test/fuzz/fuzz_checkpoint.cpp feeds it arbitrary bytes).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include <llvm/Support/Error.h>

#include "train/checkpoint.h"

namespace avf::train {
namespace {

void PutLe(std::vector<uint8_t>& file, size_t at, uint64_t v, size_t bytes) {
  for (size_t i = 0; i < bytes; ++i) file[at + i] = static_cast<uint8_t>(v >> (8 * i));
}

// A 64-byte header of version 2, rank 0 of 1, and no payload (its CRC is 0).
auto Header(uint64_t params, uint64_t moments) -> std::vector<uint8_t> {
  std::vector<uint8_t> file(64, 0);
  PutLe(file, 0, 0x4b465641, 4), PutLe(file, 4, 2, 4), PutLe(file, 8, 1, 4);
  PutLe(file, 40, params, 8), PutLe(file, 52, moments, 8);
  return file;
}

auto Message(llvm::Expected<RankState> s) -> std::string { return s ? "accepted" : llvm::toString(s.takeError()); }

TEST(ParseRank, AnEmptyRankReadsBack) {
  llvm::Expected<RankState> s = ParseRank(Header(0, 0), "rank.bin", 0, 1, 0, 0);
  ASSERT_TRUE(static_cast<bool>(s)) << llvm::toString(s.takeError());
  EXPECT_TRUE(s->params.empty());
}

// 4 * 2^62 parameters wraps to 0 bytes in 64 bits: the header's counts are
// checked against the bytes present before any arithmetic, so a rank that
// expects that many is refused instead of allocating them.
TEST(ParseRank, CountsLargerThanTheFileAreRefused) {
  int64_t huge = int64_t{1} << 62;
  EXPECT_THAT(Message(ParseRank(Header(huge, 0), "rank.bin", 0, 1, huge, 0)),
              testing::HasSubstr("rank.bin: holds 4611686018427387904 parameters and 0 optimizer moments in 64 bytes"));
  EXPECT_THAT(Message(ParseRank(Header(1, huge), "rank.bin", 0, 1, 1, huge)), testing::HasSubstr("in 64 bytes"));
}

TEST(ParseRank, ShortOrForeignBytesAreRefused) {
  EXPECT_THAT(Message(ParseRank({}, "rank.bin", 0, 1, 0, 0)), testing::HasSubstr("not an aviflow checkpoint"));
  std::vector<uint8_t> header = Header(0, 0);
  header.pop_back();
  EXPECT_THAT(Message(ParseRank(header, "rank.bin", 0, 1, 0, 0)), testing::HasSubstr("not an aviflow checkpoint"));
}

}  // namespace
}  // namespace avf::train

// What the fuzz targets and the seed writer (write_seeds.cpp) agree on.
#pragma once

#include <cstdint>

namespace avf::fuzz {

// The job token of the fuzzed rendezvous store, and of its seeds' hellos.
inline constexpr char kRendezvousToken[] = "fuzz-token-0123456789abcdef";
inline constexpr int kRendezvousWorld = 2;
// The plan SHA-256 of the fuzzed store and of its seeds' hellos.
inline constexpr char kRendezvousPlanSha256[] = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

// The rank whose checkpoint the seeds are, as the checkpoint fuzzer reads them.
inline constexpr int32_t kCheckpointRank = 0, kCheckpointWorld = 1;
inline constexpr int64_t kCheckpointParams = 4, kCheckpointMoments = 2;

}  // namespace avf::fuzz

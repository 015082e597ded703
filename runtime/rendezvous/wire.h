// The rendezvous store's wire format (runtime/README.md#rendezvous-store).
//
// Every message is a frame: a u32 little-endian payload length, then the
// payload. A payload starts with one byte (a MsgType from the client, a
// WireStatus from the store) followed by fields: integers little-endian,
// strings and byte values as a u32 length then the bytes. Readers check every
// length against the bytes actually present, so a malformed frame is reported,
// never trusted.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "rendezvous/errors.h"

namespace avf::rendezvous::wire {

// The first four payload bytes after the type of a hello spell "AVFR".
inline constexpr uint32_t kMagic = 0x52465641;
// Version 2 added the plan's SHA-256 to the hello.
inline constexpr uint16_t kVersion = 2;
inline constexpr size_t kHeaderBytes = 4;
// The largest frame either side accepts (values are NCCL ids and addresses,
// a few hundred bytes; 64 MiB leaves room for gathered tables).
inline constexpr uint32_t kMaxFrameBytes = 64u << 20;
// Before a peer has shown the job token, its frame may hold a hello only.
inline constexpr uint32_t kMaxHelloBytes = 4096;
inline constexpr size_t kMaxTokenBytes = 1024;
inline constexpr size_t kMaxKeyBytes = 4096;
// The plan a rank runs, as the SHA-256 of its plan.json bytes in lowercase hex.
inline constexpr size_t kPlanSha256Bytes = 64;

enum class MsgType : uint8_t {
  kHello = 1,    // u32 magic, u16 version, str token, u32 rank, u32 world size, str plan sha256
  kSet = 2,      // str key, str value
  kGet = 3,      // str key, u32 timeout ms -> value
  kAdd = 4,      // str key, i64 delta -> i64 new value
  kWait = 5,     // u32 n, n x str key, u32 timeout ms
  kCheck = 6,    // u32 n, n x str key -> u32 n, n x u8 (1: the key exists)
  kWaitAll = 7,  // u32 timeout ms: until every rank of the world has joined
};

// The first byte of a reply: 0, then the reply's fields; or an error code,
// then one string (the store's sentence). The values are part of the protocol.
enum class WireStatus : uint8_t {
  kOk = 0,
  kTimeout = 1,
  kBadMagic = 2,
  kBadVersion = 3,
  kBadToken = 4,
  kWorldSizeMismatch = 5,
  kRankOutOfRange = 6,
  kDuplicateRank = 7,
  kMalformed = 8,
  kFrameTooLarge = 9,
  kInvalidArgument = 10,
  kNotCounter = 11,
  kShutdown = 12,
  kPlanMismatch = 13,
};

// Unknown status bytes (a newer store) read as kMalformed.
auto ToErrc(uint8_t status) -> StoreErrc;
auto ToWireStatus(StoreErrc code) -> WireStatus;
auto MsgTypeName(uint8_t type) -> std::string_view;
// Whether `s` spells a plan's SHA-256: kPlanSha256Bytes lowercase hex digits.
auto IsPlanSha256(std::string_view s) -> bool;

// Builds one frame; Finish() fills in the length.
class Writer {
 public:
  Writer() : buf_(kHeaderBytes, '\0') {}
  auto U8(uint8_t v) -> Writer&;
  auto U16(uint16_t v) -> Writer&;
  auto U32(uint32_t v) -> Writer&;
  auto I64(int64_t v) -> Writer&;
  auto Str(std::string_view s) -> Writer&;
  // The payload must fit the u32 length (callers check kMaxFrameBytes first).
  auto Finish() && -> std::string;
  auto payload_bytes() const -> size_t { return buf_.size() - kHeaderBytes; }

 private:
  std::string buf_;
};

// Reads one payload. A read past the end sets failed() and yields zeros; the
// caller checks ok() once at the end, and AtEnd() for trailing garbage.
class Reader {
 public:
  explicit Reader(std::string_view payload) : rest_(payload) {}
  auto U8() -> uint8_t;
  auto U16() -> uint16_t;
  auto U32() -> uint32_t;
  auto I64() -> int64_t;
  // At most `max` bytes; longer or truncated strings fail the reader.
  auto Str(size_t max = kMaxFrameBytes) -> std::string;
  auto failed() const -> bool { return failed_; }
  auto ok_at_end() const -> bool { return !failed_ && rest_.empty(); }
  auto remaining() const -> size_t { return rest_.size(); }

 private:
  auto Take(size_t n) -> std::string_view;
  std::string_view rest_;
  bool failed_ = false;
};

auto LoadU32(const char* p) -> uint32_t;

// The payload length in a buffer that starts with a frame header.
inline auto FrameLength(std::string_view buf) -> uint32_t { return LoadU32(buf.data()); }

}  // namespace avf::rendezvous::wire

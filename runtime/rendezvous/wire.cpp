#include "rendezvous/wire.h"

namespace avf::rendezvous::wire {

auto ToErrc(uint8_t status) -> StoreErrc {
  switch (static_cast<WireStatus>(status)) {
    case WireStatus::kTimeout: return StoreErrc::kTimeout;
    case WireStatus::kBadMagic: return StoreErrc::kBadMagic;
    case WireStatus::kBadVersion: return StoreErrc::kBadVersion;
    case WireStatus::kBadToken: return StoreErrc::kBadToken;
    case WireStatus::kWorldSizeMismatch: return StoreErrc::kWorldSizeMismatch;
    case WireStatus::kRankOutOfRange: return StoreErrc::kRankOutOfRange;
    case WireStatus::kDuplicateRank: return StoreErrc::kDuplicateRank;
    case WireStatus::kFrameTooLarge: return StoreErrc::kFrameTooLarge;
    case WireStatus::kInvalidArgument: return StoreErrc::kInvalidArgument;
    case WireStatus::kNotCounter: return StoreErrc::kNotCounter;
    case WireStatus::kShutdown: return StoreErrc::kShutdown;
    case WireStatus::kPlanMismatch: return StoreErrc::kPlanMismatch;
    case WireStatus::kOk:
    case WireStatus::kMalformed: break;
  }
  return StoreErrc::kMalformed;
}

auto ToWireStatus(StoreErrc code) -> WireStatus {
  switch (code) {
    case StoreErrc::kTimeout: return WireStatus::kTimeout;
    case StoreErrc::kBadMagic: return WireStatus::kBadMagic;
    case StoreErrc::kBadVersion: return WireStatus::kBadVersion;
    case StoreErrc::kBadToken: return WireStatus::kBadToken;
    case StoreErrc::kWorldSizeMismatch: return WireStatus::kWorldSizeMismatch;
    case StoreErrc::kRankOutOfRange: return WireStatus::kRankOutOfRange;
    case StoreErrc::kDuplicateRank: return WireStatus::kDuplicateRank;
    case StoreErrc::kFrameTooLarge: return WireStatus::kFrameTooLarge;
    case StoreErrc::kInvalidArgument: return WireStatus::kInvalidArgument;
    case StoreErrc::kNotCounter: return WireStatus::kNotCounter;
    case StoreErrc::kShutdown: return WireStatus::kShutdown;
    case StoreErrc::kPlanMismatch: return WireStatus::kPlanMismatch;
    default: return WireStatus::kMalformed;
  }
}

auto MsgTypeName(uint8_t type) -> std::string_view {
  switch (static_cast<MsgType>(type)) {
    case MsgType::kHello: return "HELLO";
    case MsgType::kSet: return "SET";
    case MsgType::kGet: return "GET";
    case MsgType::kAdd: return "ADD";
    case MsgType::kWait: return "WAIT";
    case MsgType::kCheck: return "CHECK";
    case MsgType::kWaitAll: return "WAIT_ALL";
  }
  return "unknown";
}

auto IsPlanSha256(std::string_view s) -> bool {
  return s.size() == kPlanSha256Bytes && s.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

namespace {

template <typename T>
void PutLe(std::string& buf, T v) {
  for (size_t i = 0; i < sizeof(T); ++i) buf += static_cast<char>((static_cast<uint64_t>(v) >> (8 * i)) & 0xff);
}

template <typename T>
auto GetLe(std::string_view bytes) -> T {
  uint64_t v = 0;
  for (size_t i = 0; i < sizeof(T); ++i) v |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[i])) << (8 * i);
  return static_cast<T>(v);
}

}  // namespace

auto LoadU32(const char* p) -> uint32_t { return GetLe<uint32_t>(std::string_view(p, 4)); }

auto Writer::U8(uint8_t v) -> Writer& {
  buf_ += static_cast<char>(v);
  return *this;
}
auto Writer::U16(uint16_t v) -> Writer& {
  PutLe(buf_, v);
  return *this;
}
auto Writer::U32(uint32_t v) -> Writer& {
  PutLe(buf_, v);
  return *this;
}
auto Writer::I64(int64_t v) -> Writer& {
  PutLe(buf_, static_cast<uint64_t>(v));
  return *this;
}
auto Writer::Str(std::string_view s) -> Writer& {
  PutLe(buf_, static_cast<uint32_t>(s.size()));
  buf_.append(s);
  return *this;
}

auto Writer::Finish() && -> std::string {
  auto n = static_cast<uint32_t>(buf_.size() - kHeaderBytes);
  for (size_t i = 0; i < 4; ++i) buf_[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return std::move(buf_);
}

auto Reader::Take(size_t n) -> std::string_view {
  if (failed_ || rest_.size() < n) {
    failed_ = true;
    return {};
  }
  auto out = rest_.substr(0, n);
  rest_.remove_prefix(n);
  return out;
}

auto Reader::U8() -> uint8_t {
  auto b = Take(1);
  return b.empty() ? 0 : static_cast<uint8_t>(b[0]);
}
auto Reader::U16() -> uint16_t {
  auto b = Take(2);
  return b.empty() ? 0 : GetLe<uint16_t>(b);
}
auto Reader::U32() -> uint32_t {
  auto b = Take(4);
  return b.empty() ? 0 : GetLe<uint32_t>(b);
}
auto Reader::I64() -> int64_t {
  auto b = Take(8);
  return b.empty() ? 0 : static_cast<int64_t>(GetLe<uint64_t>(b));
}

auto Reader::Str(size_t max) -> std::string {
  uint32_t n = U32();
  if (n > max) failed_ = true;
  auto b = Take(n);
  return std::string(b);
}

}  // namespace avf::rendezvous::wire

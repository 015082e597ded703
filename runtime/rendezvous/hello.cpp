#include "rendezvous/hello.h"

#include <fmt/format.h>

#include "rendezvous/errors.h"
#include "rendezvous/token.h"

namespace avf::rendezvous {

namespace {

struct Hello {
  uint16_t version = 0;
  std::string token;
  uint32_t rank = 0, world_size = 0;
  std::string plan_sha256;
};

// The first 12 hex digits: enough to tell two plans apart in a message.
auto ShortSha(std::string_view sha) -> std::string { return std::string(sha.substr(0, 12)); }

auto CheckPlan(const Hello& h, std::string_view expected) -> llvm::Error {
  if (!wire::IsPlanSha256(h.plan_sha256)) {
    return MakeError(StoreErrc::kMalformed,
                     fmt::format("rank {} sent a plan fingerprint of {} bytes that is not the SHA-256 of a plan "
                                 "({} lowercase hexadecimal digits)",
                                 h.rank, h.plan_sha256.size(), wire::kPlanSha256Bytes));
  }
  if (h.plan_sha256 == expected) return llvm::Error::success();
  return MakeError(StoreErrc::kPlanMismatch,
                   fmt::format("rank {}'s plan.json has SHA-256 {}..., rank 0's {}...: the ranks read different plans. "
                               "Every pod of the job must read the same plan.json (a plan changed while the job "
                               "starts reaches some pods only); re-submit the job",
                               h.rank, ShortSha(h.plan_sha256), ShortSha(expected)));
}

auto CheckWorld(const Hello& h, uint32_t world) -> llvm::Error {
  if (h.world_size != world) {
    return MakeError(StoreErrc::kWorldSizeMismatch,
                     fmt::format("rank {} says the job has {} ranks, but the store was started for {} (is WORLD_SIZE "
                                 "the same on every rank?)",
                                 h.rank, h.world_size, world));
  }
  if (h.rank >= h.world_size) {
    return MakeError(StoreErrc::kRankOutOfRange, fmt::format("rank {} is out of range for a job of {} ranks (0-{})",
                                                             h.rank, h.world_size, h.world_size - 1));
  }
  return llvm::Error::success();
}

}  // namespace

auto EncodeHello(std::string_view token, uint32_t rank, uint32_t world_size, std::string_view plan_sha256,
                 uint32_t magic, uint16_t version) -> std::string {
  return std::move(wire::Writer()
                       .U8(static_cast<uint8_t>(wire::MsgType::kHello))
                       .U32(magic)
                       .U16(version)
                       .Str(token)
                       .U32(rank)
                       .U32(world_size)
                       .Str(plan_sha256))
      .Finish();
}

auto CheckHello(std::string_view payload, const HelloExpectation& expected) -> llvm::Expected<uint32_t> {
  wire::Reader r(payload);
  r.U8();
  r.U32();  // type and magic
  Hello h;
  h.version = r.U16();
  if (r.failed())
    return MakeError(StoreErrc::kMalformed, fmt::format("sent a hello of {} bytes, too short", payload.size()));
  if (h.version != wire::kVersion) {
    return MakeError(StoreErrc::kBadVersion,
                     fmt::format("the rank speaks rendezvous protocol version {}, this store version {} (every rank "
                                 "must run the same avf-run build)",
                                 h.version, wire::kVersion));
  }
  h.token = r.Str(wire::kMaxTokenBytes);
  h.rank = r.U32();
  h.world_size = r.U32();
  h.plan_sha256 = r.Str(wire::kMaxHelloBytes);
  if (!r.ok_at_end())
    return MakeError(StoreErrc::kMalformed, fmt::format("sent a malformed hello ({} bytes)", payload.size()));
  if (!TokensEqual(expected.token, h.token)) {
    return MakeError(StoreErrc::kBadToken,
                     fmt::format("the job token it presented (claiming rank {}) is not this job's; every rank must "
                                 "read the same token (the job's Secret, or ${})",
                                 h.rank, kTokenEnv));
  }
  if (auto err = CheckPlan(h, expected.plan_sha256)) return err;
  if (auto err = CheckWorld(h, expected.world_size)) return err;
  return h.rank;
}

}  // namespace avf::rendezvous

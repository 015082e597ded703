// The hello, the first frame of every connection to the store: what a client
// sends, and the store's check of it against its own options
// (runtime/README.md#rendezvous-store).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <llvm/Support/Error.h>

#include "rendezvous/wire.h"

namespace avf::rendezvous {

// The hello frame a client sends first (exposed for tests that speak the
// protocol by hand). The fields are in the order of the frame.
auto EncodeHello(std::string_view token, uint32_t rank, uint32_t world_size, std::string_view plan_sha256,
                 uint32_t magic = wire::kMagic, uint16_t version = wire::kVersion) -> std::string;

// What the store admits: its own token, plan and world size.
struct HelloExpectation {
  std::string_view token;
  std::string_view plan_sha256;
  uint32_t world_size = 1;
};

// Decodes a hello's payload (the store has checked its type and magic) and
// checks it in this order: version, token, plan, world size, rank range. The
// token comes before anything about the job, so a peer without it learns
// nothing. Returns the rank; a refusal is a StoreError with its code and the
// sentence the store sends back.
auto CheckHello(std::string_view payload, const HelloExpectation& expected) -> llvm::Expected<uint32_t>;

}  // namespace avf::rendezvous

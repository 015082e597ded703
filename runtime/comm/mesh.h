// Building a TcpCommunicator's mesh: one connection per pair of ranks, set up
// through the rendezvous store, each opened with a handshake that the
// accepting rank checks (job token first) before the connection joins.
#pragma once

#include <llvm/Support/Error.h>

#include <string>
#include <string_view>
#include <vector>

#include "comm/tcp_communicator.h"

namespace avf::comm::detail {

// "AVFC": the first payload bytes after the type of a communicator hello.
inline constexpr uint32_t kHelloMagic = 0x43465641;
inline constexpr uint8_t kHelloType = 0x21;
inline constexpr uint16_t kHelloVersion = 1;

// u8 type, u32 magic, u16 version, str token, str id, u32 from, u32 to, u32 size,
// framed like the store's messages (rendezvous/wire.h).
auto EncodeHello(std::string_view token, std::string_view id, uint32_t from, uint32_t to, uint32_t size) -> std::string;

// The connection to every other rank, indexed by rank (this rank's slot is
// empty). Fails with an error naming the rank that did not connect, was not
// reachable or refused this one.
auto BuildMesh(const TcpOptions& o) -> llvm::Expected<std::vector<rendezvous::net::Fd>>;

}  // namespace avf::comm::detail

// The connections of a multi-rank avf-run, for training and preflight alike:
// rank 0 serves the rendezvous store, every rank joins it with the job token
// and the plan's SHA-256, then builds the world's TCP mesh through it.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include <llvm/Support/Error.h>

#include "comm/tcp_communicator.h"
#include "plan/identity.h"
#include "rendezvous/store.h"

namespace avf::run {

struct World {
  std::unique_ptr<rendezvous::StoreServer> server;  // rank 0 only
  std::shared_ptr<rendezvous::StoreClient> store;
  std::string token;
  std::unique_ptr<comm::TcpCommunicator> comm;  // null until ConnectMesh
};

auto Millis(double seconds) -> std::chrono::milliseconds;

// The address the other ranks reach this one at: $AVF_HOST, else loopback
// when the store is local, else this machine's host name (a pod's name
// resolves to its address through the training object's headless Service).
auto OwnAddress(const std::string& master) -> std::string;

// Rank 0 starts the store (it logs the connections it refuses on stderr);
// every rank joins it, retrying for `join_timeout_s`.
auto JoinStore(const runtime::RankIdentity& id, double join_timeout_s, const std::string& plan_sha256)
    -> llvm::Expected<World>;

// The options of this rank's world TcpCommunicator over `w`'s store.
auto MeshOptions(const World& w, const runtime::RankIdentity& id, double join_timeout_s, double peer_timeout_s)
    -> comm::TcpOptions;

}  // namespace avf::run

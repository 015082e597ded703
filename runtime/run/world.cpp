#include "run/world.h"

#include <unistd.h>

#include <cstdlib>

#include <fmt/format.h>

#include "rendezvous/token.h"

namespace avf::run {

namespace {

// What the store logs about a connection it refused or lost (a rank with
// another plan or token, a peer that broke the protocol): on rank 0's stderr.
void LogStore(std::string_view line) { fmt::print(stderr, "avf-run: {}\n", line); }

}  // namespace

auto Millis(double seconds) -> std::chrono::milliseconds {
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}

auto OwnAddress(const std::string& master) -> std::string {
  if (const char* host = std::getenv("AVF_HOST"); host && *host) return host;
  if (master == "localhost" || master.rfind("127.", 0) == 0 || master == "::1") return "127.0.0.1";
  char name[256] = {};
  return gethostname(name, sizeof(name) - 1) == 0 ? std::string(name) : "127.0.0.1";
}

auto JoinStore(const runtime::RankIdentity& id, double join_timeout_s, const std::string& plan_sha256)
    -> llvm::Expected<World> {
  auto token = rendezvous::TokenFromEnvironment();
  if (!token) return token.takeError();
  World w;
  w.token = *token;
  auto port = static_cast<uint16_t>(id.master_port);
  int rank = static_cast<int>(id.rank), size = static_cast<int>(id.world_size);
  if (rank == 0) {
    rendezvous::ServerOptions options;
    options.port = port;
    options.world_size = size;
    options.token = *token;
    options.plan_sha256 = plan_sha256;
    options.log = LogStore;
    auto server = rendezvous::StoreServer::Start(std::move(options));
    if (!server) return server.takeError();
    w.server = std::move(*server);
  }
  auto store = rendezvous::StoreClient::Join({.host = id.master_addr,
                                              .port = port,
                                              .rank = rank,
                                              .world_size = size,
                                              .token = *token,
                                              .plan_sha256 = plan_sha256,
                                              .connect_timeout = Millis(join_timeout_s)});
  if (!store) return store.takeError();
  w.store = std::move(*store);
  return w;
}

auto MeshOptions(const World& w, const runtime::RankIdentity& id, double join_timeout_s, double peer_timeout_s)
    -> comm::TcpOptions {
  comm::TcpOptions options;
  options.store = w.store;
  options.rank = static_cast<int>(id.rank);
  options.size = static_cast<int>(id.world_size);
  options.token = w.token;
  options.host = OwnAddress(id.master_addr);
  options.timeout = Millis(peer_timeout_s);
  options.setup_timeout = Millis(join_timeout_s);
  return options;
}

}  // namespace avf::run

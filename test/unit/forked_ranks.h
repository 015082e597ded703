// Ranks as forked processes for the multi-process tests: every rank is a
// child with its own store client and TCP mesh on 127.0.0.1, meeting through
// a rendezvous store served by the parent (started after the forks, so no
// lock is held across fork()). Each child runs a body on its world
// communicator and reports "" or what went wrong through a socket pair
// before _exit().
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include <llvm/Support/Error.h>

#include <sys/types.h>

#include "comm/tcp_communicator.h"
#include "rendezvous/socket.h"

namespace avf::comm::testing {

using std::chrono::milliseconds;

extern const std::string kToken;
// The SHA-256 every forked rank presents as its plan's.
extern const std::string kPlanSha256;

// The message of an error ("" for success).
auto Text(llvm::Error e) -> std::string;

// What one rank runs on its world communicator; "" on success.
using Body = std::function<std::string(Communicator& world)>;

struct RunSetup {
  milliseconds timeout = milliseconds(2000);
  std::function<void(TcpOptions&)> tweak;  // per-rank options (a wrong token)
  int kill_rank = -1;                      // the parent SIGKILLs it after kill_after
  milliseconds kill_after = milliseconds(300);
};

// One forked child: it waits for a value from the parent (Give), runs its
// body on it, and reports "" or what went wrong before _exit().
struct Child {
  pid_t pid = -1;
  int in_fd = -1, report_fd = -1;
};
auto Spawn(const std::function<std::string(uint16_t)>& body) -> Child;
void Give(Child& c, uint16_t value);
// The child's report: "" for success; "hung: ..." when it outlived the
// deadline (then it is killed); "killed", "signal N" or "exit N, report
// '...'" when it died without reporting.
auto Reap(Child& c, rendezvous::net::Clock::time_point deadline) -> std::string;

// Runs `body` on `size` forked ranks; one report per rank.
auto RunRanks(int size, const Body& body, const RunSetup& setup = {}) -> std::vector<std::string>;

void ExpectAllOk(const std::vector<std::string>& reports);

}  // namespace avf::comm::testing

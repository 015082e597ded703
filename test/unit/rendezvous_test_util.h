// Helpers shared by the rendezvous store tests: a server with a captured log,
// client options for it, raw loopback sockets that speak (or break) the
// protocol by hand, and assertion helpers for llvm::Error / llvm::Expected.
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "rendezvous/store.h"
#include "rendezvous/token.h"

namespace avf::rendezvous::testing {

using namespace std::chrono_literals;
using net::Clock;

inline const std::string kToken = "test-token-0123456789abcdef";
// The SHA-256 of the plan every test rank "read" (of the bytes "plan").
inline const std::string kPlanSha256 = "64879f7d6b960a01909762d911a32d4582c20010c5641ee90278b644a9e3b525";

// The error's message ("" for success), consuming it.
inline auto ErrText(llvm::Error e) -> std::string { return e ? TakeFailure(std::move(e)).message : std::string(); }

#define RDZV_CAT2(a, b) a##b
#define RDZV_CAT(a, b) RDZV_CAT2(a, b)
// `decl = *expr`, or the test fails with the error's message.
#define RDZV_ASSIGN(decl, expr)                                                        \
  auto RDZV_CAT(rdzv_e_, __LINE__) = (expr);                                           \
  ASSERT_TRUE(static_cast<bool>(RDZV_CAT(rdzv_e_, __LINE__)))                          \
      << ::avf::rendezvous::testing::ErrText(RDZV_CAT(rdzv_e_, __LINE__).takeError()); \
  decl = std::move(*RDZV_CAT(rdzv_e_, __LINE__))
#define RDZV_OK(expr) ASSERT_EQ(::avf::rendezvous::testing::ErrText(expr), "")

// Expects a failure with `code` whose message contains every one of `parts`.
inline void ExpectFailure(llvm::Error e, StoreErrc code, std::initializer_list<std::string_view> parts) {
  ASSERT_TRUE(static_cast<bool>(e)) << "expected a " << ErrcName(code) << " error, got success";
  Failure f = TakeFailure(std::move(e));
  EXPECT_EQ(ErrcName(f.code), ErrcName(code)) << f.message;
  for (auto p : parts) EXPECT_NE(f.message.find(p), std::string::npos) << "missing '" << p << "' in: " << f.message;
}

template <typename T>
void ExpectFailure(llvm::Expected<T> e, StoreErrc code, std::initializer_list<std::string_view> parts) {
  if (e) {
    ADD_FAILURE() << "expected a " << ErrcName(code) << " error, got a value";
    return;
  }
  ExpectFailure(e.takeError(), code, parts);
}

// Collects the server's log lines (written from the server thread).
class LogSink {
 public:
  auto Callback() -> std::function<void(std::string_view)> {
    return [this](std::string_view line) {
      std::lock_guard lock(mu_);
      lines_.emplace_back(line);
    };
  }
  auto Lines() -> std::vector<std::string> {
    std::lock_guard lock(mu_);
    return lines_;
  }
  // Waits (at most 2 s) for a line containing `part`.
  auto WaitFor(std::string_view part) -> std::string {
    for (auto end = Clock::now() + 2s; Clock::now() < end; std::this_thread::sleep_for(2ms)) {
      for (const auto& l : Lines()) {
        if (l.find(part) != std::string::npos) return l;
      }
    }
    return "";
  }

 private:
  std::mutex mu_;
  std::vector<std::string> lines_;
};

// Waits (at most 2 s) for `pred`.
inline auto WaitUntil(const std::function<bool()>& pred) -> bool {
  for (auto end = Clock::now() + 2s; Clock::now() < end; std::this_thread::sleep_for(1ms)) {
    if (pred()) return true;
  }
  return pred();
}

inline auto MsSince(Clock::time_point start) -> int64_t {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
}

// A server on 127.0.0.1 with a kernel-chosen port and a captured log.
struct TestServer {
  std::unique_ptr<StoreServer> server;
  LogSink log;
  auto port() const -> uint16_t { return server->port(); }
  auto Options(int rank, int world) const -> ClientOptions {
    ClientOptions o;
    o.host = "127.0.0.1";
    o.port = port();
    o.rank = rank;
    o.world_size = world;
    o.token = kToken;
    o.plan_sha256 = kPlanSha256;
    o.connect_timeout = 2s;
    o.io_timeout = 2s;
    return o;
  }
};

inline auto StartTestServer(int world, const std::function<void(ServerOptions&)>& tweak = {})
    -> std::unique_ptr<TestServer> {
  auto t = std::make_unique<TestServer>();
  ServerOptions o;
  o.host = "127.0.0.1";
  o.world_size = world;
  o.token = kToken;
  o.plan_sha256 = kPlanSha256;
  o.log = t->log.Callback();
  if (tweak) tweak(o);
  auto s = StoreServer::Start(std::move(o));
  if (!s) {
    ADD_FAILURE() << ErrText(s.takeError());
    return nullptr;
  }
  t->server = std::move(*s);
  return t;
}

// A plain blocking socket connected to 127.0.0.1:port (fails the test otherwise).
inline auto RawConnect(uint16_t port) -> net::Fd {
  auto fd = net::ConnectWithRetry("127.0.0.1", port, Clock::now() + 1s);
  if (!fd) {
    ADD_FAILURE() << ErrText(fd.takeError());
    return {};
  }
  return std::move(*fd);
}

inline auto RawSend(const net::Fd& fd, std::string_view bytes) -> bool {
  return net::SendAll(fd.get(), bytes, Clock::now() + 1s).kind == net::IoResult::kOk;
}

// One reply frame from the store: status byte and body; nullopt on close or timeout.
struct RawReply {
  uint8_t status = 0;
  std::string body;     // after the status byte
  std::string message;  // for an error status
};
inline auto RawReadReply(const net::Fd& fd, std::chrono::milliseconds within = 2s) -> std::optional<RawReply> {
  auto deadline = Clock::now() + within;
  char header[4];
  if (net::RecvExact(fd.get(), header, 4, deadline).kind != net::IoResult::kOk) return std::nullopt;
  uint32_t len = wire::LoadU32(header);
  if (len == 0 || len > (1u << 20)) return std::nullopt;
  std::string payload(len, '\0');
  if (net::RecvExact(fd.get(), payload.data(), len, deadline).kind != net::IoResult::kOk) return std::nullopt;
  RawReply r;
  r.status = static_cast<uint8_t>(payload[0]);
  r.body = payload.substr(1);
  if (r.status != 0) {
    wire::Reader rd(r.body);
    r.message = rd.Str();
  }
  return r;
}

// True when the peer closed the connection (EOF or reset) within `within`.
inline auto RawClosed(const net::Fd& fd, std::chrono::milliseconds within = 2s) -> bool {
  char c;
  auto io = net::RecvExact(fd.get(), &c, 1, Clock::now() + within);
  return io.kind == net::IoResult::kClosed || io.kind == net::IoResult::kError;
}

// A socket that has joined as `rank`, for tests that then misbehave.
inline auto RawJoin(uint16_t port, int rank, int world) -> net::Fd {
  net::Fd fd = RawConnect(port);
  if (!fd.valid() ||
      !RawSend(fd, EncodeHello(kToken, static_cast<uint32_t>(rank), static_cast<uint32_t>(world), kPlanSha256))) {
    ADD_FAILURE() << "cannot send the hello";
    return {};
  }
  auto reply = RawReadReply(fd);
  if (!reply || reply->status != 0) {
    ADD_FAILURE() << "raw join refused: " << (reply ? reply->message : "no reply");
    return {};
  }
  return fd;
}

}  // namespace avf::rendezvous::testing

// The protocol by hand: raw sockets that send garbage, wrong magic or
// version, oversized, truncated or malformed frames to the store, and fake
// stores that send the same to a client. Neither side may crash, hang or
// allocate what a header merely claims; the store keeps serving everyone else.
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>

#include "rendezvous_test_util.h"

namespace avf::rendezvous::testing {
namespace {

auto Frame(wire::MsgType type) -> wire::Writer {
  wire::Writer w;
  w.U8(static_cast<uint8_t>(type));
  return w;
}

// The store still admits a well-behaved rank after a misbehaving connection.
void ExpectStillServing(TestServer& t, int rank, int world) {
  auto c = StoreClient::Join(t.Options(rank, world));
  ASSERT_TRUE(static_cast<bool>(c)) << ErrText(c.takeError());
  EXPECT_EQ(ErrText((*c)->Set("alive", "yes")), "");
}

TEST(RendezvousWireServer, GarbageInsteadOfAHelloIsWrongMagic) {
  auto t = StartTestServer(2);
  ASSERT_TRUE(t);
  net::Fd fd = RawConnect(t->port());
  ASSERT_TRUE(RawSend(fd, "GET / HTTP/1.1\r\nHost: rank0\r\n\r\n"));
  auto reply = RawReadReply(fd);
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, static_cast<uint8_t>(wire::WireStatus::kBadMagic));
  EXPECT_NE(reply->message.find("not the hello of an avf rendezvous client"), std::string::npos) << reply->message;
  EXPECT_NE(reply->message.find("47 45 54 20 2f"), std::string::npos) << reply->message;
  EXPECT_TRUE(RawClosed(fd));
  EXPECT_NE(t->log.WaitFor("not the hello"), "");
  ExpectStillServing(*t, 0, 2);
}

TEST(RendezvousWireServer, WrongMagicAndWrongVersionAreNamed) {
  auto t = StartTestServer(2);
  ASSERT_TRUE(t);
  net::Fd a = RawConnect(t->port());
  ASSERT_TRUE(RawSend(a, EncodeHello(kToken, 0, 2, kPlanSha256, 0xDEADBEEF)));
  auto ra = RawReadReply(a);
  ASSERT_TRUE(ra);
  EXPECT_EQ(ra->status, static_cast<uint8_t>(wire::WireStatus::kBadMagic));
  EXPECT_NE(ra->message.find("ef be ad de"), std::string::npos) << ra->message;

  net::Fd b = RawConnect(t->port());
  ASSERT_TRUE(RawSend(b, EncodeHello(kToken, 0, 2, kPlanSha256, wire::kMagic, 99)));
  auto rb = RawReadReply(b);
  ASSERT_TRUE(rb);
  EXPECT_EQ(rb->status, static_cast<uint8_t>(wire::WireStatus::kBadVersion));
  EXPECT_NE(rb->message.find("protocol version 99, this store version 2"), std::string::npos) << rb->message;
  EXPECT_TRUE(RawClosed(b));
  ExpectStillServing(*t, 0, 2);
}

TEST(RendezvousWireServer, RankOutOfRangeIsRefused) {
  auto t = StartTestServer(4);
  ASSERT_TRUE(t);
  net::Fd fd = RawConnect(t->port());
  ASSERT_TRUE(RawSend(fd, EncodeHello(kToken, 7, 4, kPlanSha256)));
  auto reply = RawReadReply(fd);
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, static_cast<uint8_t>(wire::WireStatus::kRankOutOfRange));
  EXPECT_NE(reply->message.find("rank 7 is out of range for a job of 4 ranks (0-3)"), std::string::npos);
  EXPECT_TRUE(RawClosed(fd));
}

TEST(RendezvousWireServer, AHelloWithAPlanSha256OfTheWrongFormIsMalformed) {
  auto t = StartTestServer(2);
  ASSERT_TRUE(t);
  for (std::string sha : {std::string(), kPlanSha256.substr(0, 63), kPlanSha256 + kPlanSha256, std::string(64, 'F')}) {
    net::Fd fd = RawConnect(t->port());
    ASSERT_TRUE(RawSend(fd, EncodeHello(kToken, 1, 2, sha)));
    auto reply = RawReadReply(fd);
    ASSERT_TRUE(reply);
    EXPECT_EQ(reply->status, static_cast<uint8_t>(wire::WireStatus::kMalformed));
    EXPECT_NE(reply->message.find(fmt::format("rank 1 sent a plan fingerprint of {} bytes", sha.size())),
              std::string::npos)
        << reply->message;
    EXPECT_TRUE(RawClosed(fd));
  }
  EXPECT_EQ(t->server->Stats().joined_ranks, 0);
  ExpectStillServing(*t, 1, 2);
}

// A hello of version 1 (no plan) is refused by its version, not misread.
TEST(RendezvousWireServer, AVersion1HelloIsRefusedByItsVersion) {
  auto t = StartTestServer(2);
  ASSERT_TRUE(t);
  net::Fd fd = RawConnect(t->port());
  std::string v1 = std::move(Frame(wire::MsgType::kHello).U32(wire::kMagic).U16(1).Str(kToken).U32(1).U32(2)).Finish();
  ASSERT_TRUE(RawSend(fd, v1));
  auto reply = RawReadReply(fd);
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, static_cast<uint8_t>(wire::WireStatus::kBadVersion));
  EXPECT_NE(reply->message.find("protocol version 1, this store version 2"), std::string::npos) << reply->message;
  EXPECT_TRUE(RawClosed(fd));
}

TEST(RendezvousWireServer, OversizedHelloIsRefusedFromItsHeader) {
  auto t = StartTestServer(2);
  ASSERT_TRUE(t);
  net::Fd fd = RawConnect(t->port());
  ASSERT_TRUE(RawSend(fd, std::string("\x00\x00\x10\x00\x01"
                                      "AVFR",
                                      9)));  // claims 1 MiB
  auto reply = RawReadReply(fd);
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, static_cast<uint8_t>(wire::WireStatus::kFrameTooLarge));
  EXPECT_NE(reply->message.find("a hello of 1048576 bytes; a hello has at most 4096"), std::string::npos);
  EXPECT_TRUE(RawClosed(fd));
}

TEST(RendezvousWireServer, OversizedFrameAfterJoiningClosesThatConnectionOnly) {
  auto t = StartTestServer(2);
  ASSERT_TRUE(t);
  RDZV_ASSIGN(auto other, StoreClient::Join(t->Options(0, 2)));
  net::Fd fd = RawJoin(t->port(), 1, 2);
  ASSERT_TRUE(fd.valid());
  ASSERT_TRUE(RawSend(fd, std::string("\xff\xff\xff\xff\x02xyz", 8)));  // 4 GiB claimed: nothing is allocated
  auto reply = RawReadReply(fd);
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, static_cast<uint8_t>(wire::WireStatus::kFrameTooLarge));
  EXPECT_TRUE(RawClosed(fd));
  EXPECT_NE(t->log.WaitFor("rank 1 (127.0.0.1:"), "");
  EXPECT_NE(t->log.WaitFor("announced a frame of 4294967295 bytes; the store's limit is 67108864 bytes"), "");
  RDZV_OK(other->Set("k", "v"));
  ExpectStillServing(*t, 1, 2);  // the rank's slot is free again
}

TEST(RendezvousWireServer, ClientLearnsTheStoresSmallerFrameLimit) {
  auto t = StartTestServer(1, [](ServerOptions& o) { o.max_frame_bytes = 8192; });
  ASSERT_TRUE(t);
  RDZV_ASSIGN(auto c, StoreClient::Join(t->Options(0, 1)));
  ExpectFailure(c->Set("big", std::string(10000, 'x')), StoreErrc::kFrameTooLarge,
                {"rank 0: SET 'big'", "announced a frame of 10012 bytes; the store's limit is 8192 bytes"});
}

TEST(RendezvousWireServer, TruncatedFrameThenDisconnectIsLoggedAndForgotten) {
  auto t = StartTestServer(2);
  ASSERT_TRUE(t);
  {
    net::Fd fd = RawJoin(t->port(), 1, 2);
    ASSERT_TRUE(fd.valid());
    std::string frame = std::move(Frame(wire::MsgType::kSet).Str("key").Str(std::string(100, 'v'))).Finish();
    ASSERT_TRUE(RawSend(fd, frame.substr(0, 20)));
  }
  EXPECT_NE(t->log.WaitFor("rank 1 (127.0.0.1:"), "");
  EXPECT_NE(t->log.WaitFor("closed the connection in the middle of a frame of 116 bytes (20 bytes received)"), "");
  {
    net::Fd fd = RawJoin(t->port(), 1, 2);
    ASSERT_TRUE(RawSend(fd, std::string("\x05\x00", 2)));
  }
  EXPECT_NE(t->log.WaitFor("in the middle of a 4-byte frame header (2 bytes received)"), "");
  ExpectStillServing(*t, 1, 2);
  RDZV_ASSIGN(auto c, StoreClient::Join(t->Options(0, 2)));
  RDZV_ASSIGN(auto present, c->Check(std::vector<std::string>{"key"}));
  EXPECT_EQ(present, std::vector<bool>{false});  // the half-sent SET did nothing
}

TEST(RendezvousWireServer, MalformedRequestsAreRefused) {
  auto t = StartTestServer(1);
  ASSERT_TRUE(t);
  struct Case {
    std::string frame;
    std::string says;
  };
  std::vector<Case> cases = {
      {std::move(wire::Writer().U8(99)).Finish(), "unknown type 99"},
      {std::move(Frame(wire::MsgType::kSet).U32(1000).Str("short")).Finish(), "malformed SET"},
      {std::move(Frame(wire::MsgType::kGet).Str("k")).Finish(), "malformed GET"},  // no timeout
      {std::move(Frame(wire::MsgType::kAdd).Str("k").U32(1)).Finish(), "malformed ADD"},
      {std::move(Frame(wire::MsgType::kWait).U32(0xFFFFFFFF)).Finish(), "malformed WAIT"},          // count not trusted
      {std::move(Frame(wire::MsgType::kCheck).U32(1).Str("a").U8(0)).Finish(), "malformed CHECK"},  // trailing byte
      {std::move(Frame(wire::MsgType::kHello).U32(wire::kMagic)).Finish(), "unknown type 1"},       // a second hello
      {std::string("\0\0\0\0", 4), "unknown type 0"},                                               // an empty frame
  };
  for (const auto& c : cases) {
    net::Fd fd = RawJoin(t->port(), 0, 1);
    ASSERT_TRUE(fd.valid());
    ASSERT_TRUE(RawSend(fd, c.frame));
    auto reply = RawReadReply(fd);
    ASSERT_TRUE(reply) << c.says;
    EXPECT_EQ(reply->status, static_cast<uint8_t>(wire::WireStatus::kMalformed)) << c.says;
    EXPECT_NE(reply->message.find(c.says), std::string::npos) << reply->message;
    EXPECT_TRUE(RawClosed(fd));
    ASSERT_TRUE(WaitUntil([&] { return t->server->Stats().connections == 0; }));
  }
  ExpectStillServing(*t, 0, 1);
}

TEST(RendezvousWireServer, SilentOrHalfHelloTimesOut) {
  auto t = StartTestServer(1, [](ServerOptions& o) { o.handshake_timeout = 200ms; });
  ASSERT_TRUE(t);
  auto start = Clock::now();
  net::Fd silent = RawConnect(t->port());
  net::Fd half = RawConnect(t->port());
  ASSERT_TRUE(RawSend(half, EncodeHello(kToken, 0, 1, kPlanSha256).substr(0, 12)));
  for (net::Fd* fd : {&silent, &half}) {
    auto reply = RawReadReply(*fd);
    ASSERT_TRUE(reply);
    EXPECT_EQ(reply->status, static_cast<uint8_t>(wire::WireStatus::kTimeout));
    EXPECT_NE(reply->message.find("sent no valid hello within 0.2 s of connecting"), std::string::npos);
    EXPECT_TRUE(RawClosed(*fd));
  }
  auto ms = MsSince(start);
  EXPECT_GE(ms, 190);
  EXPECT_LT(ms, 1500);
  EXPECT_EQ(t->server->Stats().connections, 0);
}

TEST(RendezvousWireServer, PipelinedRequestsAreAnsweredInOrder) {
  auto t = StartTestServer(1);
  ASSERT_TRUE(t);
  net::Fd fd = RawJoin(t->port(), 0, 1);
  ASSERT_TRUE(fd.valid());
  std::string batch = std::move(Frame(wire::MsgType::kSet).Str("a").Str("1")).Finish() +
                      std::move(Frame(wire::MsgType::kAdd).Str("n").I64(5)).Finish() +
                      std::move(Frame(wire::MsgType::kGet).Str("a").U32(0)).Finish();
  ASSERT_TRUE(RawSend(fd, batch));
  auto r1 = RawReadReply(fd), r2 = RawReadReply(fd), r3 = RawReadReply(fd);
  ASSERT_TRUE(r1 && r2 && r3);
  EXPECT_EQ(r1->status, 0);
  wire::Reader add(r2->body);
  EXPECT_EQ(add.I64(), 5);
  wire::Reader get(r3->body);
  EXPECT_EQ(get.Str(), "1");
}

TEST(RendezvousWireServer, SendingWhileARequestWaitsIsRefused) {
  auto t = StartTestServer(1);
  ASSERT_TRUE(t);
  net::Fd fd = RawJoin(t->port(), 0, 1);
  ASSERT_TRUE(RawSend(fd, std::move(Frame(wire::MsgType::kGet).Str("later").U32(5000)).Finish()));
  ASSERT_TRUE(WaitUntil([&] { return t->server->Stats().parked == 1; }));
  ASSERT_TRUE(RawSend(fd, std::move(Frame(wire::MsgType::kSet).Str("x").Str("y")).Finish()));
  auto reply = RawReadReply(fd);
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, static_cast<uint8_t>(wire::WireStatus::kMalformed));
  EXPECT_NE(reply->message.find("while its request was waiting"), std::string::npos) << reply->message;
  EXPECT_TRUE(RawClosed(fd));
  EXPECT_EQ(t->server->Stats().parked, 0);
}

TEST(RendezvousWireServer, AWaitingClientThatDisconnectsIsDropped) {
  auto t = StartTestServer(2);
  ASSERT_TRUE(t);
  {
    net::Fd fd = RawJoin(t->port(), 1, 2);
    wire::Writer w = Frame(wire::MsgType::kWait);
    w.U32(2).Str("a").Str("b").U32(5000);
    ASSERT_TRUE(RawSend(fd, std::move(w).Finish()));
    ASSERT_TRUE(WaitUntil([&] { return t->server->Stats().parked == 1; }));
  }
  EXPECT_NE(t->log.WaitFor("rank 1 (127.0.0.1:"), "");
  EXPECT_NE(t->log.WaitFor("disconnected while its request was waiting"), "");
  EXPECT_EQ(t->server->Stats().parked, 0);
  RDZV_ASSIGN(auto c, StoreClient::Join(t->Options(0, 2)));
  RDZV_OK(c->Set("a", "1"));  // wakes nobody: the waiter is gone
  RDZV_OK(c->Set("b", "1"));
}

TEST(RendezvousWireServer, APeerThatVanishesMidReplyDoesNotKillTheStore) {
  auto t = StartTestServer(2);
  ASSERT_TRUE(t);
  RDZV_ASSIGN(auto c, StoreClient::Join(t->Options(0, 2)));
  RDZV_OK(c->Set("big", std::string(16 << 20, 'b')));
  {
    net::Fd fd = RawJoin(t->port(), 1, 2);
    ASSERT_TRUE(RawSend(fd, std::move(Frame(wire::MsgType::kGet).Str("big").U32(0)).Finish()));
    char header[4];
    ASSERT_EQ(net::RecvExact(fd.get(), header, 4, Clock::now() + 2s).kind, net::IoResult::kOk);  // the reply began
    linger abort{1, 0};  // close with a reset while the store is still writing the 16 MiB reply
    ::setsockopt(fd.get(), SOL_SOCKET, SO_LINGER, &abort, sizeof abort);
  }
  // Without MSG_NOSIGNAL the store's next write would raise SIGPIPE and end this process.
  ASSERT_TRUE(WaitUntil([&] { return t->server->Stats().connected_ranks == 1; }));
  EXPECT_NE(t->log.WaitFor("write error to rank 1 (127.0.0.1:"), "");
  RDZV_ASSIGN(std::string v, c->Get("big", 1s));
  EXPECT_EQ(v.size(), 16u << 20);
}

extern "C" void IgnoreSignal(int) {}

TEST(RendezvousWireServer, SignalsDoNotBreakBlockingCalls) {
  // A handler without SA_RESTART: poll(), recv() and send() return EINTR.
  struct sigaction act {
  }, old{};
  act.sa_handler = IgnoreSignal;
  ::sigaction(SIGUSR1, &act, &old);
  auto t = StartTestServer(2);
  ASSERT_TRUE(t);
  RDZV_ASSIGN(auto a, StoreClient::Join(t->Options(0, 2)));
  RDZV_ASSIGN(auto b, StoreClient::Join(t->Options(1, 2)));
  std::string got;
  std::thread getter([&] {
    auto v = b->Get("late", 2s);
    if (v) got = *v;
    else ADD_FAILURE() << ErrText(v.takeError());
  });
  ASSERT_TRUE(WaitUntil([&] { return t->server->Stats().parked == 1; }));
  for (int i = 0; i < 30; ++i) {
    ::pthread_kill(getter.native_handle(), SIGUSR1);
    ::kill(::getpid(), SIGUSR1);  // lands on any thread, the store's included
    std::this_thread::sleep_for(2ms);
  }
  RDZV_OK(a->Set("late", "value"));
  getter.join();
  EXPECT_EQ(got, "value");
  RDZV_ASSIGN(int64_t n, a->Add("n", 1));
  EXPECT_EQ(n, 1);
  ::sigaction(SIGUSR1, &old, nullptr);
}

// ---- a fake store against the client ----

// Accepts one connection on 127.0.0.1 and hands it to `serve` on a thread.
class FakeStore {
 public:
  explicit FakeStore(std::function<void(net::Fd&)> serve) {
    auto l = net::Listen("127.0.0.1", 0);
    if (!l) {
      ADD_FAILURE() << ErrText(l.takeError());
      return;
    }
    port_ = l->port;
    thread_ = std::thread([listener = std::move(l->fd), serve = std::move(serve)]() mutable {
      pollfd p{listener.get(), POLLIN, 0};
      if (::poll(&p, 1, 3000) != 1) return;
      net::Fd fd(::accept(listener.get(), nullptr, nullptr));
      if (fd.valid()) serve(fd);
    });
  }
  ~FakeStore() {
    if (thread_.joinable()) thread_.join();
  }
  auto Options() const -> ClientOptions {
    ClientOptions o;
    o.port = port_;
    o.token = kToken;
    o.plan_sha256 = kPlanSha256;
    o.connect_timeout = 1s;
    o.io_timeout = 300ms;
    return o;
  }

 private:
  uint16_t port_ = 0;
  std::thread thread_;
};

// Reads the client's hello (or anything up to a frame) so that it waits for the reply.
void SwallowFrame(net::Fd& fd) {
  char header[4];
  if (net::RecvExact(fd.get(), header, 4, Clock::now() + 2s).kind != net::IoResult::kOk) return;
  std::string body(wire::LoadU32(header), '\0');
  net::RecvExact(fd.get(), body.data(), body.size(), Clock::now() + 2s);
}

void WaitForClose(net::Fd& fd) { RawClosed(fd, 3s); }

TEST(RendezvousWireClient, OversizedReplyIsRefusedFromItsHeader) {
  FakeStore fake([](net::Fd& fd) {
    SwallowFrame(fd);
    RawSend(fd, std::string("\xff\xff\xff\xff\x00", 5));
    WaitForClose(fd);
  });
  ExpectFailure(StoreClient::Join(fake.Options()), StoreErrc::kFrameTooLarge,
                {"rank 0: JOIN on the rendezvous store at 127.0.0.1:", "announced a reply of 4294967295 bytes"});
}

TEST(RendezvousWireClient, TruncatedReplyIsNamed) {
  FakeStore fake([](net::Fd& fd) {
    SwallowFrame(fd);
    RawSend(fd, std::string("\x64\0\0\0\0partial..", 14));
  });
  ExpectFailure(StoreClient::Join(fake.Options()), StoreErrc::kConnectionLost,
                {"the store closed the connection in the middle of the reply (10 of 100 bytes received)"});
}

TEST(RendezvousWireClient, SilentStoreTimesOut) {
  FakeStore fake([](net::Fd& fd) {
    SwallowFrame(fd);
    WaitForClose(fd);
  });
  auto start = Clock::now();
  ExpectFailure(StoreClient::Join(fake.Options()), StoreErrc::kTimeout, {"no reply from the store in time"});
  EXPECT_LT(MsSince(start), 1500);
}

TEST(RendezvousWireClient, StoreThatHangsUpIsConnectionLost) {
  FakeStore fake([](net::Fd& fd) { SwallowFrame(fd); });
  ExpectFailure(StoreClient::Join(fake.Options()), StoreErrc::kConnectionLost,
                {"the store closed the connection before replying"});
}

TEST(RendezvousWireClient, MalformedErrorReplyIsCaught) {
  FakeStore fake([](net::Fd& fd) {
    SwallowFrame(fd);
    RawSend(fd, std::move(wire::Writer().U8(4).U32(500)).Finish());  // bad-token status, string cut short
    WaitForClose(fd);
  });
  ExpectFailure(StoreClient::Join(fake.Options()), StoreErrc::kMalformed, {"error reply is malformed"});
}

}  // namespace
}  // namespace avf::rendezvous::testing

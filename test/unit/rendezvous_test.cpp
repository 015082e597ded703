// The rendezvous store through its public API: tokens, message helpers, the
// operations across clients in threads, the join checks, timeouts, connect
// retries, ranks that never come, and shutdown while a client waits.
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>

#include "rendezvous_test_util.h"

namespace avf::rendezvous::testing {
namespace {

// ---- tokens ----

TEST(RendezvousToken, RandomTokensAreHexAndDistinct) {
  RDZV_ASSIGN(std::string a, MakeRandomToken());
  RDZV_ASSIGN(std::string b, MakeRandomToken());
  EXPECT_EQ(a.size(), 64u);
  EXPECT_EQ(a.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_NE(a, b);
  RDZV_OK(ValidateToken(a, "test"));
}

TEST(RendezvousToken, EqualComparesLengthAndEveryByte) {
  EXPECT_TRUE(TokensEqual(kToken, kToken));
  EXPECT_FALSE(TokensEqual(kToken, kToken + "x"));
  EXPECT_FALSE(TokensEqual(kToken, kToken.substr(0, kToken.size() - 1)));
  std::string last = kToken;
  last.back() ^= 1;
  EXPECT_FALSE(TokensEqual(kToken, last));
  EXPECT_FALSE(TokensEqual(kToken, ""));
  EXPECT_FALSE(TokensEqual("", "a"));
}

class TokenFile : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/avf-token-XXXXXX";
    int fd = ::mkstemp(tmpl);
    ASSERT_GE(fd, 0);
    ::close(fd);
    path_ = tmpl;
  }
  void TearDown() override { ::unlink(path_.c_str()); }
  void Write(const std::string& text) { std::ofstream(path_, std::ios::binary) << text; }
  std::string path_;
};

TEST_F(TokenFile, ReadsTheSecretAndDropsTheTrailingNewline) {
  Write(kToken + "\n");
  RDZV_ASSIGN(std::string t, ReadTokenFile(path_));
  EXPECT_EQ(t, kToken);
}

TEST_F(TokenFile, MissingFileNamesThePath) {
  ExpectFailure(ReadTokenFile(path_ + ".absent"), StoreErrc::kIo,
                {path_ + ".absent", "No such file or directory", "Secret mounted"});
  ExpectFailure(ReadTokenFile("/tmp"), StoreErrc::kIo, {"/tmp", "not a regular file"});
}

// A FIFO where the Secret should be is refused at once, not waited on.
TEST_F(TokenFile, FifoIsRefusedWithoutBlocking) {
  ::unlink(path_.c_str());
  ASSERT_EQ(::mkfifo(path_.c_str(), 0600), 0);
  ExpectFailure(ReadTokenFile(path_), StoreErrc::kIo, {path_, "not a regular file"});
}

TEST_F(TokenFile, ShortAndLongTokensAreRefused) {
  Write("short\n");
  ExpectFailure(ReadTokenFile(path_), StoreErrc::kInvalidArgument, {path_, "has 5 bytes", "at least 16"});
  Write(std::string(5000, 'a'));
  ExpectFailure(ReadTokenFile(path_), StoreErrc::kInvalidArgument, {"at most 1024"});
}

TEST_F(TokenFile, EnvironmentPrefersTheFile) {
  Write(kToken);
  ::setenv("AVF_TEST_TOKEN_FILE", path_.c_str(), 1);
  ::setenv("AVF_TEST_TOKEN", "from-the-variable-0123456789", 1);
  RDZV_ASSIGN(std::string from_file, TokenFromEnvironment("AVF_TEST_TOKEN_FILE", "AVF_TEST_TOKEN"));
  EXPECT_EQ(from_file, kToken);
  ::unsetenv("AVF_TEST_TOKEN_FILE");
  RDZV_ASSIGN(std::string from_var, TokenFromEnvironment("AVF_TEST_TOKEN_FILE", "AVF_TEST_TOKEN"));
  EXPECT_EQ(from_var, "from-the-variable-0123456789");
  ::setenv("AVF_TEST_TOKEN", "tiny", 1);
  ExpectFailure(TokenFromEnvironment("AVF_TEST_TOKEN_FILE", "AVF_TEST_TOKEN"), StoreErrc::kInvalidArgument,
                {"$AVF_TEST_TOKEN", "at least 16"});
  ::unsetenv("AVF_TEST_TOKEN");
  ExpectFailure(TokenFromEnvironment("AVF_TEST_TOKEN_FILE", "AVF_TEST_TOKEN"), StoreErrc::kInvalidArgument,
                {"no job token", "AVF_TEST_TOKEN_FILE", "AVF_TEST_TOKEN"});
}

// ---- message helpers and the wire format ----

TEST(RendezvousFormat, RanksKeysAndSeconds) {
  std::vector<int> ranks = {0, 1, 2, 5, 7, 8, 9};
  EXPECT_EQ(FormatRanks(ranks), "ranks 0-2, 5, 7-9");
  EXPECT_EQ(FormatRanks(std::vector<int>{3}), "rank 3");
  std::vector<int> many;
  for (int i = 0; i < 100; i += 2) many.push_back(i);
  EXPECT_EQ(FormatRanks(many, 3), "ranks 0, 2, 4 and 47 more");
  EXPECT_EQ(FormatSeconds(300ms), "0.3 s");
  EXPECT_EQ(FormatSeconds(1250ms), "1.25 s");
  EXPECT_EQ(FormatSeconds(300s), "300 s");
  EXPECT_EQ(QuoteKey(std::string("a\0b'", 4)), "'a\\x00b\\x27'");
  std::vector<std::string> keys = {"a", "b", "c"};
  EXPECT_EQ(FormatKeys(keys), "'a', 'b' and 'c'");
  EXPECT_EQ(FormatKeys(keys, 2), "'a', 'b' and 1 more");
}

TEST(RendezvousWire, FramesRoundTripAndTruncationIsCaught) {
  std::string frame = std::move(wire::Writer().U8(7).U16(0xBEEF).U32(42).I64(-5).Str("key")).Finish();
  ASSERT_EQ(wire::FrameLength(frame), frame.size() - 4);
  EXPECT_EQ(frame.substr(0, 4), std::string("\x16\0\0\0", 4));  // little-endian length: 1+2+4+8+(4+3) = 22
  wire::Reader r(std::string_view(frame).substr(4));
  EXPECT_EQ(r.U8(), 7);
  EXPECT_EQ(r.U16(), 0xBEEF);
  EXPECT_EQ(r.U32(), 42u);
  EXPECT_EQ(r.I64(), -5);
  EXPECT_EQ(r.Str(), "key");
  EXPECT_TRUE(r.ok_at_end());
  wire::Reader cut(std::string_view(frame).substr(4, 18));
  cut.U8(), cut.U16(), cut.U32(), cut.I64();
  EXPECT_EQ(cut.Str(), "");
  EXPECT_TRUE(cut.failed());
  std::string huge = std::move(wire::Writer().U32(0xFFFFFFF0u)).Finish();
  wire::Reader h(std::string_view(huge).substr(4));
  h.Str();
  EXPECT_TRUE(h.failed());  // a length beyond the bytes present: refused, nothing allocated
  EXPECT_EQ(EncodeHello(kToken, 1, 2, kPlanSha256).substr(4, 5), std::string("\x01"
                                                                             "AVFR"));
}

// ---- operations ----

TEST(RendezvousStore, SetGetAddCheckAcrossClientsInThreads) {
  constexpr int kWorld = 4;
  auto t = StartTestServer(kWorld);
  ASSERT_TRUE(t);
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int rank = 0; rank < kWorld; ++rank) {
    threads.emplace_back([&, rank] {
      auto c = StoreClient::Join(t->Options(rank, kWorld));
      if (!c) return (void)(++failures, ADD_FAILURE() << ErrText(c.takeError()));
      auto& client = **c;
      EXPECT_EQ(ErrText(client.Set(fmt::format("addr/{}", rank), fmt::format("10.0.0.{}:5000", rank))), "");
      for (int i = 0; i < 25; ++i) {
        auto v = client.Add("counter", 1);
        EXPECT_TRUE(static_cast<bool>(v)) << ErrText(v.takeError());
      }
      for (int peer = 0; peer < kWorld; ++peer) {
        auto v = client.Get(fmt::format("addr/{}", peer), 2s);
        ASSERT_TRUE(static_cast<bool>(v)) << ErrText(v.takeError());
        EXPECT_EQ(*v, fmt::format("10.0.0.{}:5000", peer));
      }
      EXPECT_EQ(ErrText(client.Barrier("counted", kWorld, 2s)), "");
      auto total = client.Add("counter", 0);
      ASSERT_TRUE(static_cast<bool>(total)) << ErrText(total.takeError());
      EXPECT_EQ(*total, 25 * kWorld);
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  RDZV_ASSIGN(auto c, StoreClient::Join(t->Options(0, kWorld)));
  std::vector<std::string> keys = {"addr/0", "addr/3", "nope"};
  RDZV_ASSIGN(auto present, c->Check(keys));
  EXPECT_EQ(present, (std::vector<bool>{true, true, false}));
  RDZV_ASSIGN(std::string counter_text, c->Get("counter", 0ms));
  EXPECT_EQ(counter_text, "100");  // counters are decimal text
  EXPECT_EQ(t->server->Stats().joined_ranks, kWorld);
}

TEST(RendezvousStore, BinaryValuesOverwritesAndLargeValues) {
  auto t = StartTestServer(1);
  ASSERT_TRUE(t);
  RDZV_ASSIGN(auto c, StoreClient::Join(t->Options(0, 1)));
  std::string id(128, '\0');
  for (size_t i = 0; i < id.size(); ++i) id[i] = static_cast<char>(i * 37);
  RDZV_OK(c->Set("nccl/id/0", id));
  RDZV_ASSIGN(std::string got, c->Get("nccl/id/0", 0ms));
  EXPECT_EQ(got, id);
  RDZV_OK(c->Set("nccl/id/0", "second"));
  RDZV_ASSIGN(got, c->Get("nccl/id/0", 0ms));
  EXPECT_EQ(got, "second");
  std::string big(3 << 20, 'z');
  big[12345] = '\0';
  RDZV_OK(c->Set("table", big));
  RDZV_ASSIGN(got, c->Get("table", 1s));
  EXPECT_EQ(got, big);
  RDZV_OK(c->Set("empty", ""));
  RDZV_ASSIGN(got, c->Get("empty", 0ms));
  EXPECT_EQ(got, "");
}

TEST(RendezvousStore, GetBlocksUntilAnotherClientSets) {
  auto t = StartTestServer(2);
  ASSERT_TRUE(t);
  RDZV_ASSIGN(auto waiter, StoreClient::Join(t->Options(1, 2)));
  RDZV_ASSIGN(auto setter, StoreClient::Join(t->Options(0, 2)));
  std::string got;
  std::thread th([&] {
    auto v = waiter->Get("nccl/id", 2s);
    if (v) got = *v;
    else ADD_FAILURE() << ErrText(v.takeError());
  });
  ASSERT_TRUE(WaitUntil([&] { return t->server->Stats().parked == 1; }));
  RDZV_OK(setter->Set("nccl/id", "the-id"));
  th.join();
  EXPECT_EQ(got, "the-id");
  EXPECT_EQ(t->server->Stats().parked, 0);
}

TEST(RendezvousStore, GetTimesOutAndTheConnectionStaysUsable) {
  auto t = StartTestServer(2);
  ASSERT_TRUE(t);
  RDZV_ASSIGN(auto c, StoreClient::Join(t->Options(1, 2)));
  auto start = Clock::now();
  ExpectFailure(c->Get("never", 200ms), StoreErrc::kTimeout,
                {"rank 1: GET 'never' on the rendezvous store at 127.0.0.1:", "key 'never' was not set within 0.2 s"});
  auto ms = MsSince(start);
  EXPECT_GE(ms, 195);
  EXPECT_LT(ms, 1500);
  RDZV_OK(c->Set("after", "1"));  // a timeout is an answer, not a broken connection
  RDZV_ASSIGN(std::string v, c->Get("after", 0ms));
  EXPECT_EQ(v, "1");
}

TEST(RendezvousStore, WaitForSeveralKeysAndItsTimeoutNamesTheMissingOnes) {
  auto t = StartTestServer(2);
  ASSERT_TRUE(t);
  RDZV_ASSIGN(auto a, StoreClient::Join(t->Options(0, 2)));
  RDZV_ASSIGN(auto b, StoreClient::Join(t->Options(1, 2)));
  std::vector<std::string> keys = {"k1", "k2", "k3"};
  std::thread th([&] { EXPECT_EQ(ErrText(a->Wait(keys, 2s)), ""); });
  ASSERT_TRUE(WaitUntil([&] { return t->server->Stats().parked == 1; }));
  for (const auto& k : keys) RDZV_OK(b->Set(k, "v"));
  th.join();
  std::vector<std::string> partly = {"k1", "x", "y"};
  ExpectFailure(a->Wait(partly, 200ms), StoreErrc::kTimeout, {"keys 'x' and 'y' (2 of 3) were not set within 0.2 s"});
}

TEST(RendezvousStore, CountersRefuseTextAndOverflow) {
  auto t = StartTestServer(1);
  ASSERT_TRUE(t);
  RDZV_ASSIGN(auto c, StoreClient::Join(t->Options(0, 1)));
  RDZV_ASSIGN(int64_t v, c->Add("n", -3));
  EXPECT_EQ(v, -3);
  RDZV_OK(c->Set("text", "hello"));
  ExpectFailure(c->Add("text", 1), StoreErrc::kNotCounter, {"key 'text' holds a 5-byte value that is not a counter"});
  RDZV_ASSIGN(v, c->Add("big", INT64_MAX));
  ExpectFailure(c->Add("big", 1), StoreErrc::kNotCounter, {"overflows a 64-bit counter"});
  ExpectFailure(c->Set("", "x"), StoreErrc::kInvalidArgument, {"empty"});
  ExpectFailure(c->Get(std::string(5000, 'k'), 0ms), StoreErrc::kInvalidArgument, {"5000 bytes", "at most 4096"});
  RDZV_ASSIGN(v, c->Add("n", 1));  // still connected after refusals
  EXPECT_EQ(v, -2);
}

TEST(RendezvousStore, BarrierIsReusableAndItsTimeoutNamesAbsentRanks) {
  constexpr int kWorld = 3;
  auto t = StartTestServer(kWorld);
  ASSERT_TRUE(t);
  std::vector<std::unique_ptr<StoreClient>> clients;
  for (int r = 0; r < kWorld; ++r) {
    RDZV_ASSIGN(auto c, StoreClient::Join(t->Options(r, kWorld)));
    clients.push_back(std::move(c));
  }
  std::atomic<int> in_round{0};
  std::vector<std::thread> threads;
  for (int r = 0; r < kWorld; ++r) {
    threads.emplace_back([&, r] {
      for (int round = 0; round < 3; ++round) {
        ++in_round;
        EXPECT_EQ(ErrText(clients[static_cast<size_t>(r)]->Barrier("step", kWorld, 2s)), "");
        EXPECT_GE(in_round.load(), (round + 1) * kWorld);  // nobody passes before all arrived
      }
    });
  }
  for (auto& th : threads) th.join();
  std::thread late([&] {
    ExpectFailure(
        clients[1]->Barrier("final", kWorld, 300ms), StoreErrc::kTimeout,
        {"rank 1: barrier 'final'", "timed out after 0.3 s", "2 of 3 participants arrived", "rank 2 never arrived"});
  });
  ExpectFailure(clients[0]->Barrier("final", kWorld, 300ms), StoreErrc::kTimeout, {"rank 2 never arrived"});
  late.join();
  ExpectFailure(clients[0]->Barrier("x", 0, 1s), StoreErrc::kInvalidArgument, {"1 to 3 participants"});
}

// ---- joining ----

TEST(RendezvousJoin, WrongTokenIsRefusedAndLogged) {
  auto t = StartTestServer(2);
  ASSERT_TRUE(t);
  auto o = t->Options(1, 2);
  o.token = "another-jobs-token-0000000";
  ExpectFailure(
      StoreClient::Join(o), StoreErrc::kBadToken,
      {"the rendezvous store at 127.0.0.1:", "rejected rank 1", "job token", "not this job's", "AVF_JOB_TOKEN"});
  EXPECT_NE(t->log.WaitFor("claiming rank 1"), "");
  EXPECT_EQ(t->server->Stats().joined_ranks, 0);
}

// The SHA-256 of the bytes "another plan": a rank that read another plan.json.
const std::string kOtherPlanSha256 = "77ddfb898d260e3b10990dcc3789ea8bd9a7aba33680543f531dc7d842f55b79";

TEST(RendezvousJoin, RanksOfTheSamePlanAreAdmitted) {
  auto t = StartTestServer(2);
  ASSERT_TRUE(t);
  RDZV_ASSIGN(auto r0, StoreClient::Join(t->Options(0, 2)));
  RDZV_ASSIGN(auto r1, StoreClient::Join(t->Options(1, 2)));
  RDZV_OK(t->server->WaitForAll(1s));
  EXPECT_EQ(t->server->Stats().rejected, 0);
}

TEST(RendezvousJoin, AnotherPlanIsRefusedNamingTheRankAndBothPlans) {
  auto t = StartTestServer(2);
  ASSERT_TRUE(t);
  RDZV_ASSIGN(auto r0, StoreClient::Join(t->Options(0, 2)));
  auto o = t->Options(1, 2);
  o.plan_sha256 = kOtherPlanSha256;
  std::string sentence = "rank 1's plan.json has SHA-256 77ddfb898d26..., rank 0's 64879f7d6b96...";
  ExpectFailure(StoreClient::Join(o), StoreErrc::kPlanMismatch,
                {"the rendezvous store at 127.0.0.1:", "rejected rank 1: ", sentence,
                 "Every pod of the job must read the same plan.json", "re-submit the job"});
  EXPECT_NE(t->log.WaitFor(sentence), "");
  EXPECT_EQ(t->server->Stats().joined_ranks, 1);
  // The others time out as they would for a rank that never came.
  ExpectFailure(r0->WaitForAll(100ms), StoreErrc::kTimeout, {"rank 1 did not join"});
  RDZV_ASSIGN(auto r1, StoreClient::Join(t->Options(1, 2)));
  RDZV_OK(t->server->WaitForAll(1s));
}

TEST(RendezvousJoin, TheTokenIsCheckedBeforeThePlan) {
  auto t = StartTestServer(2);
  ASSERT_TRUE(t);
  auto o = t->Options(1, 2);
  o.token = "another-jobs-token-0000000";
  o.plan_sha256 = kOtherPlanSha256;
  auto joined = StoreClient::Join(o);
  ASSERT_FALSE(static_cast<bool>(joined));
  Failure f = TakeFailure(joined.takeError());
  EXPECT_EQ(ErrcName(f.code), "bad-token") << f.message;
  // A peer without the token learns nothing about rank 0's plan.
  EXPECT_EQ(f.message.find("64879f7d6b96"), std::string::npos) << f.message;
  EXPECT_EQ(f.message.find("SHA-256"), std::string::npos) << f.message;
}

TEST(RendezvousJoin, APlanSha256OfTheWrongFormIsRefusedBeforeConnecting) {
  for (std::string sha :
       {std::string(), kPlanSha256.substr(1), kPlanSha256 + "0", std::string(64, 'A'), std::string(64, 'g')}) {
    auto o = ClientOptions{.port = 1, .token = kToken, .plan_sha256 = sha};
    ExpectFailure(StoreClient::Join(o), StoreErrc::kInvalidArgument,
                  {fmt::format("the plan's SHA-256 has {} bytes", sha.size()), "64 lowercase hexadecimal digits"});
    ExpectFailure(StoreServer::Start({.host = "127.0.0.1", .token = kToken, .plan_sha256 = sha}),
                  StoreErrc::kInvalidArgument, {"the store's plan_sha256", "64 lowercase hexadecimal digits"});
  }
}

TEST(RendezvousJoin, WrongWorldSizeIsRefused) {
  auto t = StartTestServer(4);
  ASSERT_TRUE(t);
  ExpectFailure(StoreClient::Join(t->Options(1, 8)), StoreErrc::kWorldSizeMismatch,
                {"rejected rank 1", "says the job has 8 ranks, but the store was started for 4", "WORLD_SIZE"});
}

TEST(RendezvousJoin, DuplicateRankIsRefusedWhileTheFirstIsConnected) {
  auto t = StartTestServer(2);
  ASSERT_TRUE(t);
  {
    RDZV_ASSIGN(auto first, StoreClient::Join(t->Options(1, 2)));
    ExpectFailure(StoreClient::Join(t->Options(1, 2)), StoreErrc::kDuplicateRank,
                  {"rank 1 has already joined from 127.0.0.1:", "still connected", "same RANK"});
    RDZV_OK(first->Set("still", "works"));
  }
  // Once the first connection is gone, the rank may join again (a restarted process).
  ASSERT_TRUE(WaitUntil([&] { return t->server->Stats().connected_ranks == 0; }));
  RDZV_ASSIGN(auto again, StoreClient::Join(t->Options(1, 2)));
  RDZV_ASSIGN(std::string v, again->Get("still", 0ms));
  EXPECT_EQ(v, "works");
}

TEST(RendezvousJoin, BadOptionsAreCaughtBeforeConnecting) {
  ClientOptions o;
  o.port = 1;
  o.token = kToken;
  o.plan_sha256 = kPlanSha256;
  o.rank = 4;
  o.world_size = 4;
  ExpectFailure(StoreClient::Join(o), StoreErrc::kInvalidArgument, {"rank 4 is out of range", "0-3"});
  o.rank = 0;
  o.port = 0;
  ExpectFailure(StoreClient::Join(o), StoreErrc::kInvalidArgument, {"MASTER_PORT"});
  o.port = 1;
  o.token = "x";
  ExpectFailure(StoreClient::Join(o), StoreErrc::kInvalidArgument, {"job token", "at least 16"});
  ServerOptions s;
  s.token = kToken;
  s.plan_sha256 = kPlanSha256;
  s.world_size = 0;
  ExpectFailure(StoreServer::Start(s), StoreErrc::kInvalidArgument, {"world size", "not 0"});
}

// ---- ranks that never come, unreachable stores, shutdown ----

TEST(RendezvousJoin, WaitForAllNamesTheRanksThatNeverCame) {
  auto t = StartTestServer(4);
  ASSERT_TRUE(t);
  RDZV_ASSIGN(auto r0, StoreClient::Join(t->Options(0, 4)));
  RDZV_ASSIGN(auto r2, StoreClient::Join(t->Options(2, 4)));
  auto start = Clock::now();
  ExpectFailure(t->server->WaitForAll(200ms), StoreErrc::kTimeout,
                {"ranks 1, 3 did not join the rendezvous store", "within 0.2 s (2 of 4 joined)"});
  EXPECT_GE(MsSince(start), 195);
  ExpectFailure(r2->WaitForAll(200ms), StoreErrc::kTimeout,
                {"rank 2: WAIT_ALL", "ranks 1, 3 did not join within 0.2 s (2 of 4 joined)"});
  // Everyone arrives: both waits succeed.
  std::thread waiter([&] { EXPECT_EQ(ErrText(r0->WaitForAll(2s)), ""); });
  RDZV_ASSIGN(auto r1, StoreClient::Join(t->Options(1, 4)));
  RDZV_ASSIGN(auto r3, StoreClient::Join(t->Options(3, 4)));
  waiter.join();
  RDZV_OK(t->server->WaitForAll(0ms));
}

TEST(RendezvousConnect, UnreachableStoreFailsAtTheDeadline) {
  // A bound but not listening socket: connections are refused, and nobody else can take the port.
  net::Fd holder(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(holder.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  socklen_t len = sizeof a;
  ::getsockname(holder.get(), reinterpret_cast<sockaddr*>(&a), &len);
  ClientOptions o;
  o.port = ntohs(a.sin_port);
  o.token = kToken;
  o.plan_sha256 = kPlanSha256;
  o.connect_timeout = 300ms;
  auto start = Clock::now();
  ExpectFailure(StoreClient::Join(o), StoreErrc::kUnreachable,
                {fmt::format("cannot reach the rendezvous store at 127.0.0.1:{} after 0.3 s", o.port), "attempts",
                 "Connection refused", "MASTER_ADDR"});
  auto ms = MsSince(start);
  EXPECT_GE(ms, 295);
  EXPECT_LT(ms, 1000);
}

TEST(RendezvousConnect, RetriesUntilTheStoreStarts) {
  // Hold the port (SO_REUSEADDR, not listening) so the server can bind it later.
  net::Fd holder(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  int one = 1;
  ::setsockopt(holder.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(holder.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  socklen_t len = sizeof a;
  ::getsockname(holder.get(), reinterpret_cast<sockaddr*>(&a), &len);
  uint16_t port = ntohs(a.sin_port);
  std::unique_ptr<TestServer> t;
  std::thread starter([&] {
    std::this_thread::sleep_for(150ms);
    t = StartTestServer(1, [&](ServerOptions& o) { o.port = port; });
  });
  ClientOptions o;
  o.port = port;
  o.token = kToken;
  o.plan_sha256 = kPlanSha256;
  o.connect_timeout = 3s;
  auto c = StoreClient::Join(o);
  starter.join();
  ASSERT_TRUE(static_cast<bool>(c)) << ErrText(c.takeError());
  RDZV_OK((*c)->Set("up", "1"));
}

TEST(RendezvousShutdown, ClientBlockedInGetGetsAnErrorNotAHang) {
  auto t = StartTestServer(2);
  ASSERT_TRUE(t);
  RDZV_ASSIGN(auto c, StoreClient::Join(t->Options(1, 2)));
  std::thread th([&] {
    auto start = Clock::now();
    ExpectFailure(c->Get("never", 5s), StoreErrc::kShutdown, {"rank 1: GET 'never'", "the store shut down"});
    EXPECT_LT(MsSince(start), 2000);
  });
  ASSERT_TRUE(WaitUntil([&] { return t->server->Stats().parked == 1; }));
  t->server->Shutdown();
  th.join();
  ExpectFailure(c->Set("k", "v"), StoreErrc::kShutdown, {"failed earlier", "the store shut down"});
  t->server->Shutdown();  // idempotent
}

TEST(RendezvousShutdown, DestroyingTheServerClosesIdleClients) {
  auto t = StartTestServer(2);
  ASSERT_TRUE(t);
  RDZV_ASSIGN(auto c, StoreClient::Join(t->Options(0, 2)));
  ExpectFailure(t->server->WaitForAll(10ms), StoreErrc::kTimeout, {"rank 1"});
  t->server.reset();
  ExpectFailure(c->Get("k", 1s), StoreErrc::kConnectionLost, {"rank 0: GET 'k' on the rendezvous store"});
}

TEST(RendezvousStore, WorksOverIpv6Loopback) {
  auto t = std::make_unique<TestServer>();
  ServerOptions so;
  so.host = "::1";
  so.token = kToken;
  so.plan_sha256 = kPlanSha256;
  auto s = StoreServer::Start(so);
  if (!s) GTEST_SKIP() << "no IPv6 loopback here: " << ErrText(s.takeError());
  ClientOptions o;
  o.host = "::1";
  o.port = (*s)->port();
  o.token = kToken;
  o.plan_sha256 = kPlanSha256;
  o.connect_timeout = 1s;
  RDZV_ASSIGN(auto c, StoreClient::Join(o));
  EXPECT_EQ(c->where(), fmt::format("[::1]:{}", o.port));
  RDZV_OK(c->Set("v6", "yes"));
}

TEST(RendezvousStore, WildcardListenerTakesLoopbackClients) {
  ServerOptions so;  // empty host: every interface
  so.token = kToken;
  so.plan_sha256 = kPlanSha256;
  RDZV_ASSIGN(auto s, StoreServer::Start(so));
  ClientOptions o;
  o.port = s->port();
  o.token = kToken;
  o.plan_sha256 = kPlanSha256;
  o.connect_timeout = 1s;
  RDZV_ASSIGN(auto c, StoreClient::Join(o));
  RDZV_OK(s->WaitForAll(1s));
}

}  // namespace
}  // namespace avf::rendezvous::testing

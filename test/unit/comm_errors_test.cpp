// The communicators' own errors (comm/errors.h): a store failure met on the
// way becomes a CommError with the store's sentence and the nearest code, and
// a mesh refusal travels as its CommErrc byte.
#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <string>

#include "comm/errors.h"
#include "comm/tcp_communicator.h"
#include "forked_ranks.h"
#include "rendezvous/errors.h"
#include "rendezvous/store.h"

namespace avf::comm {
namespace {

using namespace std::chrono_literals;
using rendezvous::StoreErrc;

TEST(CommErrors, StoreFailuresKeepTheirSentenceUnderTheNearestCode) {
  const std::pair<StoreErrc, CommErrc> kMap[] = {
      {StoreErrc::kTimeout, CommErrc::kTimeout},
      {StoreErrc::kUnreachable, CommErrc::kUnreachable},
      {StoreErrc::kConnectionLost, CommErrc::kConnectionLost},
      {StoreErrc::kShutdown, CommErrc::kConnectionLost},
      {StoreErrc::kBadMagic, CommErrc::kBadMagic},
      {StoreErrc::kBadVersion, CommErrc::kBadVersion},
      {StoreErrc::kBadToken, CommErrc::kBadToken},
      {StoreErrc::kWorldSizeMismatch, CommErrc::kInvalidArgument},
      {StoreErrc::kRankOutOfRange, CommErrc::kRankOutOfRange},
      {StoreErrc::kDuplicateRank, CommErrc::kDuplicateRank},
      {StoreErrc::kPlanMismatch, CommErrc::kInvalidArgument},
      {StoreErrc::kMalformed, CommErrc::kMalformed},
      {StoreErrc::kFrameTooLarge, CommErrc::kMalformed},
      {StoreErrc::kInvalidArgument, CommErrc::kInvalidArgument},
      {StoreErrc::kNotCounter, CommErrc::kInvalidArgument},
      {StoreErrc::kIo, CommErrc::kIo},
  };
  for (auto [store, comm] : kMap) {
    llvm::Error e = AsCommError(rendezvous::MakeError(store, "the store said no"));
    ASSERT_TRUE(e.isA<CommError>()) << rendezvous::ErrcName(store);
    Failure f = TakeFailure(std::move(e));
    EXPECT_EQ(f.code, comm) << rendezvous::ErrcName(store) << " became " << ErrcName(f.code);
    EXPECT_EQ(f.message, "the store said no");
  }
  Failure wrapped = TakeFailure(Wrap(rendezvous::MakeError(StoreErrc::kTimeout, "key 'a' was not set"), "rank 1"));
  EXPECT_EQ(wrapped.code, CommErrc::kTimeout);
  EXPECT_EQ(wrapped.message, "rank 1: key 'a' was not set");
  EXPECT_FALSE(AsCommError(llvm::Error::success()));
  Failure foreign = TakeFailure(llvm::createStringError(llvm::inconvertibleErrorCode(), "disk full"));
  EXPECT_EQ(foreign.code, CommErrc::kIo);
  EXPECT_EQ(foreign.message, "disk full");
}

TEST(CommErrors, EveryCodeHasItsOwnName) {
  std::set<std::string_view> names;
  for (uint8_t c = 1; c <= kLastErrc; ++c) names.insert(ErrcName(static_cast<CommErrc>(c)));
  EXPECT_EQ(names.size(), kLastErrc);
  EXPECT_EQ(names.count("unknown"), 0u);
}

// Rank 1 of 2 whose rank 0 never comes: the store's timeout on rank 0's
// address reaches the caller as a CommError, not a StoreError.
TEST(CommErrors, AStoreTimeoutDuringCreateIsACommError) {
  rendezvous::ServerOptions so;
  so.host = "127.0.0.1";
  so.world_size = 2;
  so.token = testing::kToken;
  so.plan_sha256 = testing::kPlanSha256;
  auto server = rendezvous::StoreServer::Start(std::move(so));
  ASSERT_TRUE(static_cast<bool>(server)) << testing::Text(server.takeError());
  auto store = rendezvous::StoreClient::Join({.port = (*server)->port(),
                                              .rank = 1,
                                              .world_size = 2,
                                              .token = testing::kToken,
                                              .plan_sha256 = testing::kPlanSha256,
                                              .connect_timeout = 3s,
                                              .io_timeout = 3s});
  ASSERT_TRUE(static_cast<bool>(store)) << testing::Text(store.takeError());
  TcpOptions o;
  o.store = std::shared_ptr<rendezvous::StoreClient>(std::move(*store));
  o.id = "lonely";
  o.rank = 1;
  o.size = 2;
  o.token = testing::kToken;
  o.setup_timeout = 300ms;
  auto made = TcpCommunicator::Create(std::move(o));
  ASSERT_FALSE(static_cast<bool>(made));
  llvm::Error e = made.takeError();
  ASSERT_TRUE(e.isA<CommError>());
  Failure f = TakeFailure(std::move(e));
  EXPECT_EQ(f.code, CommErrc::kTimeout) << ErrcName(f.code);
  EXPECT_EQ(f.message.rfind("rank 1 of communicator 'lonely' has no address for rank 0: ", 0), 0u) << f.message;
}

}  // namespace
}  // namespace avf::comm

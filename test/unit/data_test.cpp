// Token shards: the header round-trips, llm.c's headers are read, every
// malformed file is an error naming it, the shards' sizes come from their
// headers, and the order of training sequences depends on the job only.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <numeric>

#include "data/batches.h"
#include "data/shard_format.h"
#include "data/shard_writer.h"
#include "data/token_reader.h"
#include "data/tokenizer.h"
#include "temp_dir.h"

namespace avf::data {
namespace {

auto Message(llvm::Error e) -> std::string { return llvm::toString(std::move(e)); }

class Shards : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_FALSE(dir_.empty()); }

  // Dataset tokens 0..n-1 (token i has value i % 60000 + 7) in shards of the given sizes.
  auto Write(const std::vector<int64_t>& sizes, uint32_t width) -> DatasetLayout {
    DatasetLayout l{dir_, static_cast<int64_t>(sizes.size()), width, 60007, {}};
    int64_t first = 0;
    for (size_t s = 0; s < sizes.size(); ++s) {
      std::vector<uint32_t> v(sizes[s]);
      for (int64_t i = 0; i < sizes[s]; ++i) v[i] = static_cast<uint32_t>((first + i) % 60000 + 7);
      EXPECT_FALSE(WriteShard(ShardPath(l, static_cast<int64_t>(s)), width, v));
      first += sizes[s];
    }
    return l;
  }
  auto Open(const DatasetLayout& l) -> std::unique_ptr<TokenReader> {
    auto reader = TokenReader::Open(l);
    EXPECT_TRUE(bool(reader)) << Message(reader.takeError());
    return reader ? std::move(*reader) : nullptr;
  }
  avf::testing::TempDir temp_{"avf-data-test"};
  std::string dir_ = temp_.path();
};

TEST(ShardFormat, HeaderRoundTrip) {
  auto b = EncodeHeader(4, 5'000'000'000ull);  // more than 2^32: the 64-bit count
  EXPECT_EQ(b[0], 'A');
  EXPECT_EQ(b[3], 'T');
  auto h = DecodeHeader(b, kHeaderBytes + 4 * 5'000'000'000ull, "x.bin");
  ASSERT_TRUE(bool(h)) << Message(h.takeError());
  EXPECT_EQ(h->kind, HeaderKind::Aviflow);
  EXPECT_EQ(h->token_bytes, 4u);
  EXPECT_EQ(h->tokens, 5'000'000'000ull);
  EXPECT_EQ(ShardFileName(42), "shard_000042.bin");
  EXPECT_EQ(ShardFileName(1234567), "shard_1234567.bin");
}

TEST(ShardFormat, LlmcHeaders) {
  std::array<uint8_t, kHeaderBytes> b{};
  uint32_t words[3] = {kLlmcMagicU16, kLlmcVersionU16, 100};
  std::memcpy(b.data(), words, sizeof(words));
  auto h = DecodeHeader(b, kHeaderBytes + 200, "fineweb_train_000001.bin");
  ASSERT_TRUE(bool(h)) << Message(h.takeError());
  EXPECT_EQ(h->kind, HeaderKind::Llmc);
  EXPECT_EQ(h->token_bytes, 2u);
  EXPECT_EQ(h->tokens, 100u);
  uint32_t llama[3] = {kLlmcMagicU32, kLlmcVersionU32, 10};
  std::memcpy(b.data(), llama, sizeof(llama));
  h = DecodeHeader(b, kHeaderBytes + 40, "x");
  ASSERT_TRUE(bool(h));
  EXPECT_EQ(h->token_bytes, 4u);
}

TEST(ShardFormat, MalformedHeaders) {
  std::array<uint8_t, kHeaderBytes> junk{};
  junk.fill(0x41);
  EXPECT_NE(Message(DecodeHeader(junk, 4096, "j.bin").takeError()).find("j.bin: not a token shard"), std::string::npos);
  auto good = EncodeHeader(2, 10);
  EXPECT_NE(Message(DecodeHeader(good, 100, "s.bin").takeError()).find("shorter than the 1024-byte shard header"),
            std::string::npos);
  EXPECT_NE(Message(DecodeHeader(good, kHeaderBytes + 19, "s.bin").takeError()).find("truncated"), std::string::npos);
  EXPECT_NE(Message(DecodeHeader(good, kHeaderBytes + 21, "s.bin").takeError()).find("which need 20 bytes"),
            std::string::npos);
  auto huge = EncodeHeader(4, ~0ull);  // a count whose byte size overflows 64 bits
  EXPECT_NE(Message(DecodeHeader(huge, kHeaderBytes + 8, "h.bin").takeError()).find("more bytes than that"),
            std::string::npos);
  auto width = EncodeHeader(3, 1);
  EXPECT_NE(Message(DecodeHeader(width, kHeaderBytes + 3, "w.bin").takeError()).find("tokens of 3 bytes"),
            std::string::npos);
  auto version = EncodeHeader(2, 1);
  version[4] = 9;
  EXPECT_NE(Message(DecodeHeader(version, kHeaderBytes + 2, "v.bin").takeError()).find("version 9"), std::string::npos);
}

// The shards' sizes come from their headers, not from an even split of a
// declared total: here 3, 5 and 2 tokens.
TEST_F(Shards, SizesFromTheHeaders) {
  DatasetLayout l = Write({3, 5, 2}, 2);
  std::unique_ptr<TokenReader> reader = Open(l);
  ASSERT_TRUE(reader);
  EXPECT_EQ(reader->tokens(), 10);
  EXPECT_EQ(reader->Locate(2), (std::pair<int64_t, int64_t>{0, 2}));
  EXPECT_EQ(reader->Locate(3), (std::pair<int64_t, int64_t>{1, 0}));
  EXPECT_EQ(reader->Locate(9), (std::pair<int64_t, int64_t>{2, 1}));
  std::vector<uint32_t> got;
  ASSERT_FALSE(reader->Read(2, 7, got));  // tokens 2..8: shards 0, 1 and 2
  EXPECT_EQ(got, (std::vector<uint32_t>{9, 10, 11, 12, 13, 14, 15}));
  EXPECT_EQ(Message(reader->Read(5, 6, got)), "tokens 5..10 are outside the dataset's 10 tokens");
}

// Sequence j is tokens [jT, jT + T]; global batch b holds G consecutive
// sequences; a data rank's share is one contiguous run, its micro-batches in
// order; every epoch reads the same batches, the tail that fills no global
// batch is left out.
TEST_F(Shards, TheOrderIsAFunctionOfTheJob) {
  DatasetLayout l = Write({9, 8, 9}, 2);  // 26 tokens: 8 sequences of T = 3
  auto order = SequenceOrder::Make(26, 3, 3);
  ASSERT_TRUE(bool(order)) << Message(order.takeError());
  EXPECT_EQ(order->sequences(), 8);
  EXPECT_EQ(order->batches_per_epoch(), 2);  // sequences 6 and 7 fill no global batch
  EXPECT_EQ(order->epoch(5), 2);
  EXPECT_EQ(order->first_sequence(5), 3);
  // One rank with micro-batches of 1 and three ranks of one sequence each
  // read the same sequences of global batch 3 (the second of epoch 1).
  BatchLoader whole(Open(l), *order, {0, 3});
  std::vector<Batch> all;
  ASSERT_FALSE(whole.Load(3, 1, all));
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].inputs, (std::vector<uint32_t>{16, 17, 18}));
  EXPECT_EQ(all[0].targets, (std::vector<uint32_t>{17, 18, 19}));
  EXPECT_EQ(all[2].targets, (std::vector<uint32_t>{23, 24, 25}));
  for (int64_t d = 0; d < 3; ++d) {
    BatchLoader rank(Open(l), *order, {d, 1});
    std::vector<Batch> mine;
    ASSERT_FALSE(rank.Load(3, 1, mine));
    ASSERT_EQ(mine.size(), 1u);
    EXPECT_EQ(mine[0].inputs, all[static_cast<size_t>(d)].inputs);
    EXPECT_EQ(mine[0].targets, all[static_cast<size_t>(d)].targets);
  }
  ASSERT_FALSE(whole.Load(1, 3, all));  // one micro-batch of 3 sequences: the same tokens
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].inputs, (std::vector<uint32_t>{16, 17, 18, 19, 20, 21, 22, 23, 24}));
  EXPECT_EQ(Message(SequenceOrder::Make(9, 3, 3).takeError()),
            "the dataset's 9 tokens hold 2 sequences of seq_len + 1 = 4 tokens, fewer than one global batch of 3");
}

TEST_F(Shards, WideTokensAndTheWholeDataset) {
  DatasetLayout l = Write({142, 142, 142, 142, 142, 142, 148}, 4);
  std::unique_ptr<TokenReader> reader = Open(l);
  ASSERT_TRUE(reader);
  std::vector<uint32_t> got;
  ASSERT_FALSE(reader->Read(0, 1000, got));
  std::vector<uint32_t> want(1000);
  std::iota(want.begin(), want.end(), 7u);
  EXPECT_EQ(got, want);
}

TEST_F(Shards, EveryShardIsCheckedAtOpen) {
  DatasetLayout l = Write({3, 3, 4}, 2);
  std::remove(ShardPath(l, 2).c_str());
  auto missing = TokenReader::Open(l);
  ASSERT_FALSE(bool(missing));
  EXPECT_NE(Message(missing.takeError()).find("shard_000002.bin: cannot open shard 2 of 3"), std::string::npos);
  // A shard whose size is not its header's count.
  ASSERT_FALSE(WriteShard(ShardPath(l, 2), 2, {1, 2, 3}));
  ASSERT_EQ(truncate(ShardPath(l, 2).c_str(), 1024 + 5), 0);
  EXPECT_FALSE(bool(TokenReader::Open(l)));
  // Another token width.
  ASSERT_FALSE(WriteShard(ShardPath(l, 2), 4, {1, 2, 3, 4}));
  auto width = TokenReader::Open(l);
  ASSERT_FALSE(bool(width));
  EXPECT_NE(Message(width.takeError()).find("4-byte tokens, but the plan's dataset has 2-byte tokens"),
            std::string::npos);
  // A directory where a shard should be.
  std::remove(ShardPath(l, 2).c_str());
  ASSERT_EQ(mkdir(ShardPath(l, 2).c_str(), 0700), 0);
  auto dir = TokenReader::Open(l);
  ASSERT_FALSE(bool(dir));
  EXPECT_NE(Message(dir.takeError()).find("it is a directory, not a regular file"), std::string::npos);
}

// A shard replaced while training (another size than at the start) stops the
// run instead of reading other tokens than the order says.
TEST_F(Shards, AShardChangedWhileTraining) {
  DatasetLayout l = Write({3, 3, 4}, 2);
  std::unique_ptr<TokenReader> reader = Open(l);
  ASSERT_TRUE(reader);
  ASSERT_FALSE(WriteShard(ShardPath(l, 1), 2, {1, 2, 3, 4, 5}));
  std::vector<uint32_t> got;
  EXPECT_EQ(Message(reader->Read(2, 3, got)),
            ShardPath(l, 1) + ": 1034 bytes now, 1030 when training started; the dataset changed while training");
}

// A FIFO in place of a shard is refused at once: opening it must not wait
// for a writer that never comes.
TEST_F(Shards, FifoShardIsRefusedWithoutBlocking) {
  DatasetLayout l = Write({3, 3, 4}, 2);
  std::remove(ShardPath(l, 1).c_str());
  ASSERT_EQ(mkfifo(ShardPath(l, 1).c_str(), 0600), 0);
  auto fifo = TokenReader::Open(l);
  ASSERT_FALSE(bool(fifo));
  EXPECT_EQ(Message(fifo.takeError()),
            ShardPath(l, 1) + ": cannot open shard 1 of 3: it is a FIFO (named pipe), not a regular file");
}

// Every token handed out is below the vocabulary; the first one that is not
// is named with its shard, index and byte offset.
TEST_F(Shards, TokenOutsideTheVocabularyIsNamed) {
  DatasetLayout l = Write({3, 3, 4}, 2);  // values 7..16; shard 1 holds dataset tokens 3..5
  ASSERT_FALSE(WriteShard(ShardPath(l, 1), 2, {10, 11, 12}));
  l.vocab = 12;
  std::unique_ptr<TokenReader> reader = Open(l);
  ASSERT_TRUE(reader);
  std::vector<uint32_t> out;
  ASSERT_FALSE(reader->Read(0, 5, out));  // tokens 0..4: 7, 8, 9, 10, 11
  EXPECT_EQ(Message(reader->Read(5, 1, out)),
            ShardPath(l, 1) +
                ": token 2 of shard 1 (byte offset 1028) is 12, not below the model's vocabulary of 12; "
                "the data was tokenized for another vocabulary");
  l.vocab = 0;
  EXPECT_NE(Message(TokenReader::Open(l).takeError()).find("for a vocabulary of 0 cannot be read"), std::string::npos);
}

TEST_F(Shards, BadRequests) {
  EXPECT_FALSE(bool(TokenReader::Open({dir_, 0, 2, 512, {}})));
  EXPECT_FALSE(bool(TokenReader::Open({dir_, 3, 3, 512, {}})));
  EXPECT_NE(Message(WriteShard(dir_ + "/big.bin", 2, {70000})).find("does not fit 2 bytes"), std::string::npos);
  EXPECT_NE(Message(WriteShard(dir_ + "/no/such/dir.bin", 2, {1})).find("cannot write"), std::string::npos);
}

constexpr std::string_view kText =
    "the cat sat on the mat. the cat ate the rat. a rat sat on a mat; the mat was flat.\n"
    "Füße über Straßen — naïve café, 東京 and emoji 🙂 stay bytes.  Two  spaces.";

TEST(Tokenizer, ByteLevelRoundTrip) {
  Tokenizer t = Tokenizer::ByteLevel();
  EXPECT_EQ(t.vocab_size(), 256u);
  std::vector<uint32_t> ids = t.Encode(kText);
  EXPECT_EQ(ids.size(), kText.size());
  EXPECT_EQ(t.Decode(ids), kText);
  EXPECT_TRUE(t.Encode("").empty());
}

TEST(Tokenizer, TrainedBpeCompressesAndRoundTrips) {
  Tokenizer t = Tokenizer::Train(kText, 300);
  EXPECT_GT(t.vocab_size(), 256u);
  EXPECT_LE(t.vocab_size(), 300u);
  std::vector<uint32_t> ids = t.Encode(kText);
  EXPECT_LT(ids.size(), kText.size() * 3 / 4) << "merges should shorten the text";
  EXPECT_EQ(t.Decode(ids), kText);
  for (uint32_t id : ids) EXPECT_LT(id, t.vocab_size());
  // Text the tokenizer never saw still round-trips (bytes are always there).
  std::string unseen = "zebra quartz \x01\xff";
  EXPECT_EQ(t.Decode(t.Encode(unseen)), unseen);
  // Deterministic, and the merges are the most frequent pairs: " t" + "h" ... appear early.
  EXPECT_EQ(Tokenizer::Train(kText, 300).merges(), t.merges());
  EXPECT_EQ(t.Decode({t.merges()[0].first, t.merges()[0].second}).size(), 2u);
}

TEST(Tokenizer, StopsWhenNoPairRepeats) {
  Tokenizer t = Tokenizer::Train("abcdefg", 1000);
  EXPECT_EQ(t.vocab_size(), 256u);
}

TEST(Tokenizer, Words) {
  auto w = SplitWords("a bc  d");
  ASSERT_EQ(w.size(), 3u);
  EXPECT_EQ(w[0], "a");
  EXPECT_EQ(w[1], " bc");
  EXPECT_EQ(w[2], "  d");
}

TEST(Tokenizer, JsonRoundTripAndErrors) {
  Tokenizer t = Tokenizer::Train(kText, 280);
  auto back = Tokenizer::FromJson(t.ToJson());
  ASSERT_TRUE(bool(back)) << Message(back.takeError());
  EXPECT_EQ(back->merges(), t.merges());
  EXPECT_EQ(back->Encode(kText), t.Encode(kText));
  EXPECT_NE(Message(Tokenizer::FromJson("{").takeError()).find("not JSON"), std::string::npos);
  EXPECT_NE(Message(Tokenizer::FromJson(R"({"format":"x"})").takeError()).find("not an aviflow-bpe"),
            std::string::npos);
  EXPECT_NE(Message(Tokenizer::FromJson(R"({"format":"aviflow-bpe","version":1,"merges":[[1,300]]})").takeError())
                .find("merge 0 is not a pair of earlier ids"),
            std::string::npos);
  EXPECT_FALSE(bool(Tokenizer::FromJson(R"({"format":"aviflow-bpe","version":2,"merges":[]})")));
}

}  // namespace
}  // namespace avf::data

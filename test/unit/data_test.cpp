// Token shards: the header round-trips, llm.c's headers are read, every
// malformed file is an error naming it, and the reader returns exactly the
// plan's slice of the dataset, across shard boundaries and epochs.
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

  // Dataset tokens 0..tokens-1 (token i has value i % 60000 + 7) in `shards` files.
  auto Write(int64_t tokens, int64_t shards, uint32_t width) -> DatasetLayout {
    DatasetLayout l{dir_, tokens, shards, width, 60007};
    int64_t per = tokens / shards;
    for (int64_t s = 0; s < shards; ++s) {
      int64_t n = s == shards - 1 ? tokens - per * (shards - 1) : per;
      std::vector<uint32_t> v(n);
      for (int64_t i = 0; i < n; ++i) v[i] = static_cast<uint32_t>((s * per + i) % 60000 + 7);
      EXPECT_FALSE(WriteShard(ShardPath(l, s), width, v));
    }
    return l;
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

TEST_F(Shards, SliceAcrossShardsAndEpochs) {
  DatasetLayout l = Write(10, 3, 2);  // shards of 3, 3 and 4 tokens
  EXPECT_EQ(TokenReader::Locate(l, 2), (std::pair<int64_t, int64_t>{0, 2}));
  EXPECT_EQ(TokenReader::Locate(l, 3), (std::pair<int64_t, int64_t>{1, 0}));
  EXPECT_EQ(TokenReader::Locate(l, 9), (std::pair<int64_t, int64_t>{2, 3}));
  auto reader = TokenReader::Open(l, {2, 6});  // tokens 2..7: shards 0, 1 and 2
  ASSERT_TRUE(bool(reader)) << Message(reader.takeError());
  std::vector<uint32_t> got;
  ASSERT_FALSE((*reader)->Read(4, got));
  EXPECT_EQ(got, (std::vector<uint32_t>{9, 10, 11, 12}));
  EXPECT_EQ((*reader)->position(), 4);
  got.clear();
  ASSERT_FALSE((*reader)->Read(5, got));  // 2 to the slice's end, then 3 from its start
  EXPECT_EQ(got, (std::vector<uint32_t>{13, 14, 9, 10, 11}));
  EXPECT_EQ((*reader)->epoch(), 1);
  EXPECT_EQ((*reader)->position(), 3);
  ASSERT_FALSE((*reader)->Seek(1, 0));
  got.clear();
  ASSERT_FALSE((*reader)->Read(2, got));
  EXPECT_EQ(got, (std::vector<uint32_t>{10, 11}));
  EXPECT_TRUE(bool((*reader)->Seek(6, 0)));
}

// Targets are the inputs shifted by one, batches follow each other without a
// gap, and a loader resumed at a saved position gives the same batches.
TEST_F(Shards, BatchesAndResume) {
  DatasetLayout l = Write(20, 3, 2);                                                   // values 7..26
  auto open = [&] { return BatchLoader(std::move(*TokenReader::Open(l, {4, 10}))); };  // values 11..20
  BatchLoader loader = open();
  Batch b;
  ASSERT_FALSE(loader.Next(2, 2, b));
  EXPECT_EQ(b.inputs, (std::vector<uint32_t>{11, 12, 13, 14}));
  EXPECT_EQ(b.targets, (std::vector<uint32_t>{12, 13, 14, 15}));
  BatchLoader::Position saved = loader.position();
  EXPECT_EQ(saved.position, 4);
  std::vector<Batch> rest(4);
  for (Batch& r : rest) ASSERT_FALSE(loader.Next(1, 3, r));
  EXPECT_EQ(rest[0].inputs, (std::vector<uint32_t>{15, 16, 17}));
  EXPECT_EQ(rest[1].inputs, (std::vector<uint32_t>{18, 19, 20}));
  EXPECT_EQ(rest[1].targets, (std::vector<uint32_t>{19, 20, 11}));  // the slice wraps: the next epoch
  BatchLoader::Position wrapped = loader.position();
  BatchLoader again = open();
  ASSERT_FALSE(again.Seek(saved));
  for (const Batch& r : rest) {
    Batch x;
    ASSERT_FALSE(again.Next(1, 3, x));
    EXPECT_EQ(x.inputs, r.inputs);
    EXPECT_EQ(x.targets, r.targets);
  }
  EXPECT_EQ(again.position().position, wrapped.position);
  EXPECT_EQ(again.position().epoch, wrapped.epoch);
}

TEST_F(Shards, WideTokensAndTheWholeDataset) {
  DatasetLayout l = Write(1000, 7, 4);
  auto reader = TokenReader::Open(l, {0, 1000});
  ASSERT_TRUE(bool(reader)) << Message(reader.takeError());
  std::vector<uint32_t> got;
  ASSERT_FALSE((*reader)->Read(1000, got));
  std::vector<uint32_t> want(1000);
  std::iota(want.begin(), want.end(), 7u);
  EXPECT_EQ(got, want);
}

TEST_F(Shards, EveryShardOfTheSliceIsChecked) {
  DatasetLayout l = Write(10, 3, 2);
  // Only the shards the slice touches are opened: shard 2 may be missing for tokens 0..5.
  std::remove(ShardPath(l, 2).c_str());
  EXPECT_TRUE(bool(TokenReader::Open(l, {0, 6})));
  auto missing = TokenReader::Open(l, {4, 6});
  ASSERT_FALSE(bool(missing));
  EXPECT_NE(Message(missing.takeError()).find("shard_000002.bin: cannot open shard 2 of 3"), std::string::npos);
  // A shard with another token count than the plan gives it.
  ASSERT_FALSE(WriteShard(ShardPath(l, 2), 2, {1, 2, 3}));
  auto count = TokenReader::Open(l, {0, 10});
  ASSERT_FALSE(bool(count));
  EXPECT_NE(Message(count.takeError()).find("3 tokens, but the plan gives shard 2 4 tokens (10 in 3 shards)"),
            std::string::npos);
  // Another token width.
  ASSERT_FALSE(WriteShard(ShardPath(l, 2), 4, {1, 2, 3, 4}));
  auto width = TokenReader::Open(l, {0, 10});
  ASSERT_FALSE(bool(width));
  EXPECT_NE(Message(width.takeError()).find("4-byte tokens, but the plan's dataset has 2-byte tokens"),
            std::string::npos);
  // A directory where a shard should be.
  std::remove(ShardPath(l, 2).c_str());
  ASSERT_EQ(mkdir(ShardPath(l, 2).c_str(), 0700), 0);
  auto dir = TokenReader::Open(l, {0, 10});
  ASSERT_FALSE(bool(dir));
  EXPECT_NE(Message(dir.takeError()).find("it is a directory, not a regular file"), std::string::npos);
}

// A FIFO in place of a shard is refused at once: opening it must not wait
// for a writer that never comes.
TEST_F(Shards, FifoShardIsRefusedWithoutBlocking) {
  DatasetLayout l = Write(10, 3, 2);
  std::remove(ShardPath(l, 1).c_str());
  ASSERT_EQ(mkfifo(ShardPath(l, 1).c_str(), 0600), 0);
  auto fifo = TokenReader::Open(l, {0, 10});
  ASSERT_FALSE(bool(fifo));
  EXPECT_EQ(Message(fifo.takeError()),
            ShardPath(l, 1) + ": cannot open shard 1 of 3: it is a FIFO (named pipe), not a regular file");
}

// Every token handed out is below the vocabulary; the first one that is not
// is named with its shard, index and byte offset.
TEST_F(Shards, TokenOutsideTheVocabularyIsNamed) {
  DatasetLayout l = Write(10, 3, 2);  // values 7..16; shard 1 holds dataset tokens 3..5
  ASSERT_FALSE(WriteShard(ShardPath(l, 1), 2, {10, 11, 12}));
  l.vocab = 12;
  auto reader = TokenReader::Open(l, {0, 10});
  ASSERT_TRUE(bool(reader)) << Message(reader.takeError());
  std::vector<uint32_t> out;
  ASSERT_FALSE((*reader)->Read(5, out));  // tokens 0..4: 7, 8, 9, 10, 11
  EXPECT_EQ(Message((*reader)->Read(1, out)),
            ShardPath(l, 1) +
                ": token 2 of shard 1 (byte offset 1028) is 12, not below the model's vocabulary of 12; "
                "the data was tokenized for another vocabulary");
  l.vocab = 0;
  EXPECT_NE(Message(TokenReader::Open(l, {0, 10}).takeError()).find("for a vocabulary of 0 cannot be read"),
            std::string::npos);
}

TEST_F(Shards, BadRequests) {
  DatasetLayout l = Write(10, 3, 2);
  EXPECT_NE(Message(TokenReader::Open(l, {5, 6}).takeError()).find("outside the dataset's 10 tokens"),
            std::string::npos);
  EXPECT_FALSE(bool(TokenReader::Open(l, {0, 0})));
  EXPECT_FALSE(bool(TokenReader::Open({dir_, 2, 3, 2, 512}, {0, 1})));  // fewer tokens than shards
  EXPECT_FALSE(bool(TokenReader::Open({dir_, 10, 3, 3, 512}, {0, 1})));
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

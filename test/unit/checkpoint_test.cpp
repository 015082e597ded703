// Checkpoints by global tensor: every layout's ranks save their state (a
// tensor shard, a pipeline stage's layers, a ZeRO slice), and every other
// layout's ranks load exactly the values they hold, for GPT-2 (tied
// embeddings) and Llama (grouped-query attention). The index and the step
// directory refuse damaged, foreign and inconsistent files with a message
// naming them.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <llvm/Support/FileSystem.h>

#include "checkpoint/chunks.h"
#include "checkpoint/index.h"
#include "checkpoint/store.h"
#include "temp_dir.h"

namespace avf::checkpoint {
namespace {

using ::testing::HasSubstr;

auto Message(llvm::Error e) -> std::string { return llvm::toString(std::move(e)); }

auto Tiny(model::Arch arch) -> model::ModelConfig {
  return {arch, 4, 16, 4, arch == model::Arch::Llama ? 2 : 4, 32, 32, 8, arch == model::Arch::Gpt2, 10000.0};
}

// A layout: tensor x pipeline (each stage `chunks` model chunks) x data, ZeRO stage.
struct Layout {
  int64_t tensor = 1, pipeline = 1, chunks = 1, data = 1, zero = 0;
  auto ranks() const -> int64_t { return tensor * pipeline * data; }
  auto Name() const -> std::string { return fmt::format("t{}p{}v{}d{}z{}", tensor, pipeline, chunks, data, zero); }
};

// Rank r's coordinates in Megatron's order: tensor fastest, then data, then pipeline.
struct Coords {
  int64_t t, d, p;
};
auto CoordsOf(const Layout& l, int64_t r) -> Coords {
  return {r % l.tensor, r / l.tensor % l.data, r / (l.tensor * l.data)};
}

auto ShardOf(const model::ModelConfig& c, const Layout& l, Coords at) -> model::ShardSpec {
  model::ShardSpec s;
  s.tensor_rank = at.t, s.tensor_size = l.tensor;
  int64_t per = c.layers / (l.pipeline * l.chunks);
  for (int64_t k = 0; k < l.chunks; ++k) s.chunks.push_back({(k * l.pipeline + at.p) * per, per});
  s.embedding = at.p == 0;
  s.output = at.p == l.pipeline - 1;
  return s;
}

// The value of element `full` of tensor `name` in state `kind`: distinct everywhere.
auto ValueOf(StateKind kind, const std::string& name, int64_t full) -> float {
  uint64_t h = std::hash<std::string>{}(name) ^ (static_cast<uint64_t>(kind) << 40);
  return static_cast<float>((h % 1000) + 1) + static_cast<float>(full) * 1e-3f;
}

// What a rank of the engine holds: its shard's parameters (at ZeRO 3 its
// slice) and the moments of its slice (the whole shard at ZeRO 0).
struct RankState {
  model::ParamLayout layout;
  optim::ElementRun params, moments;
  std::vector<float> values[3];
};

auto HeldBy(const model::ModelConfig& c, const Layout& l, int64_t r) -> RankState {
  Coords at = CoordsOf(l, r);
  RankState s;
  s.layout = model::LayoutOf(c, ShardOf(c, l, at));
  optim::ElementRun whole{0, s.layout.total}, slice = ShareOf(s.layout.total, at.d, l.data);
  s.params = l.zero >= 3 ? slice : whole;
  s.moments = l.zero >= 1 ? slice : whole;
  for (StateKind kind : kStateKinds) {
    optim::ElementRun run = kind == StateKind::Param ? s.params : s.moments;
    std::vector<float>& v = s.values[static_cast<int>(kind)];
    v.assign(static_cast<size_t>(run.count), 0.0f);
    for (const model::ParamTensor& t : s.layout.tensors) {
      for (int64_t i = std::max(run.first, t.offset); i < std::min(run.first + run.count, t.offset + t.size); ++i) {
        v[static_cast<size_t>(i - run.first)] = ValueOf(kind, t.name, t.part.FullIndex(i - t.offset));
      }
    }
  }
  return s;
}

class Checkpoints : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_FALSE(root_.empty()); }

  // Every rank of `l` saves, then the step is committed.
  void Save(const model::ModelConfig& c, const Layout& l, const std::string& dir, int64_t step = 7,
            const crypto::Key* key = nullptr) {
    for (int64_t r = 0; r < l.ranks(); ++r) {
      RankState s = HeldBy(c, l, r);
      Coords at = CoordsOf(l, r);
      RankShard shard{&s.layout, at.t, at.p == 0, ShareOf(s.layout.total, at.d, l.data)};
      SavePlan plan = PlanSave(shard, {{StateKind::Param, s.params, s.values[0]},
                                       {StateKind::AdamM, s.moments, s.values[1]},
                                       {StateKind::AdamV, s.moments, s.values[2]}});
      ASSERT_FALSE(WriteRank(dir, r, plan, key));
    }
    Index meta;
    meta.step = step;
    meta.origin.job = "tiny", meta.origin.model = c, meta.origin.precision = "fp32";
    meta.origin.plan_sha256 = std::string(64, 'a');
    meta.data = {"toy", 1000, 8, 8, step, 0, 8 * step};
    if (key) meta.key_id = KeyId(*key);
    llvm::Error committed = Commit(dir, l.ranks(), meta);
    ASSERT_FALSE(committed) << Message(std::move(committed));
  }

  // Every rank of `l` loads what it holds and finds exactly the saved values.
  void ExpectLoads(const model::ModelConfig& c, const Layout& l, const std::string& dir,
                   const crypto::Key* key = nullptr) {
    llvm::Expected<Index> index = OpenIndex(dir);
    ASSERT_TRUE(bool(index)) << Message(index.takeError());
    ASSERT_FALSE(CheckKey(dir, *index, key));
    DirectorySource source(dir, *index, key);
    for (int64_t r = 0; r < l.ranks(); ++r) {
      RankState want = HeldBy(c, l, r);
      for (StateKind kind : kStateKinds) {
        optim::ElementRun run = kind == StateKind::Param ? want.params : want.moments;
        auto got = LoadArray(*index, source, want.layout, kind, run);
        ASSERT_TRUE(bool(got)) << Message(got.takeError());
        ASSERT_EQ(*got, want.values[static_cast<int>(kind)]) << l.Name() << " rank " << r << " " << Prefix(kind).str();
      }
    }
  }

  avf::testing::TempDir temp_{"avf-ckpt-test"};
  std::string root_ = temp_.path();
};

const Layout kLayouts[] = {
    {1, 1, 1, 1, 0}, {2, 1, 1, 1, 0}, {1, 2, 1, 1, 0}, {2, 2, 1, 2, 1},
    {1, 2, 2, 2, 3}, {2, 1, 1, 2, 2}, {1, 1, 1, 4, 3}, {2, 4, 1, 1, 0},
};

// 8 layouts saved and each loaded by all 8, both architectures: 128 (from, to) pairs.
TEST_F(Checkpoints, AnyLayoutLoadsWhatAnyLayoutSaved) {
  for (model::Arch arch : {model::Arch::Gpt2, model::Arch::Llama}) {
    model::ModelConfig c = Tiny(arch);
    for (const Layout& from : kLayouts) {
      std::string dir = root_ + "/" + checkpoint::ArchName(arch).str() + "_" + from.Name();
      Save(c, from, dir);
      for (const Layout& to : kLayouts) ExpectLoads(c, to, dir);
    }
  }
}

// Replicas split the writing: every element of every tensor is saved once,
// whatever the layout (a tied output layer's copy and the norms every tensor
// rank holds included), so the files add up to 3 x 4 bytes per parameter.
TEST_F(Checkpoints, EveryElementIsSavedOnce) {
  model::ModelConfig c = Tiny(model::Arch::Gpt2);
  int64_t parameters = model::LayoutOf(c).total;
  for (const Layout& l : kLayouts) {
    std::string dir = root_ + "/" + l.Name();
    Save(c, l, dir);
    llvm::Expected<Index> index = OpenIndex(dir);
    ASSERT_TRUE(bool(index)) << Message(index.takeError());
    uint64_t bytes = 0;
    for (const DataFile& f : index->files) bytes += f.bytes;
    EXPECT_EQ(bytes, static_cast<uint64_t>(12 * parameters)) << l.Name();
    EXPECT_EQ(index->files.size(), static_cast<size_t>(l.ranks()));
  }
}

// Sealed data files load alike under another layout with the key; without
// it, or with another, they are refused before anything is read.
TEST_F(Checkpoints, EncryptedFilesLoadWithTheirKey) {
  model::ModelConfig c = Tiny(model::Arch::Llama);
  auto key = crypto::Key::FromBytes(std::vector<uint8_t>(32, 7));
  auto other = crypto::Key::FromBytes(std::vector<uint8_t>(32, 8));
  ASSERT_TRUE(key && other);
  std::string dir = root_ + "/sealed";
  Save(c, {2, 2, 1, 2, 1}, dir, 7, &*key);
  ExpectLoads(c, {1, 2, 2, 2, 3}, dir, &*key);
  llvm::Expected<Index> index = OpenIndex(dir);
  ASSERT_TRUE(bool(index)) << Message(index.takeError());
  EXPECT_EQ(index->key_id, KeyId(*key));
  EXPECT_THAT(Message(CheckKey(dir, *index, nullptr)), HasSubstr("its files are encrypted (key id "));
  EXPECT_THAT(Message(CheckKey(dir, *index, &*other)), HasSubstr("its files are encrypted with another key"));
  std::ifstream in(dir + "/rank_00000.bin", std::ios::binary);
  char magic[4] = {};
  in.read(magic, 4);
  EXPECT_EQ(std::string(magic, 4), "AVFE");
}

TEST(PartRuns, RowsAndColumns) {
  // Rows 2..3 and 6..6 of a 8 x 5 tensor, columns 1..3.
  model::TensorPart part{8, 5, {{2, 2}, {6, 1}}, 1, 3};
  std::vector<std::tuple<int64_t, int64_t, int64_t>> runs;
  ForEachRun(part, 2, 6, [&](PartRun r) { runs.emplace_back(r.local, r.full, r.count); });
  EXPECT_EQ(runs, (std::vector<std::tuple<int64_t, int64_t, int64_t>>{{2, 13, 1}, {3, 16, 3}, {6, 31, 2}}));
  runs.clear();
  ForEachRun(part, 8, 5, [&](PartRun r) { runs.emplace_back(r.local, r.full, r.count); });
  EXPECT_EQ(runs, (std::vector<std::tuple<int64_t, int64_t, int64_t>>{{8, 33, 1}}));  // only 1 element is left
  for (int64_t i = 0; i < 9; ++i) {
    ForEachRun(part, i, 1, [&](PartRun r) { EXPECT_EQ(r.full, part.FullIndex(i)); });
  }
}

class Damaged : public Checkpoints {
 protected:
  void SetUp() override {
    Checkpoints::SetUp();
    Save(Tiny(model::Arch::Gpt2), {2, 1, 1, 1, 0}, dir_);
  }
  std::string dir_ = StepDir(root_, 7);
  std::string file_ = dir_ + "/rank_00001.bin";
};

TEST_F(Damaged, AFlippedByteFailsItsSha256) {
  llvm::Expected<Index> index = OpenIndex(dir_);
  ASSERT_TRUE(bool(index)) << Message(index.takeError());
  EXPECT_FALSE(VerifyFile(dir_, *index, 1));
  {
    std::fstream f(file_, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(100);
    f.put('\x7f');
  }
  EXPECT_EQ(Message(VerifyFile(dir_, *index, 1)),
            file_ + ": its SHA-256 is not the one in the index: the file is corrupted or was replaced");
  EXPECT_FALSE(VerifyFile(dir_, *index, 0));
}

TEST_F(Damaged, TruncatedOrMissingFilesAreNamed) {
  uint64_t size = std::filesystem::file_size(file_);
  ASSERT_EQ(truncate(file_.c_str(), static_cast<off_t>(size - 4)), 0);
  EXPECT_EQ(Message(OpenIndex(dir_).takeError()),
            fmt::format("{}: {} bytes, but the index says {} (truncated or replaced)", file_, size - 4, size));
  std::remove(file_.c_str());
  EXPECT_THAT(Message(OpenIndex(dir_).takeError()), HasSubstr(file_ + ": missing: "));
}

// The step is in the index, which the SHA-256s cover through the files'
// listing: a step directory renamed (or a newer one copied from an older)
// is refused.
TEST_F(Damaged, TheIndexStepIsTheDirectorys) {
  std::string moved = StepDir(root_, 65636);
  std::filesystem::rename(dir_, moved);
  EXPECT_EQ(Message(OpenIndex(moved).takeError()),
            moved + "/index.json: the index is of step 7, but its directory is step 65636");
}

// COMMITTED holds the index's SHA-256: an index changed after the commit
// (one digit of a chunk's offset) is refused.
TEST_F(Damaged, TheIndexIsVerified) {
  std::string path = dir_ + "/index.json";
  std::string text;
  {
    std::ifstream in(path);
    text.assign(std::istreambuf_iterator<char>(in), {});
  }
  size_t at = text.find("\"offset\": 0");
  ASSERT_NE(at, std::string::npos);
  text[at + 10] = '4';
  std::ofstream(path) << text;
  EXPECT_EQ(Message(OpenIndex(dir_).takeError()),
            path + ": its SHA-256 is not the one in COMMITTED: the index is corrupted or was replaced");
}

TEST_F(Damaged, UncommittedIsNotOpened) {
  std::remove((dir_ + "/COMMITTED").c_str());
  EXPECT_EQ(Message(OpenIndex(dir_).takeError()), dir_ + ": not committed");
}

TEST_F(Damaged, BadIndexesAreRefused) {
  std::string path = dir_ + "/index.json";
  std::string good;
  {
    std::ifstream in(path);
    good.assign(std::istreambuf_iterator<char>(in), {});
  }
  auto parse = [&](const std::string& text) { return Message(ParseIndex(text, "index.json").takeError()); };
  EXPECT_THAT(parse("{"), HasSubstr("index.json: not JSON"));
  EXPECT_EQ(parse("{}"), "index.json: not an aviflow checkpoint index");
  auto replaced = [&](const std::string& from, const std::string& to) {
    std::string text = good;
    size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return at == std::string::npos ? text : text.replace(at, from.size(), to);
  };
  EXPECT_EQ(parse(replaced("\"version\": 3", "\"version\": 4")),
            "index.json: checkpoint format version 4; this avf-run reads version 3");
  EXPECT_EQ(parse(replaced("\"step\": 7", "\"step\": -7")),
            "index.json: step: expected an integer in 0..1125899906842624");
  EXPECT_EQ(parse(replaced("\"name\": \"rank_00000.bin\"", "\"name\": \"../x\"")),
            "index.json: files[0].name: expected a file name in the step directory");
  EXPECT_THAT(parse(replaced("\"count\": 256", "\"count\": 255")), HasSubstr("param/wte: its chunks hold 511"));
  EXPECT_THAT(parse(replaced("\"offset\": 0", "\"offset\": 99999999")), HasSubstr("runs past the end of"));
  EXPECT_THAT(parse(replaced("\"arch\": \"gpt2\"", "\"arch\": \"bert\"")),
              HasSubstr("origin.model.arch: expected \"gpt2\" or \"llama\""));
}

TEST_F(Checkpoints, ListAndPrune) {
  model::ModelConfig c = Tiny(model::Arch::Gpt2);
  for (int64_t step : {10, 20, 30, 40}) Save(c, {}, StepDir(root_, step), step);
  std::remove((StepDir(root_, 20) + "/COMMITTED").c_str());
  std::filesystem::create_directories(StepDir(root_, 50));  // being written: kept
  auto steps = ListSteps(root_);
  ASSERT_TRUE(bool(steps)) << Message(steps.takeError());
  ASSERT_EQ(steps->size(), 5u);
  EXPECT_FALSE((*steps)[1].committed);
  EXPECT_TRUE((*steps)[3].committed);
  ASSERT_FALSE(Prune(root_, 2));
  std::vector<int64_t> left;
  for (int64_t step : {10, 20, 30, 40, 50}) {
    if (llvm::sys::fs::exists(StepDir(root_, step))) left.push_back(step);
  }
  EXPECT_EQ(left, (std::vector<int64_t>{30, 40, 50}));
  auto none = ListSteps(root_ + "/missing");
  ASSERT_TRUE(bool(none));
  EXPECT_TRUE(none->empty());
}

}  // namespace
}  // namespace avf::checkpoint

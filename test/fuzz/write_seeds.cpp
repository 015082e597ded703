// Writes the seed corpora of the binary fuzz targets with the project's own
// writers, so that every seed is a file the runtime really produces:
//   OUT/rendezvous/    hellos and requests (EncodeHello, wire::Writer)
//   OUT/shard_header/  token shards (WriteShard), aviflow and llm.c headers
//   OUT/checkpoint/    a checkpoint index.json and a rank's part of it (WriteRank, Commit)
// tools/fuzz_seeds.sh runs it to refresh test/fuzz/corpus/ or to check that
// the committed seeds are still what the writers write.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <llvm/Support/Error.h>

#include "checkpoint/chunks.h"
#include "checkpoint/store.h"
#include "data/shard_format.h"
#include "data/shard_writer.h"
#include "model/config.h"
#include "rendezvous/store.h"
#include "seed_shapes.h"

namespace fs = std::filesystem;
namespace wire = avf::rendezvous::wire;

namespace {

void WriteFile(const fs::path& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

auto Frame(wire::MsgType type) -> wire::Writer {
  wire::Writer w;
  w.U8(static_cast<uint8_t>(type));
  return w;
}

void WriteRendezvousSeeds(const fs::path& dir) {
  using avf::fuzz::kRendezvousPlanSha256, avf::fuzz::kRendezvousToken, avf::fuzz::kRendezvousWorld;
  std::string hello = avf::rendezvous::EncodeHello(kRendezvousToken, 0, kRendezvousWorld, kRendezvousPlanSha256);
  std::vector<std::string> keys = {"nccl/0", "avf/barrier/init/0"};
  auto wait = Frame(wire::MsgType::kWait).U32(2).Str(keys[0]).Str(keys[1]).U32(0);
  auto check = Frame(wire::MsgType::kCheck).U32(2).Str(keys[0]).Str(keys[1]);
  WriteFile(dir / "hello", hello);
  WriteFile(dir / "hello_wrong_token",
            avf::rendezvous::EncodeHello("not-the-token", 1, kRendezvousWorld, kRendezvousPlanSha256));
  WriteFile(dir / "hello_other_plan",
            avf::rendezvous::EncodeHello(kRendezvousToken, 1, kRendezvousWorld, std::string(64, 'f')));
  WriteFile(dir / "set_get", hello + std::move(Frame(wire::MsgType::kSet).Str(keys[0]).Str("id")).Finish() +
                                 std::move(Frame(wire::MsgType::kGet).Str(keys[0]).U32(0)).Finish());
  WriteFile(dir / "add_add", hello + std::move(Frame(wire::MsgType::kAdd).Str("count").I64(1)).Finish() +
                                 std::move(Frame(wire::MsgType::kAdd).Str("count").I64(-3)).Finish());
  WriteFile(dir / "wait_check", hello + std::move(wait).Finish() + std::move(check).Finish());
  WriteFile(dir / "wait_all", hello + std::move(Frame(wire::MsgType::kWaitAll).U32(0)).Finish());
}

auto Check(llvm::Error e) -> bool {
  if (!e) return true;
  std::fprintf(stderr, "write_seeds: %s\n", llvm::toString(std::move(e)).c_str());
  return false;
}

auto WriteShardSeeds(const fs::path& dir) -> bool {
  std::vector<uint32_t> tokens = {50256, 464, 2068, 7586, 21831, 50256};
  std::array<uint8_t, avf::data::kHeaderBytes> llmc{};
  // llm.c's header: magic, version, 32-bit token count (docs/data-format.md).
  for (auto [word, value] : {std::pair<size_t, uint32_t>{0, avf::data::kLlmcMagicU16},
                             {1, avf::data::kLlmcVersionU16},
                             {2, static_cast<uint32_t>(tokens.size())}}) {
    for (size_t k = 0; k < 4; ++k) llmc[4 * word + k] = static_cast<uint8_t>(value >> (8 * k));
  }
  std::string llmc_file(llmc.begin(), llmc.end());
  for (uint32_t t : tokens) llmc_file += {static_cast<char>(t & 0xff), static_cast<char>(t >> 8)};
  WriteFile(dir / "llmc_u16", llmc_file);
  return Check(avf::data::WriteShard((dir / "aviflow_u16").string(), 2, tokens)) &&
         Check(avf::data::WriteShard((dir / "aviflow_u32").string(), 4, tokens));
}

// A committed checkpoint of a 2-layer GPT-2 over two tensor ranks, written
// by the real writer: its index.json and a rank's part of it.
auto WriteCheckpointSeed(const fs::path& dir) -> bool {
  using namespace avf::checkpoint;
  fs::path step = dir / "tmp";
  avf::model::ModelConfig c{avf::model::Arch::Gpt2, 2, 8, 2, 2, 16, 8, 4, true, 10000.0};
  for (int64_t t = 0; t < 2; ++t) {
    avf::model::ShardSpec shard;
    shard.tensor_rank = t, shard.tensor_size = 2;
    avf::model::ParamLayout layout = avf::model::LayoutOf(c, shard);
    std::vector<float> values(static_cast<size_t>(layout.total), 0.5f);
    avf::optim::ElementRun all{0, layout.total};
    SavePlan plan =
        PlanSave({&layout, t, true, all},
                 {{StateKind::Param, all, values}, {StateKind::AdamM, all, values}, {StateKind::AdamV, all, values}});
    if (!Check(WriteRank(step.string(), t, plan))) return false;
  }
  fs::copy_file(step / "rank_00001.part.json", dir / "rank_part.json", fs::copy_options::overwrite_existing);
  Index meta;
  meta.step = 3;
  meta.origin.job = "seed", meta.origin.model = c, meta.origin.precision = "fp32";
  meta.origin.plan_sha256 = std::string(64, '0');
  meta.data = {"toy", 1000, 4, 4, 3, 0, 12};
  if (!Check(Commit(step.string(), 2, meta))) return false;
  fs::copy_file(step / "index.json", dir / "index.json", fs::copy_options::overwrite_existing);
  fs::remove_all(step);
  return true;
}

}  // namespace

auto main(int argc, char** argv) -> int {
  if (argc != 2) {
    std::fprintf(stderr, "usage: write_seeds OUT_DIR\n");
    return 2;
  }
  fs::path out = argv[1];
  for (const char* sub : {"rendezvous", "shard_header", "checkpoint"}) fs::create_directories(out / sub);
  WriteRendezvousSeeds(out / "rendezvous");
  return WriteShardSeeds(out / "shard_header") && WriteCheckpointSeed(out / "checkpoint") ? 0 : 1;
}

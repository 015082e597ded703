// Writes the seed corpora of the binary fuzz targets with the project's own
// writers, so that every seed is a file the runtime really produces:
//   OUT/rendezvous/    hellos and requests (EncodeHello, wire::Writer)
//   OUT/shard_header/  token shards (WriteShard), aviflow and llm.c headers
//   OUT/checkpoint/    rank checkpoint files (SaveRank), one of them empty
// tools/fuzz_seeds.sh runs it to refresh test/fuzz/corpus/ or to check that
// the committed seeds are still what the writers write.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <llvm/Support/Error.h>

#include "data/shard_format.h"
#include "data/shard_writer.h"
#include "rendezvous/store.h"
#include "seed_shapes.h"
#include "train/checkpoint.h"

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

auto WriteCheckpointSeed(const fs::path& dir) -> bool {
  using namespace avf::fuzz;
  fs::path root = dir / "tmp";
  avf::train::RankState state;
  state.step = 3, state.data_position = 4096, state.data_epoch = 1;
  state.params = {0.5f, -1.25f, 3.0f, 0.0f};
  state.m.assign(kCheckpointMoments, 0.125f), state.v.assign(kCheckpointMoments, 0.25f);
  state.params.resize(kCheckpointParams);
  if (!Check(avf::train::SaveRank(root.string(), kCheckpointRank, kCheckpointWorld, state))) return false;
  fs::path file = fs::path(avf::train::CheckpointDir(root.string(), state.step)) / "rank_00000.bin";
  fs::rename(file, dir / "rank0_of_1");
  // A rank that holds no moments (ZeRO slices can be empty) and no parameters.
  avf::train::RankState empty;
  if (!Check(avf::train::SaveRank(root.string(), kCheckpointRank, kCheckpointWorld, empty))) return false;
  fs::rename(fs::path(avf::train::CheckpointDir(root.string(), 0)) / "rank_00000.bin", dir / "empty_rank");
  fs::remove_all(root);
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

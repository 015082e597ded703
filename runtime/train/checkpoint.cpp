#include "train/checkpoint.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstdio>
#include <cstring>

#include <fmt/format.h>
#include <llvm/Support/CRC.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/Path.h>

#include "io/regular_file.h"

namespace avf::train {

namespace {

constexpr uint32_t kMagic = 0x4b465641;  // "AVFK"
// Version 2 adds the moments' count (ZeRO 1 keeps moments for a slice only);
// version 1 files (moments as long as the parameters) are still read.
constexpr uint32_t kVersion = 2;
constexpr size_t kHeaderBytes = 64;

auto Fail(std::string message) -> llvm::Error {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s", message.c_str());
}

auto RankFile(const std::string& root, int64_t step, int32_t rank) -> std::string {
  return CheckpointDir(root, step) + fmt::format("/rank_{:05d}.bin", rank);
}

void Put(std::vector<uint8_t>& out, uint64_t v, size_t bytes) {
  for (size_t i = 0; i < bytes; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

auto Get(const uint8_t* p, size_t bytes) -> uint64_t {
  uint64_t v = 0;
  for (size_t i = 0; i < bytes; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

// The payload is the arrays' bytes as they are in memory: little-endian
// fp32, as the format says.
static_assert(std::endian::native == std::endian::little, "checkpoints are written from little-endian memory");

auto Bytes(llvm::ArrayRef<float> v) -> llvm::ArrayRef<uint8_t> {
  return {reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(float)};
}

auto PayloadCrc(const RankStateView& s) -> uint32_t {
  uint32_t crc = 0;
  for (llvm::ArrayRef<float> v : {s.params, s.m, s.v}) crc = llvm::crc32(crc, Bytes(v));
  return crc;
}

auto WriteAll(std::FILE* f, const std::vector<uint8_t>& header, const RankStateView& s) -> bool {
  bool ok = std::fwrite(header.data(), 1, header.size(), f) == header.size();
  for (llvm::ArrayRef<float> v : {s.params, s.m, s.v}) {
    llvm::ArrayRef<uint8_t> bytes = Bytes(v);
    ok = ok && (bytes.empty() || std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size());
  }
  return ok;
}

// The size of a rank's file: the header, 4 bytes per parameter and 8 per
// moment pair; false when the counts are negative or the size overflows.
auto FileBytes(int64_t params, int64_t moments, uint64_t& bytes) -> bool {
  uint64_t p = 0, m = 0;
  return params >= 0 && moments >= 0 && !__builtin_mul_overflow(static_cast<uint64_t>(params), 4, &p) &&
         !__builtin_mul_overflow(static_cast<uint64_t>(moments), 8, &m) && !__builtin_add_overflow(p, m, &bytes) &&
         !__builtin_add_overflow(bytes, kHeaderBytes, &bytes);
}

// An empty vector's data() may be null, which memcpy must not get even for 0
// bytes (a rank without moments).
void CopyFloats(std::vector<float>& to, const uint8_t* from) {
  if (!to.empty()) std::memcpy(to.data(), from, 4 * to.size());
}

auto StepOf(llvm::StringRef name) -> std::optional<int64_t> {
  if (!name.consume_front("step_") || name.empty()) return std::nullopt;
  int64_t step = 0;
  if (name.getAsInteger(10, step) || step < 0) return std::nullopt;
  return step;
}

// Every step_N directory under root, with whether it is committed.
auto Steps(const std::string& root) -> std::vector<std::pair<int64_t, bool>> {
  std::vector<std::pair<int64_t, bool>> steps;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    if (auto step = StepOf(llvm::sys::path::filename(it->path()))) {
      steps.emplace_back(*step, llvm::sys::fs::exists(it->path() + "/COMMITTED"));
    }
  }
  std::sort(steps.begin(), steps.end());
  return steps;
}

}  // namespace

auto CheckpointDir(const std::string& root, int64_t step) -> std::string {
  return root + fmt::format("/step_{:08d}", step);
}

auto SaveRank(const std::string& root, int32_t rank, int32_t world, const RankStateView& s) -> llvm::Error {
  if (s.m.size() != s.v.size() || s.m.size() > s.params.size())
    return Fail("checkpoint: the moments do not fit the parameters");
  std::string dir = CheckpointDir(root, s.step);
  if (std::error_code ec = llvm::sys::fs::create_directories(dir))
    return Fail(fmt::format("{}: {}", dir, ec.message()));
  std::vector<uint8_t> header;
  Put(header, kMagic, 4), Put(header, kVersion, 4), Put(header, static_cast<uint32_t>(world), 4);
  Put(header, static_cast<uint32_t>(rank), 4), Put(header, static_cast<uint64_t>(s.step), 8);
  Put(header, static_cast<uint64_t>(s.data_position), 8), Put(header, static_cast<uint64_t>(s.data_epoch), 8);
  Put(header, s.params.size(), 8), Put(header, PayloadCrc(s), 4), Put(header, s.m.size(), 8);
  header.resize(kHeaderBytes, 0);
  std::string path = RankFile(root, s.step, rank), tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  bool ok = f && WriteAll(f, header, s);
  ok = f && std::fclose(f) == 0 && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string why = std::strerror(errno);
    std::remove(tmp.c_str());
    return Fail(fmt::format("{}: cannot write the checkpoint: {}", path, why));
  }
  return llvm::Error::success();
}

auto SaveRank(const std::string& root, int32_t rank, int32_t world, const RankState& s) -> llvm::Error {
  return SaveRank(root, rank, world, RankStateView{s.step, s.data_position, s.data_epoch, s.params, s.m, s.v});
}

auto Commit(const std::string& root, int64_t step) -> llvm::Error {
  std::string path = CheckpointDir(root, step) + "/COMMITTED";
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f || std::fclose(f) != 0)
    return Fail(fmt::format("{}: cannot commit the checkpoint: {}", path, std::strerror(errno)));
  return llvm::Error::success();
}

auto LatestCommitted(const std::string& root) -> llvm::Expected<std::optional<int64_t>> {
  if (!llvm::sys::fs::exists(root)) return std::optional<int64_t>();
  if (!llvm::sys::fs::is_directory(root)) return Fail(root + ": the checkpoint directory is not a directory");
  std::optional<int64_t> latest;
  for (const auto& [step, committed] : Steps(root)) {
    if (committed) latest = step;
  }
  return latest;
}

auto LoadRank(const std::string& root, int64_t step, int32_t rank, int32_t world, int64_t params, int64_t moments)
    -> llvm::Expected<RankState> {
  std::string path = RankFile(root, step, rank);
  uint64_t expected = 0;
  if (!FileBytes(params, moments, expected)) {
    return Fail(fmt::format("{}: no checkpoint holds {} parameters and {} optimizer moments", path, params, moments));
  }
  llvm::Expected<io::RegularFile> file = io::RegularFile::Open(path);
  if (!file) return Fail(fmt::format("{}: cannot read the checkpoint: {}", path, llvm::toString(file.takeError())));
  auto buffer = llvm::MemoryBuffer::getOpenFile(file->fd(), path, file->size(), /*RequiresNullTerminator=*/false);
  if (!buffer) return Fail(fmt::format("{}: cannot read the checkpoint: {}", path, buffer.getError().message()));
  llvm::ArrayRef<uint8_t> bytes(reinterpret_cast<const uint8_t*>((*buffer)->getBufferStart()),
                                (*buffer)->getBufferSize());
  return ParseRank(bytes, path, rank, world, params, moments);
}

auto ParseRank(llvm::ArrayRef<uint8_t> bytes, const std::string& path, int32_t rank, int32_t world, int64_t params,
               int64_t moments) -> llvm::Expected<RankState> {
  uint64_t expected = 0;
  bool sized = FileBytes(params, moments, expected);
  const uint8_t* p = bytes.data();
  size_t size = bytes.size();
  if (size < kHeaderBytes || Get(p, 4) != kMagic) return Fail(path + ": not an aviflow checkpoint");
  uint64_t version = Get(p + 4, 4);
  if (version != 1 && version != kVersion) {
    return Fail(
        fmt::format("{}: checkpoint version {}; this avf-run reads versions 1 and {}", path, version, kVersion));
  }
  if (Get(p + 8, 4) != static_cast<uint32_t>(world) || Get(p + 12, 4) != static_cast<uint32_t>(rank)) {
    return Fail(
        fmt::format("{}: written by rank {} of {}, but this is rank {} of {}; resuming with another layout needs "
                    "the reshardable format",
                    path, Get(p + 12, 4), Get(p + 8, 4), rank, world));
  }
  uint64_t count = Get(p + 40, 8), moment_count = version == 1 ? count : Get(p + 52, 8);
  // The counts are checked against the bytes present before any arithmetic on them.
  uint64_t payload_bytes = size - kHeaderBytes;
  bool fits = count <= payload_bytes / 4 && moment_count <= payload_bytes / 8;
  if (!sized || !fits || count != static_cast<uint64_t>(params) || moment_count != static_cast<uint64_t>(moments) ||
      size != expected) {
    std::string want = sized ? fmt::format("{} bytes", expected) : std::string("more bytes than 64 bits count");
    return Fail(
        fmt::format("{}: holds {} parameters and {} optimizer moments in {} bytes; this rank has {} and {} "
                    "(expected {})",
                    path, count, moment_count, size, params, moments, want));
  }
  llvm::ArrayRef<uint8_t> payload(p + kHeaderBytes, size - kHeaderBytes);
  if (llvm::crc32(payload) != Get(p + 48, 4)) return Fail(path + ": the checkpoint is corrupted (CRC mismatch)");
  RankState s;
  s.step = static_cast<int64_t>(Get(p + 16, 8));
  s.data_position = static_cast<int64_t>(Get(p + 24, 8));
  s.data_epoch = static_cast<int64_t>(Get(p + 32, 8));
  s.params.resize(count), s.m.resize(moment_count), s.v.resize(moment_count);
  CopyFloats(s.params, payload.data());
  CopyFloats(s.m, payload.data() + 4 * count);
  CopyFloats(s.v, payload.data() + 4 * (count + moment_count));
  return s;
}

auto Prune(const std::string& root, int64_t keep) -> llvm::Error {
  std::vector<std::pair<int64_t, bool>> steps = Steps(root);
  std::vector<int64_t> committed;
  for (const auto& [step, c] : steps) {
    if (c) committed.push_back(step);
  }
  if (committed.empty()) return llvm::Error::success();
  int64_t newest = committed.back();
  size_t drop = committed.size() > static_cast<size_t>(keep) ? committed.size() - static_cast<size_t>(keep) : 0;
  for (const auto& [step, c] : steps) {
    bool old_committed = c && std::find(committed.begin(), committed.begin() + drop, step) != committed.begin() + drop;
    if (!old_committed && (c || step > newest)) continue;
    if (std::error_code ec = llvm::sys::fs::remove_directories(CheckpointDir(root, step))) {
      return Fail(fmt::format("{}: cannot remove an old checkpoint: {}", CheckpointDir(root, step), ec.message()));
    }
  }
  return llvm::Error::success();
}

}  // namespace avf::train

#include "checkpoint/store.h"

#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include <fmt/format.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/Path.h>

#include "crypto/sha256.h"
#include "io/durable_file.h"
#include "io/regular_file.h"

namespace avf::checkpoint {

namespace {

// The data files hold the arrays' bytes as they are in memory.
static_assert(std::endian::native == std::endian::little, "checkpoints are little-endian fp32");

auto Fail(std::string message) -> llvm::Error {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s", message.c_str());
}

auto PartFileName(int64_t rank) -> std::string { return fmt::format("rank_{:05d}.part.json", rank); }

auto StepOf(llvm::StringRef name) -> std::optional<int64_t> {
  if (!name.consume_front("step_") || name.empty()) return std::nullopt;
  int64_t step = 0;
  if (name.getAsInteger(10, step) || step < 0) return std::nullopt;
  return step;
}

auto ReadText(const std::string& path, uint64_t max_bytes) -> llvm::Expected<std::string> {
  llvm::Expected<io::RegularFile> file = io::RegularFile::Open(path);
  if (!file) return Fail(fmt::format("{}: cannot read: {}", path, llvm::toString(file.takeError())));
  if (file->size() > max_bytes) return Fail(fmt::format("{}: {} bytes, more than an index can be", path, file->size()));
  auto buffer = llvm::MemoryBuffer::getOpenFile(file->fd(), path, file->size(), /*RequiresNullTerminator=*/false);
  if (!buffer) return Fail(fmt::format("{}: cannot read: {}", path, buffer.getError().message()));
  return (*buffer)->getBuffer().str();
}

constexpr uint64_t kMaxIndexBytes = uint64_t{1} << 30;

auto AsBytes(llvm::ArrayRef<float> v) -> llvm::ArrayRef<uint8_t> {
  return {reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(float)};
}

// The sealed files' context: a file opens only under its own name.
auto SealContext(const std::string& name) -> std::string { return "aviflow-checkpoint/" + name; }

}  // namespace

auto StepDir(const std::string& root, int64_t step) -> std::string { return root + fmt::format("/step_{:08d}", step); }
auto RankFileName(int64_t rank) -> std::string { return fmt::format("rank_{:05d}.bin", rank); }

auto KeyId(const crypto::Key& key) -> std::string {
  crypto::Sha256 sha;
  sha.Update(llvm::StringRef("aviflow checkpoint key id\n"));
  sha.Update(key.bytes());
  return crypto::Hex(sha.Final()).substr(0, 16);
}

auto CheckKey(const std::string& dir, const Index& index, const crypto::Key* key) -> llvm::Error {
  if (index.key_id.empty()) return llvm::Error::success();
  if (!key) {
    return Fail(fmt::format("{}: its files are encrypted (key id {}): give the key (--checkpoint-key-file)", dir,
                            index.key_id));
  }
  if (KeyId(*key) != index.key_id) {
    return Fail(fmt::format("{}: its files are encrypted with another key (key id {}; the key given has id {})", dir,
                            index.key_id, KeyId(*key)));
  }
  return llvm::Error::success();
}

namespace {

// Writes the chunks through a sealing writer on the file's descriptor; the
// file's SHA-256 (of what is on disk) is taken after.
auto WriteSealed(io::DurableFile& file, const SavePlan& plan, const crypto::Key& key, const std::string& name,
                 RankPart& part, int64_t rank) -> llvm::Error {
  llvm::Expected<crypto::SealedWriter> sealed =
      crypto::SealedWriter::Open(key, file.fd(), file.path(), SealContext(name));
  if (!sealed) return sealed.takeError();
  for (const PendingChunk& c : plan.chunks) {
    Chunk placed = c.chunk;
    placed.file = rank, placed.offset = sealed->plaintext_bytes();
    part.tensors[c.tensor].chunks.push_back(placed);
    if (llvm::Error e = sealed->Write(AsBytes(c.values))) return e;
  }
  return sealed->Finish();
}

}  // namespace

auto WriteRank(const std::string& dir, int64_t rank, const SavePlan& plan, const crypto::Key* key) -> llvm::Error {
  if (std::error_code ec = llvm::sys::fs::create_directories(dir))
    return Fail(fmt::format("{}: {}", dir, ec.message()));
  // A step saved again (a run resumed from before it) is uncommitted while it is rewritten.
  std::remove((dir + "/" + kCommittedFile.str()).c_str());
  std::string path = dir + "/" + RankFileName(rank);
  llvm::Expected<io::DurableFile> file = io::DurableFile::Create(path);
  if (!file) return file.takeError();
  RankPart part;
  part.tensors = plan.tensors;
  if (key) {
    if (llvm::Error e = WriteSealed(*file, plan, *key, RankFileName(rank), part, rank)) return e;
    if (llvm::Error e = file->Commit()) return e;
    llvm::Expected<crypto::Digest> digest = crypto::Sha256File(path);
    if (!digest) return digest.takeError();
    uint64_t bytes = 0;
    if (std::error_code ec = llvm::sys::fs::file_size(path, bytes))
      return Fail(fmt::format("{}: {}", path, ec.message()));
    part.file = {RankFileName(rank), bytes, crypto::Hex(*digest)};
  } else {
    crypto::Sha256 sha;
    for (const PendingChunk& c : plan.chunks) {
      Chunk placed = c.chunk;
      placed.file = rank, placed.offset = file->written();
      part.tensors[c.tensor].chunks.push_back(placed);
      llvm::ArrayRef<uint8_t> bytes = AsBytes(c.values);
      sha.Update(bytes);
      if (llvm::Error e = file->Write(bytes)) return e;
    }
    part.file = {RankFileName(rank), file->written(), crypto::Hex(sha.Final())};
    if (llvm::Error e = file->Commit()) return e;
  }
  return io::WriteDurably(dir + "/" + PartFileName(rank), llvm::StringRef(RankPartToJson(part)));
}

auto Commit(const std::string& dir, int64_t ranks, Index meta) -> llvm::Error {
  std::map<std::string, size_t> tensor_of;
  for (int64_t rank = 0; rank < ranks; ++rank) {
    std::string path = dir + "/" + PartFileName(rank);
    llvm::Expected<std::string> text = ReadText(path, kMaxIndexBytes);
    if (!text) return text.takeError();
    llvm::Expected<RankPart> part = ParseRankPart(*text, path);
    if (!part) return part.takeError();
    meta.files.push_back(std::move(part->file));
    for (Tensor& t : part->tensors) {
      auto [it, added] = tensor_of.try_emplace(t.name, meta.tensors.size());
      if (added) meta.tensors.push_back(Tensor{t.name, t.rows, t.cols, {}});
      std::vector<Chunk>& chunks = meta.tensors[it->second].chunks;
      chunks.insert(chunks.end(), t.chunks.begin(), t.chunks.end());
    }
  }
  std::string text = IndexToJson(meta);
  // What a reader checks, checked before the checkpoint is committed.
  if (llvm::Expected<Index> check = ParseIndex(text, dir + "/" + kIndexFile.str()); !check) return check.takeError();
  if (llvm::Error e = io::WriteDurably(dir + "/" + kIndexFile.str(), llvm::StringRef(text))) return e;
  // COMMITTED holds the index's SHA-256: the index is verified like the data it lists.
  crypto::Sha256 sha;
  sha.Update(llvm::StringRef(text));
  std::string committed = crypto::Hex(sha.Final()) + "  " + kIndexFile.str() + "\n";
  if (llvm::Error e = io::WriteDurably(dir + "/" + kCommittedFile.str(), llvm::StringRef(committed))) return e;
  for (int64_t rank = 0; rank < ranks; ++rank) std::remove((dir + "/" + PartFileName(rank)).c_str());
  return llvm::Error::success();
}

auto ListSteps(const std::string& root) -> llvm::Expected<std::vector<StepEntry>> {
  std::vector<StepEntry> steps;
  if (!llvm::sys::fs::exists(root)) return steps;
  if (!llvm::sys::fs::is_directory(root)) return Fail(root + ": the checkpoint directory is not a directory");
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    if (auto step = StepOf(llvm::sys::path::filename(it->path()))) {
      steps.push_back({*step, llvm::sys::fs::exists(it->path() + "/" + kCommittedFile.str())});
    }
  }
  if (ec) return Fail(fmt::format("{}: cannot list the checkpoints: {}", root, ec.message()));
  std::sort(steps.begin(), steps.end(), [](const StepEntry& a, const StepEntry& b) { return a.step < b.step; });
  return steps;
}

auto OpenIndex(const std::string& dir) -> llvm::Expected<Index> {
  std::string committed_path = dir + "/" + kCommittedFile.str();
  if (!llvm::sys::fs::exists(committed_path)) return Fail(dir + ": not committed");
  llvm::Expected<std::string> committed = ReadText(committed_path, 4096);
  if (!committed) return committed.takeError();
  std::string path = dir + "/" + kIndexFile.str();
  llvm::Expected<std::string> text = ReadText(path, kMaxIndexBytes);
  if (!text) return text.takeError();
  crypto::Sha256 sha;
  sha.Update(llvm::StringRef(*text));
  if (llvm::StringRef(*committed).take_front(64) != crypto::Hex(sha.Final())) {
    return Fail(fmt::format("{}: its SHA-256 is not the one in {}: the index is corrupted or was replaced", path,
                            kCommittedFile.str()));
  }
  llvm::Expected<Index> index = ParseIndex(*text, path);
  if (!index) return index.takeError();
  std::optional<int64_t> step = StepOf(llvm::sys::path::filename(dir));
  if (step && *step != index->step) {
    return Fail(fmt::format("{}: the index is of step {}, but its directory is step {}", path, index->step, *step));
  }
  for (const DataFile& f : index->files) {
    uint64_t size = 0;
    std::string file = dir + "/" + f.name;
    if (std::error_code ec = llvm::sys::fs::file_size(file, size)) {
      return Fail(fmt::format("{}: missing: {}", file, ec.message()));
    }
    if (size != f.bytes) {
      return Fail(fmt::format("{}: {} bytes, but the index says {} (truncated or replaced)", file, size, f.bytes));
    }
  }
  return index;
}

auto VerifyFile(const std::string& dir, const Index& index, size_t file) -> llvm::Error {
  const DataFile& f = index.files[file];
  std::string path = dir + "/" + f.name;
  llvm::Expected<crypto::Digest> digest = crypto::Sha256File(path);
  if (!digest) return digest.takeError();
  if (crypto::Hex(*digest) != f.sha256) {
    return Fail(
        fmt::format("{}: its SHA-256 is not the one in the index: the file is corrupted or was replaced", path));
  }
  return llvm::Error::success();
}

auto Prune(const std::string& root, int64_t keep) -> llvm::Error {
  llvm::Expected<std::vector<StepEntry>> steps = ListSteps(root);
  if (!steps) return steps.takeError();
  std::vector<int64_t> committed;
  for (const StepEntry& s : *steps) {
    if (s.committed) committed.push_back(s.step);
  }
  if (committed.empty()) return llvm::Error::success();
  int64_t newest = committed.back();
  size_t drop = committed.size() > static_cast<size_t>(keep) ? committed.size() - static_cast<size_t>(keep) : 0;
  for (const StepEntry& s : *steps) {
    bool old_committed =
        s.committed && std::find(committed.begin(), committed.begin() + drop, s.step) != committed.begin() + drop;
    if (!old_committed && (s.committed || s.step > newest)) continue;
    std::string dir = StepDir(root, s.step);
    // COMMITTED goes first: a crash mid-removal leaves an uncommitted step, never a committed half.
    std::remove((dir + "/" + kCommittedFile.str()).c_str());
    if (std::error_code ec = llvm::sys::fs::remove_directories(dir)) {
      return Fail(fmt::format("{}: cannot remove an old checkpoint: {}", dir, ec.message()));
    }
  }
  return llvm::Error::success();
}

DirectorySource::~DirectorySource() {
  for (int fd : fds_) {
    if (fd >= 0) close(fd);
  }
}

auto DirectorySource::ReadSealed(size_t file, uint64_t offset, int64_t count, float* out) -> llvm::Error {
  if (llvm::Error e = CheckKey(dir_, index_, key_)) return e;
  if (sealed_.empty()) sealed_.resize(index_.files.size());
  const std::string& name = index_.files[file].name;
  if (!sealed_[file]) {
    llvm::Expected<crypto::SealedReader> r = crypto::SealedReader::Open(*key_, dir_ + "/" + name, SealContext(name));
    if (!r) return r.takeError();
    sealed_[file] = std::make_unique<crypto::SealedReader>(std::move(*r));
  }
  crypto::SealedReader& r = *sealed_[file];
  if (llvm::Error e = r.Seek(offset)) return e;
  llvm::MutableArrayRef<uint8_t> into(reinterpret_cast<uint8_t*>(out), static_cast<size_t>(count) * sizeof(float));
  llvm::Expected<size_t> got = r.Read(into);
  if (!got) return got.takeError();
  if (*got != into.size()) return Fail(fmt::format("{}/{}: the file ended early (was it changed?)", dir_, name));
  return llvm::Error::success();
}

auto DirectorySource::Read(int64_t file, uint64_t offset, int64_t count, float* out) -> llvm::Error {
  if (!index_.key_id.empty()) return ReadSealed(static_cast<size_t>(file), offset, count, out);
  if (fds_.empty()) fds_.assign(index_.files.size(), -1);
  size_t i = static_cast<size_t>(file);
  std::string path = dir_ + "/" + index_.files[i].name;
  if (fds_[i] < 0) {
    llvm::Expected<io::RegularFile> f = io::RegularFile::Open(path);
    if (!f) return Fail(fmt::format("{}: cannot read: {}", path, llvm::toString(f.takeError())));
    fds_[i] = f->Release();
  }
  auto* p = reinterpret_cast<uint8_t*>(out);
  size_t left = static_cast<size_t>(count) * sizeof(float);
  while (left > 0) {
    ssize_t got = pread(fds_[i], p, left, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return Fail(fmt::format("{}: cannot read: {}", path, std::strerror(errno)));
    if (got == 0) return Fail(fmt::format("{}: the file ended early (was it changed?)", path));
    p += got, offset += static_cast<uint64_t>(got), left -= static_cast<size_t>(got);
  }
  return llvm::Error::success();
}

}  // namespace avf::checkpoint

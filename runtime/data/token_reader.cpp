#include "data/token_reader.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "data/shard_format.h"
#include "io/regular_file.h"

namespace avf::data {

namespace {

auto Fail(std::string message) -> llvm::Error {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s", message.c_str());
}

// pread until `size` bytes are read; EINTR is retried, a short file is an error.
auto ReadFully(int fd, void* into, size_t size, off_t offset, const std::string& path) -> llvm::Error {
  auto* p = static_cast<uint8_t*>(into);
  while (size > 0) {
    ssize_t got = pread(fd, p, size, offset);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return Fail(fmt::format("{}: cannot read: {}", path, std::strerror(errno)));
    if (got == 0) return Fail(fmt::format("{}: the file ended early (was it changed while training?)", path));
    p += got;
    offset += got;
    size -= static_cast<size_t>(got);
  }
  return llvm::Error::success();
}

// Opens one shard and checks its header against the layout.
struct OpenedShard {
  int fd = -1;
  uint64_t tokens = 0, bytes = 0;
  uint32_t token_bytes = 0;
};

auto OpenShard(const DatasetLayout& l, int64_t shard) -> llvm::Expected<OpenedShard> {
  std::string path = ShardPath(l, shard);
  llvm::Expected<io::RegularFile> file = io::RegularFile::Open(path);
  if (!file) {
    return Fail(
        fmt::format("{}: cannot open shard {} of {}: {}", path, shard, l.shards, llvm::toString(file.takeError())));
  }
  std::array<uint8_t, kHeaderBytes> header{};
  llvm::Error error =
      file->size() < kHeaderBytes
          ? Fail(fmt::format("{}: {} bytes, shorter than the {}-byte shard header", path, file->size(), kHeaderBytes))
          : ReadFully(file->fd(), header.data(), header.size(), 0, path);
  if (error) return error;
  llvm::Expected<ShardHeader> h = DecodeHeader(header, file->size(), path);
  if (!h) return h.takeError();
  if (l.token_bytes != 0 && h->token_bytes != l.token_bytes) {
    return Fail(fmt::format("{}: {}-byte tokens, but the plan's dataset has {}-byte tokens", path, h->token_bytes,
                            l.token_bytes));
  }
  uint64_t bytes = file->size();
  return OpenedShard{file->Release(), h->tokens, bytes, h->token_bytes};
}

// A token id the model has no embedding row for: named with its shard and
// place, so that the bad data can be found.
auto BadToken(const DatasetLayout& l, int64_t shard, int64_t index, uint32_t value) -> llvm::Error {
  uint64_t byte = kHeaderBytes + static_cast<uint64_t>(index) * l.token_bytes;
  return Fail(
      fmt::format("{}: token {} of shard {} (byte offset {}) is {}, not below the model's vocabulary of {}; "
                  "the data was tokenized for another vocabulary",
                  ShardPath(l, shard), index, shard, byte, value, l.vocab));
}

}  // namespace

auto ShardPath(const DatasetLayout& layout, int64_t shard) -> std::string {
  if (!layout.files.empty()) return layout.files[static_cast<size_t>(shard)];
  return layout.dir + "/" + ShardFileName(shard);
}

auto TokenReader::Open(const DatasetLayout& layout) -> llvm::Expected<std::unique_ptr<TokenReader>> {
  if (layout.shards < 1 || (layout.token_bytes != 0 && layout.token_bytes != 2 && layout.token_bytes != 4) ||
      layout.vocab < 1 || (!layout.files.empty() && static_cast<int64_t>(layout.files.size()) != layout.shards)) {
    return Fail(fmt::format("a dataset of {} shards of {}-byte tokens for a vocabulary of {} cannot be read",
                            layout.shards, layout.token_bytes, layout.vocab));
  }
  std::unique_ptr<TokenReader> reader(new TokenReader(layout));
  int64_t total = 0;
  for (int64_t shard = 0; shard < layout.shards; ++shard) {
    llvm::Expected<OpenedShard> opened = OpenShard(reader->layout_, shard);
    if (!opened) return opened.takeError();
    close(opened->fd);
    if (reader->layout_.token_bytes == 0) reader->layout_.token_bytes = opened->token_bytes;
    if (opened->tokens > static_cast<uint64_t>(INT64_MAX) ||
        __builtin_add_overflow(total, static_cast<int64_t>(opened->tokens), &total)) {
      return Fail(fmt::format("{}: the shards hold more than 2^63 tokens", ShardPath(layout, shard)));
    }
    reader->shard_ends_.push_back(total);
    reader->shard_bytes_.push_back(opened->bytes);
  }
  return reader;
}

TokenReader::~TokenReader() {
  if (fd_ >= 0) close(fd_);
}

auto TokenReader::shard_tokens(int64_t shard) const -> int64_t {
  size_t i = static_cast<size_t>(shard);
  return shard_ends_[i] - (i == 0 ? 0 : shard_ends_[i - 1]);
}

auto TokenReader::Locate(int64_t token) const -> std::pair<int64_t, int64_t> {
  auto it = std::upper_bound(shard_ends_.begin(), shard_ends_.end(), token);
  int64_t shard = std::min<int64_t>(it - shard_ends_.begin(), layout_.shards - 1);
  return {shard, token - (shard == 0 ? 0 : shard_ends_[static_cast<size_t>(shard - 1)])};
}

auto TokenReader::UseShard(int64_t shard) -> llvm::Error {
  if (shard == open_shard_) return llvm::Error::success();
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
  open_shard_ = -1;
  llvm::Expected<OpenedShard> opened = OpenShard(layout_, shard);
  if (!opened) return opened.takeError();
  if (opened->bytes != shard_bytes_[static_cast<size_t>(shard)]) {
    close(opened->fd);
    return Fail(fmt::format("{}: {} bytes now, {} when training started; the dataset changed while training",
                            ShardPath(layout_, shard), opened->bytes, shard_bytes_[static_cast<size_t>(shard)]));
  }
  fd_ = opened->fd;
  open_shard_ = shard;
  return llvm::Error::success();
}

// `n` tokens of one shard from its token `index`.
auto TokenReader::ReadRun(int64_t shard, int64_t index, int64_t n, std::vector<uint32_t>& out) -> llvm::Error {
  if (llvm::Error e = UseShard(shard)) return e;
  buffer_.resize(static_cast<size_t>(n) * layout_.token_bytes);
  off_t offset = static_cast<off_t>(kHeaderBytes + static_cast<uint64_t>(index) * layout_.token_bytes);
  if (llvm::Error e = ReadFully(fd_, buffer_.data(), buffer_.size(), offset, ShardPath(layout_, shard))) return e;
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t* b = buffer_.data() + i * layout_.token_bytes;
    uint32_t v = layout_.token_bytes == 2 ? static_cast<uint32_t>(b[0] | b[1] << 8)
                                          : static_cast<uint32_t>(b[0]) | static_cast<uint32_t>(b[1]) << 8 |
                                                static_cast<uint32_t>(b[2]) << 16 | static_cast<uint32_t>(b[3]) << 24;
    if (v >= layout_.vocab) return BadToken(layout_, shard, index + i, v);
    out.push_back(v);
  }
  return llvm::Error::success();
}

auto TokenReader::Read(int64_t first, int64_t n, std::vector<uint32_t>& out) -> llvm::Error {
  if (first < 0 || n < 0 || first > tokens() - n) {
    return Fail(fmt::format("tokens {}..{} are outside the dataset's {} tokens", first, first + n - 1, tokens()));
  }
  while (n > 0) {
    auto [shard, index] = Locate(first);
    int64_t take = std::min(n, shard_tokens(shard) - index);
    if (llvm::Error e = ReadRun(shard, index, take, out)) return e;
    first += take;
    n -= take;
  }
  return llvm::Error::success();
}

}  // namespace avf::data

#include "data/token_reader.h"

#include <unistd.h>

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

auto ShardTokens(const DatasetLayout& l, int64_t shard) -> int64_t {
  int64_t per = l.tokens / l.shards;
  return shard == l.shards - 1 ? l.tokens - per * (l.shards - 1) : per;
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

// Opens one shard and checks it against the layout; the open fd on success.
auto OpenShard(const DatasetLayout& l, int64_t shard) -> llvm::Expected<int> {
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
  if (h->token_bytes != l.token_bytes) {
    return Fail(fmt::format("{}: {}-byte tokens, but the plan's dataset has {}-byte tokens", path, h->token_bytes,
                            l.token_bytes));
  }
  if (static_cast<int64_t>(h->tokens) != ShardTokens(l, shard)) {
    return Fail(fmt::format("{}: {} tokens, but the plan gives shard {} {} tokens ({} in {} shards)", path, h->tokens,
                            shard, ShardTokens(l, shard), l.tokens, l.shards));
  }
  return file->Release();
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
  return layout.dir + "/" + ShardFileName(shard);
}

auto TokenReader::Locate(const DatasetLayout& l, int64_t token) -> std::pair<int64_t, int64_t> {
  int64_t per = l.tokens / l.shards;
  int64_t shard = per == 0 ? l.shards - 1 : std::min(token / per, l.shards - 1);
  return {shard, token - shard * per};
}

auto TokenReader::Open(const DatasetLayout& layout, TokenSlice slice) -> llvm::Expected<std::unique_ptr<TokenReader>> {
  if (layout.shards < 1 || layout.tokens < layout.shards || (layout.token_bytes != 2 && layout.token_bytes != 4) ||
      layout.vocab < 1) {
    return Fail(
        fmt::format("a dataset of {} tokens in {} shards of {}-byte tokens for a vocabulary of {} cannot be "
                    "read",
                    layout.tokens, layout.shards, layout.token_bytes, layout.vocab));
  }
  if (slice.first < 0 || slice.count < 1 || slice.first > layout.tokens - slice.count) {
    return Fail(fmt::format("tokens {}..{} are outside the dataset's {} tokens", slice.first,
                            slice.first + slice.count - 1, layout.tokens));
  }
  int64_t first = Locate(layout, slice.first).first, last = Locate(layout, slice.first + slice.count - 1).first;
  for (int64_t shard = first; shard <= last; ++shard) {
    llvm::Expected<int> fd = OpenShard(layout, shard);
    if (!fd) return fd.takeError();
    close(*fd);
  }
  return std::unique_ptr<TokenReader>(new TokenReader(layout, slice));
}

TokenReader::~TokenReader() {
  if (fd_ >= 0) close(fd_);
}

auto TokenReader::UseShard(int64_t shard) -> llvm::Error {
  if (shard == open_shard_) return llvm::Error::success();
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
  open_shard_ = -1;
  llvm::Expected<int> fd = OpenShard(layout_, shard);
  if (!fd) return fd.takeError();
  fd_ = *fd;
  open_shard_ = shard;
  return llvm::Error::success();
}

// Tokens [token, token + n) of the dataset, within one shard or across several.
auto TokenReader::ReadRun(int64_t token, int64_t n, std::vector<uint32_t>& out) -> llvm::Error {
  while (n > 0) {
    auto [shard, index] = Locate(layout_, token);
    int64_t take = std::min(n, ShardTokens(layout_, shard) - index);
    if (llvm::Error e = UseShard(shard)) return e;
    buffer_.resize(static_cast<size_t>(take) * layout_.token_bytes);
    off_t offset = static_cast<off_t>(kHeaderBytes + static_cast<uint64_t>(index) * layout_.token_bytes);
    if (llvm::Error e = ReadFully(fd_, buffer_.data(), buffer_.size(), offset, ShardPath(layout_, shard))) return e;
    for (int64_t i = 0; i < take; ++i) {
      const uint8_t* b = buffer_.data() + i * layout_.token_bytes;
      uint32_t v = layout_.token_bytes == 2 ? static_cast<uint32_t>(b[0] | b[1] << 8)
                                            : static_cast<uint32_t>(b[0]) | static_cast<uint32_t>(b[1]) << 8 |
                                                  static_cast<uint32_t>(b[2]) << 16 | static_cast<uint32_t>(b[3]) << 24;
      if (v >= layout_.vocab) return BadToken(layout_, shard, index + i, v);
      out.push_back(v);
    }
    token += take;
    n -= take;
  }
  return llvm::Error::success();
}

auto TokenReader::Read(int64_t n, std::vector<uint32_t>& out) -> llvm::Error {
  if (n < 0) return Fail("a negative number of tokens cannot be read");
  while (n > 0) {
    int64_t take = std::min(n, slice_.count - position_);
    if (llvm::Error e = ReadRun(slice_.first + position_, take, out)) return e;
    position_ += take;
    n -= take;
    if (position_ == slice_.count) {
      position_ = 0;
      ++epoch_;
    }
  }
  return llvm::Error::success();
}

auto TokenReader::Seek(int64_t position, int64_t epoch) -> llvm::Error {
  if (position < 0 || position >= slice_.count || epoch < 0) {
    return Fail(
        fmt::format("position {} (epoch {}) is outside this rank's slice of {} tokens", position, epoch, slice_.count));
  }
  position_ = position;
  epoch_ = epoch;
  return llvm::Error::success();
}

}  // namespace avf::data

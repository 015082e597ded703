#include "crypto/sealed_stream.h"

#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "io/regular_file.h"

namespace avf::crypto {

namespace {

constexpr std::array<uint8_t, 4> kMagic = {'A', 'V', 'F', 'E'};
constexpr size_t kNonceAt = 12, kNonceBytes = 8;
// Header bytes 0..19: every tag's additional data starts with them.
constexpr size_t kBoundHeaderBytes = 20;
constexpr uint32_t kHeaderIndex = 0xffffffff;
// Chunk indices run below the header's.
constexpr uint64_t kMaxChunks = kHeaderIndex;

enum class Kind : uint8_t { Chunk = 0, Last = 1, Header = 2 };

using Header = std::array<uint8_t, kSealedHeaderBytes>;
using CipherCtx = std::unique_ptr<EVP_CIPHER_CTX, decltype(&EVP_CIPHER_CTX_free)>;

auto Fail(const std::string& file, const std::string& why) -> llvm::Error {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s: %s", file.c_str(), why.c_str());
}

auto OpenSslProblem() -> std::string {
  unsigned long code = ERR_get_error();
  ERR_clear_error();
  if (code == 0) return "OpenSSL failed";
  std::array<char, 256> text{};
  ERR_error_string_n(code, text.data(), text.size());
  return text.data();
}

void PutU32(uint8_t* out, uint32_t v) {
  for (size_t k = 0; k < 4; ++k) out[k] = static_cast<uint8_t>(v >> (8 * k));
}

auto GetU32(const uint8_t* in) -> uint32_t {
  return static_cast<uint32_t>(in[0]) | static_cast<uint32_t>(in[1]) << 8 | static_cast<uint32_t>(in[2]) << 16 |
         static_cast<uint32_t>(in[3]) << 24;
}

auto ChunkCount(uint64_t plaintext_bytes, uint32_t chunk_bytes) -> uint64_t {
  return plaintext_bytes == 0 ? 1 : (plaintext_bytes + chunk_bytes - 1) / chunk_bytes;
}

auto NewCipher(const Key& key, bool encrypt) -> llvm::Expected<CipherCtx> {
  CipherCtx ctx(EVP_CIPHER_CTX_new(), &EVP_CIPHER_CTX_free);
  if (!ctx ||
      EVP_CipherInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, key.bytes().data(), nullptr, encrypt ? 1 : 0) != 1) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "cannot set up AES-256-GCM: %s",
                                   OpenSslProblem().c_str());
  }
  return ctx;
}

// Starts one GCM message: IV and additional data of chunk `index`.
auto Begin(EVP_CIPHER_CTX* ctx, const Header& header, uint32_t index, Kind kind, const std::string& context) -> bool {
  std::array<uint8_t, kNonceBytes + 4> iv{};
  std::copy_n(header.begin() + kNonceAt, kNonceBytes, iv.begin());
  PutU32(iv.data() + kNonceBytes, index);
  std::array<uint8_t, kBoundHeaderBytes + 5> aad{};
  std::copy_n(header.begin(), kBoundHeaderBytes, aad.begin());
  PutU32(aad.data() + kBoundHeaderBytes, index);
  aad[kBoundHeaderBytes + 4] = static_cast<uint8_t>(kind);
  int n = 0;
  if (EVP_CipherInit_ex(ctx, nullptr, nullptr, nullptr, iv.data(), -1) != 1) return false;
  if (EVP_CipherUpdate(ctx, nullptr, &n, aad.data(), static_cast<int>(aad.size())) != 1) return false;
  auto* text = reinterpret_cast<const uint8_t*>(context.data());
  return context.empty() || EVP_CipherUpdate(ctx, nullptr, &n, text, static_cast<int>(context.size())) == 1;
}

// Encrypts `size` bytes in place and writes their 16-byte tag after them.
auto SealChunk(EVP_CIPHER_CTX* ctx, const Header& header, uint32_t index, Kind kind, const std::string& context,
               uint8_t* data, size_t size) -> bool {
  int n = 0;
  if (!Begin(ctx, header, index, kind, context)) return false;
  if (size > 0 && EVP_CipherUpdate(ctx, data, &n, data, static_cast<int>(size)) != 1) return false;
  if (EVP_CipherFinal_ex(ctx, data + size, &n) != 1) return false;
  return EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, kSealedTagBytes, data + size) == 1;
}

// Decrypts `size` bytes of ciphertext, followed by their tag, into `out`;
// false when the tag does not match.
auto OpenChunk(EVP_CIPHER_CTX* ctx, const Header& header, uint32_t index, Kind kind, const std::string& context,
               const uint8_t* in, size_t size, uint8_t* out) -> bool {
  int n = 0;
  std::array<uint8_t, kSealedTagBytes> tag{};
  std::copy_n(in + size, kSealedTagBytes, tag.begin());
  bool ok = Begin(ctx, header, index, kind, context) &&
            (size == 0 || EVP_CipherUpdate(ctx, out, &n, in, static_cast<int>(size)) == 1) &&
            EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, kSealedTagBytes, tag.data()) == 1 &&
            EVP_CipherFinal_ex(ctx, out + size, &n) == 1;
  ERR_clear_error();
  return ok;
}

auto CheckChunkBytes(uint32_t chunk_bytes) -> std::optional<std::string> {
  if (chunk_bytes >= 1 && chunk_bytes <= kMaxChunkBytes) return std::nullopt;
  return fmt::format("chunk size {} is outside 1..{}", chunk_bytes, kMaxChunkBytes);
}

auto WriteFully(int fd, const uint8_t* data, size_t size) -> int {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    data += n, size -= static_cast<size_t>(n);
  }
  return 0;
}

// The bytes read: fewer than `size` only at the end of the file.
auto ReadFully(int fd, uint8_t* data, size_t size, int& error) -> size_t {
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::read(fd, data + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      error = errno;
      return done;
    }
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  return done;
}

}  // namespace

auto IsSealed(llvm::ArrayRef<uint8_t> first_bytes) -> bool {
  return first_bytes.size() >= kMagic.size() && std::equal(kMagic.begin(), kMagic.end(), first_bytes.begin());
}

auto SealedFileSize(uint64_t plaintext_bytes, uint32_t chunk_bytes) -> uint64_t {
  return kSealedHeaderBytes + plaintext_bytes + kSealedTagBytes * ChunkCount(plaintext_bytes, chunk_bytes);
}

auto SealedPlaintextSize(uint64_t file_bytes, uint32_t chunk_bytes) -> std::optional<uint64_t> {
  if (chunk_bytes == 0 || file_bytes < kSealedHeaderBytes + kSealedTagBytes) return std::nullopt;
  uint64_t body = file_bytes - kSealedHeaderBytes, record = uint64_t{chunk_bytes} + kSealedTagBytes;
  uint64_t whole = body / record, rest = body % record;
  if (rest == 0) return body - kSealedTagBytes * whole;
  if (whole == 0 && rest == kSealedTagBytes) return 0;
  if (rest > kSealedTagBytes) return body - kSealedTagBytes * (whole + 1);
  return std::nullopt;
}

// ---------------------------------------------------------------- writer

struct SealedWriter::State {
  CipherCtx cipher{nullptr, &EVP_CIPHER_CTX_free};
  int fd = -1;
  bool owns_fd = false;
  std::string name, context;
  Header header{};
  uint32_t chunk_bytes = 0;
  std::vector<uint8_t> chunk;  // chunk_bytes + a tag
  size_t filled = 0;
  uint32_t next_index = 0;
  uint64_t plaintext = 0;
  enum class Phase { Writing, Finished, Failed } phase = Phase::Writing;

  ~State() {
    if (owns_fd && fd >= 0) ::close(fd);
  }

  auto Emit(Kind kind) -> llvm::Error {
    if (next_index == kMaxChunks) {
      phase = Phase::Failed;
      return Fail(name, fmt::format("more than {} chunks of {} bytes: use larger chunks", kMaxChunks, chunk_bytes));
    }
    if (!SealChunk(cipher.get(), header, next_index, kind, context, chunk.data(), filled)) {
      phase = Phase::Failed;
      return Fail(name, "cannot encrypt: " + OpenSslProblem());
    }
    if (int error = WriteFully(fd, chunk.data(), filled + kSealedTagBytes)) {
      phase = Phase::Failed;
      return Fail(name, std::string("cannot write: ") + std::strerror(error));
    }
    filled = 0;
    ++next_index;
    return llvm::Error::success();
  }
};

SealedWriter::SealedWriter(std::unique_ptr<State> state) : state_(std::move(state)) {}
SealedWriter::SealedWriter(SealedWriter&&) noexcept = default;
auto SealedWriter::operator=(SealedWriter&&) noexcept -> SealedWriter& = default;
SealedWriter::~SealedWriter() = default;

auto SealedWriter::Open(const Key& key, int fd, std::string name, std::string context, uint32_t chunk_bytes)
    -> llvm::Expected<SealedWriter> {
  if (std::optional<std::string> problem = CheckChunkBytes(chunk_bytes)) return Fail(name, *problem);
  auto state = std::make_unique<State>();
  llvm::Expected<CipherCtx> cipher = NewCipher(key, /*encrypt=*/true);
  if (!cipher) return Fail(name, llvm::toString(cipher.takeError()));
  state->cipher = std::move(*cipher);
  state->fd = fd, state->name = std::move(name), state->context = std::move(context);
  state->chunk_bytes = chunk_bytes;
  Header& h = state->header;
  std::copy(kMagic.begin(), kMagic.end(), h.begin());
  PutU32(h.data() + 4, kSealedVersion);
  PutU32(h.data() + 8, chunk_bytes);
  if (RAND_bytes(h.data() + kNonceAt, kNonceBytes) != 1) {
    return Fail(state->name, "cannot draw the file's nonce: " + OpenSslProblem());
  }
  if (!SealChunk(state->cipher.get(), h, kHeaderIndex, Kind::Header, state->context, h.data() + kBoundHeaderBytes, 0)) {
    return Fail(state->name, "cannot encrypt: " + OpenSslProblem());
  }
  if (int error = WriteFully(fd, h.data(), h.size())) {
    return Fail(state->name, std::string("cannot write: ") + std::strerror(error));
  }
  state->chunk.resize(size_t{chunk_bytes} + kSealedTagBytes);
  return SealedWriter(std::move(state));
}

auto SealedWriter::Create(const Key& key, const std::string& path, std::string context, uint32_t chunk_bytes)
    -> llvm::Expected<SealedWriter> {
  int fd = -1;
  do fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  while (fd < 0 && errno == EINTR);
  if (fd < 0) return Fail(path, std::string("cannot create it: ") + std::strerror(errno));
  llvm::Expected<SealedWriter> writer = Open(key, fd, path, std::move(context), chunk_bytes);
  if (!writer) {
    ::close(fd);
    return writer.takeError();
  }
  writer->state_->owns_fd = true;
  return writer;
}

auto SealedWriter::Write(llvm::ArrayRef<uint8_t> bytes) -> llvm::Error {
  State& s = *state_;
  if (s.phase != State::Phase::Writing) {
    return Fail(s.name, s.phase == State::Phase::Finished ? "written after Finish()" : "written after a failed write");
  }
  while (!bytes.empty()) {
    // A full chunk waits for more bytes: only then is it known not to be the last.
    if (s.filled == s.chunk_bytes) {
      if (llvm::Error e = s.Emit(Kind::Chunk)) return e;
    }
    size_t take = std::min(bytes.size(), size_t{s.chunk_bytes} - s.filled);
    std::copy_n(bytes.begin(), take, s.chunk.begin() + static_cast<ptrdiff_t>(s.filled));
    s.filled += take, s.plaintext += take;
    bytes = bytes.drop_front(take);
  }
  return llvm::Error::success();
}

auto SealedWriter::Finish() -> llvm::Error {
  State& s = *state_;
  if (s.phase != State::Phase::Writing) {
    return Fail(s.name, s.phase == State::Phase::Finished ? "finished twice" : "finished after a failed write");
  }
  if (llvm::Error e = s.Emit(Kind::Last)) return e;
  s.phase = State::Phase::Finished;
  if (!s.owns_fd) return llvm::Error::success();
  int fd = s.fd;
  s.fd = -1;
  if (::fsync(fd) != 0) {
    int error = errno;
    ::close(fd);
    return Fail(s.name, std::string("cannot sync it to disk: ") + std::strerror(error));
  }
  if (::close(fd) != 0) return Fail(s.name, std::string("cannot close it: ") + std::strerror(errno));
  return llvm::Error::success();
}

auto SealedWriter::plaintext_bytes() const -> uint64_t { return state_->plaintext; }

// ---------------------------------------------------------------- reader

struct SealedReader::State {
  explicit State(io::RegularFile f) : file(std::move(f)) {}

  io::RegularFile file;
  CipherCtx cipher{nullptr, &EVP_CIPHER_CTX_free};
  std::string path, context;
  Header header{};
  uint32_t chunk_bytes = 0;
  uint64_t plaintext = 0, chunks = 0, next_index = 0;
  std::vector<uint8_t> sealed, plain;  // one chunk as read, and its plaintext
  size_t pos = 0, end = 0;             // the part of `plain` not handed out yet
  bool failed = false;

  auto ReadHeader() -> llvm::Error;
  auto CheckHeader(const Key& key) -> llvm::Error;
  auto NextChunk() -> llvm::Error;
  auto ChunkFailure(uint64_t index, size_t size) -> llvm::Error;
};

auto SealedReader::State::ReadHeader() -> llvm::Error {
  int error = 0;
  size_t got = ReadFully(file.fd(), header.data(), header.size(), error);
  if (error != 0) return Fail(path, std::string("cannot read it: ") + std::strerror(error));
  if (!IsSealed(llvm::ArrayRef<uint8_t>(header.data(), got))) {
    if (got < kMagic.size()) {
      return Fail(path, fmt::format("{} bytes, too short for a sealed file (they start with \"AVFE\")", got));
    }
    return Fail(path, "not a sealed file (it does not start with \"AVFE\"): it is not encrypted");
  }
  if (got < header.size()) {
    return Fail(path, fmt::format("truncated: {} bytes, shorter than the {}-byte header of a sealed file", got,
                                  kSealedHeaderBytes));
  }
  if (uint32_t version = GetU32(header.data() + 4); version != kSealedVersion) {
    return Fail(path,
                fmt::format("sealed-file format version {}; this reader knows version {}", version, kSealedVersion));
  }
  chunk_bytes = GetU32(header.data() + 8);
  if (std::optional<std::string> problem = CheckChunkBytes(chunk_bytes)) {
    return Fail(path, "corrupted header: " + *problem);
  }
  return llvm::Error::success();
}

auto SealedReader::State::CheckHeader(const Key& key) -> llvm::Error {
  llvm::Expected<CipherCtx> made = NewCipher(key, /*encrypt=*/false);
  if (!made) return Fail(path, llvm::toString(made.takeError()));
  cipher = std::move(*made);
  uint8_t none = 0;
  if (!OpenChunk(cipher.get(), header, kHeaderIndex, Kind::Header, context, header.data() + kBoundHeaderBytes, 0,
                 &none)) {
    return Fail(path, fmt::format("wrong key or corrupted data: the header does not authenticate with this key and "
                                  "the context \"{}\" (another key file, a file sealed under another name, or a "
                                  "corrupted header)",
                                  context));
  }
  std::optional<uint64_t> size = SealedPlaintextSize(file.size(), chunk_bytes);
  if (!size) {
    return Fail(path, fmt::format("truncated inside a chunk: the {} bytes after the header are not whole chunks of "
                                  "up to {} bytes, each followed by a {}-byte tag",
                                  file.size() - kSealedHeaderBytes, chunk_bytes, kSealedTagBytes));
  }
  plaintext = *size;
  chunks = ChunkCount(plaintext, chunk_bytes);
  if (chunks > kMaxChunks) return Fail(path, fmt::format("{} chunks, more than a sealed file holds", chunks));
  return llvm::Error::success();
}

auto SealedReader::State::NextChunk() -> llvm::Error {
  uint64_t index = next_index;
  bool last = index + 1 == chunks;
  size_t size = last ? static_cast<size_t>(plaintext - index * chunk_bytes) : chunk_bytes;
  int error = 0;
  size_t got = ReadFully(file.fd(), sealed.data(), size + kSealedTagBytes, error);
  if (error != 0) return Fail(path, std::string("cannot read it: ") + std::strerror(error));
  if (got < size + kSealedTagBytes) {
    return Fail(path, fmt::format("truncated while being read: the file ends inside chunk {} of {}", index, chunks));
  }
  auto i = static_cast<uint32_t>(index);
  if (!OpenChunk(cipher.get(), header, i, last ? Kind::Last : Kind::Chunk, context, sealed.data(), size,
                 plain.data())) {
    return ChunkFailure(index, size);
  }
  pos = 0, end = size;
  ++next_index;
  return llvm::Error::success();
}

auto SealedReader::State::ChunkFailure(uint64_t index, size_t size) -> llvm::Error {
  std::fill(plain.begin(), plain.end(), 0);
  auto i = static_cast<uint32_t>(index);
  if (index + 1 < chunks) {
    if (OpenChunk(cipher.get(), header, i, Kind::Last, context, sealed.data(), size, plain.data())) {
      std::fill(plain.begin(), plain.end(), 0);
      return Fail(path, fmt::format("{} bytes follow chunk {}, the last one written: something was appended",
                                    file.size() - kSealedHeaderBytes - (index + 1) * (size + kSealedTagBytes), index));
    }
    return Fail(path, fmt::format("corrupted data: chunk {} of {} does not authenticate (its bytes changed, or "
                                  "chunks were reordered or taken from another file)",
                                  index, chunks));
  }
  if (OpenChunk(cipher.get(), header, i, Kind::Chunk, context, sealed.data(), size, plain.data())) {
    std::fill(plain.begin(), plain.end(), 0);
    return Fail(path, fmt::format("truncated: the file ends after chunk {}, which was not the last one written "
                                  "(the chunks after it are missing, or the writer never finished)",
                                  index));
  }
  return Fail(path, fmt::format("corrupted data: chunk {} of {}, the last, does not authenticate (its bytes "
                                "changed, or the file was truncated inside it)",
                                index, chunks));
}

SealedReader::SealedReader(std::unique_ptr<State> state) : state_(std::move(state)) {}
SealedReader::SealedReader(SealedReader&&) noexcept = default;
auto SealedReader::operator=(SealedReader&&) noexcept -> SealedReader& = default;
SealedReader::~SealedReader() = default;

auto SealedReader::Open(const Key& key, const std::string& path, std::string context) -> llvm::Expected<SealedReader> {
  llvm::Expected<io::RegularFile> file = io::RegularFile::Open(path);
  if (!file) return Fail(path, llvm::toString(file.takeError()));
  auto state = std::make_unique<State>(std::move(*file));
  state->path = path, state->context = std::move(context);
  if (llvm::Error e = state->ReadHeader()) return e;
  if (llvm::Error e = state->CheckHeader(key)) return e;
  state->sealed.resize(size_t{state->chunk_bytes} + kSealedTagBytes);
  state->plain.resize(state->sealed.size());
  return SealedReader(std::move(state));
}

auto SealedReader::Read(llvm::MutableArrayRef<uint8_t> out) -> llvm::Expected<size_t> {
  State& s = *state_;
  if (s.failed) return Fail(s.path, "read after a failed read");
  size_t copied = 0;
  while (copied < out.size()) {
    if (s.pos == s.end) {
      if (s.next_index == s.chunks) break;
      if (llvm::Error e = s.NextChunk()) {
        s.failed = true;
        return e;
      }
      continue;
    }
    size_t take = std::min(out.size() - copied, s.end - s.pos);
    std::copy_n(s.plain.begin() + static_cast<ptrdiff_t>(s.pos), take, out.begin() + copied);
    s.pos += take, copied += take;
  }
  return copied;
}

auto SealedReader::Seek(uint64_t offset) -> llvm::Error {
  State& s = *state_;
  if (s.failed) return Fail(s.path, "seek after a failed read");
  if (offset > s.plaintext) {
    return Fail(s.path, fmt::format("offset {} is past the end of its {} plaintext bytes", offset, s.plaintext));
  }
  uint64_t index = offset / s.chunk_bytes;
  auto at = static_cast<off_t>(kSealedHeaderBytes + index * (uint64_t{s.chunk_bytes} + kSealedTagBytes));
  if (lseek(s.file.fd(), at, SEEK_SET) != at) return Fail(s.path, std::string("cannot seek: ") + std::strerror(errno));
  s.next_index = index, s.pos = 0, s.end = 0;
  if (offset % s.chunk_bytes == 0 || index == s.chunks) return llvm::Error::success();
  if (llvm::Error e = s.NextChunk()) {
    s.failed = true;
    return e;
  }
  s.pos = static_cast<size_t>(offset % s.chunk_bytes);
  return llvm::Error::success();
}

auto SealedReader::ReadAll() -> llvm::Expected<std::vector<uint8_t>> {
  State& s = *state_;
  uint64_t consumed = std::min(s.next_index * s.chunk_bytes, s.plaintext) - (s.end - s.pos);
  std::vector<uint8_t> all(static_cast<size_t>(s.plaintext - consumed));
  llvm::Expected<size_t> got = Read(all);
  if (!got) return got.takeError();
  // The end: an empty file still has its last chunk to authenticate.
  uint8_t more = 0;
  llvm::Expected<size_t> extra = Read(llvm::MutableArrayRef<uint8_t>(&more, 1));
  if (!extra) return extra.takeError();
  return all;
}

auto SealedReader::plaintext_bytes() const -> uint64_t { return state_->plaintext; }
auto SealedReader::chunk_bytes() const -> uint32_t { return state_->chunk_bytes; }

}  // namespace avf::crypto

// runtime/crypto: SHA-256 against the FIPS 180-2 vectors, key files, and
// sealed files: round trips and every way a file can be damaged or misused.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "crypto/key_file.h"
#include "crypto/sealed_stream.h"
#include "crypto/sha256.h"
#include "temp_dir.h"

namespace avf::crypto {
namespace {

using avf::testing::TempDir;

constexpr uint32_t kChunk = 16;

auto Bytes(const std::string& text) -> std::vector<uint8_t> { return {text.begin(), text.end()}; }

void WriteFile(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

auto ReadFile(const std::string& path) -> std::vector<uint8_t> {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Bytes that differ from chunk to chunk, so a swapped chunk is a real change.
auto Pattern(size_t size, uint32_t seed = 1) -> std::vector<uint8_t> {
  std::vector<uint8_t> bytes(size);
  uint32_t x = seed * 2654435761u + 12345;
  for (uint8_t& b : bytes) {
    x = x * 1664525u + 1013904223u;
    b = static_cast<uint8_t>(x >> 24);
  }
  return bytes;
}

auto MakeKey(uint8_t first) -> Key {
  std::vector<uint8_t> bytes(Key::kBytes);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(first + 7 * i);
  return *Key::FromBytes(bytes);
}

auto ErrorText(llvm::Error e) -> std::string { return e ? llvm::toString(std::move(e)) : "(no error)"; }

template <typename T>
auto ErrorText(llvm::Expected<T> value) -> std::string {
  return value ? "(no error)" : llvm::toString(value.takeError());
}

// ---------------------------------------------------------------- SHA-256

TEST(Sha256, FipsVectors) {
  Sha256 hash;
  hash.Update(llvm::StringRef("abc"));
  EXPECT_EQ(Hex(hash.Final()), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  hash.Update(llvm::StringRef("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"));
  EXPECT_EQ(Hex(hash.Final()), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(Hex(hash.Final()), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(Sha256, MillionAInOddPieces) {
  const std::string a(1000, 'a');
  Sha256 hash;
  size_t left = 1000000;
  for (size_t piece = 1; left > 0; piece = piece % 997 + 13) {
    size_t n = std::min({piece, left, a.size()});
    hash.Update(llvm::StringRef(a.data(), n));
    left -= n;
  }
  EXPECT_EQ(Hex(hash.Final()), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, ParseHex) {
  std::string hex = "BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD";
  std::optional<Digest> digest = ParseHex(hex);
  ASSERT_TRUE(digest);
  EXPECT_EQ(Hex(*digest), llvm::StringRef(hex).lower());
  EXPECT_FALSE(ParseHex(hex.substr(1)));
  EXPECT_FALSE(ParseHex(hex + "0"));
  EXPECT_FALSE(ParseHex(hex.substr(2) + "g0"));
  EXPECT_FALSE(ParseHex(hex.substr(1) + "\n"));
}

TEST(Sha256, File) {
  TempDir dir("avf-crypto");
  // Past one 4 MiB block, so the file is read in two.
  std::vector<uint8_t> bytes = Pattern((size_t{4} << 20) + 3);
  WriteFile(dir.path() + "/data", bytes);
  Sha256 hash;
  hash.Update(bytes);
  llvm::Expected<Digest> digest = Sha256File(dir.path() + "/data");
  ASSERT_TRUE(bool(digest)) << ErrorText(digest.takeError());
  EXPECT_EQ(*digest, hash.Final());

  WriteFile(dir.path() + "/empty", {});
  llvm::Expected<Digest> empty = Sha256File(dir.path() + "/empty");
  ASSERT_TRUE(bool(empty));
  EXPECT_EQ(Hex(*empty), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");

  EXPECT_EQ(ErrorText(Sha256File(dir.path() + "/missing")), dir.path() + "/missing: No such file or directory");
  EXPECT_EQ(ErrorText(Sha256File(dir.path())), dir.path() + ": it is a directory, not a regular file");
}

// ---------------------------------------------------------------- key files

class KeyFileTest : public ::testing::Test {
 protected:
  auto Read(const std::vector<uint8_t>& content) -> llvm::Expected<Key> {
    WriteFile(path_, content);
    return ReadKeyFile(path_);
  }
  TempDir dir_{"avf-crypto"};
  std::string path_ = dir_.path() + "/key";
};

TEST_F(KeyFileTest, RawAndHex) {
  std::vector<uint8_t> raw = Pattern(32);
  llvm::Expected<Key> key = Read(raw);
  ASSERT_TRUE(bool(key)) << ErrorText(key.takeError());
  EXPECT_EQ(key->bytes(), llvm::ArrayRef<uint8_t>(raw));

  std::string hex = "000102030405060708090a0b0c0d0e0f101112131415161718191A1B1C1D1E1F";
  for (const std::string& content : {hex, hex + "\n", hex + "\r\n"}) {
    llvm::Expected<Key> parsed = Read(Bytes(content));
    ASSERT_TRUE(bool(parsed)) << ErrorText(parsed.takeError());
    for (size_t i = 0; i < Key::kBytes; ++i) EXPECT_EQ(parsed->bytes()[i], i);
  }
}

TEST_F(KeyFileTest, WrongSizes) {
  std::string hint = "; a key is 32 raw bytes or 64 hex digits";
  for (size_t size : {0, 1, 31, 33, 63, 65, 67, 100000}) {
    std::string message = ErrorText(Read(std::vector<uint8_t>(size, 'x')));
    EXPECT_EQ(message.rfind("key file " + path_ + ": holds " + std::to_string(size) + " bytes" + hint, 0), 0u)
        << message;
  }
  std::string hex(64, 'a');
  EXPECT_NE(ErrorText(Read(Bytes(hex + "\n\n"))).find("holds 66 bytes"), std::string::npos);
  EXPECT_NE(ErrorText(Read(Bytes(hex + " "))).find("holds 65 bytes"), std::string::npos);
}

TEST_F(KeyFileTest, NotHexAndShortHex) {
  std::string secret = "s3cr3t" + std::string(58, 'z');
  std::string message = ErrorText(Read(Bytes(secret)));
  EXPECT_NE(message.find("not all hex digits"), std::string::npos) << message;
  EXPECT_EQ(message.find("s3cr3t"), std::string::npos) << "the key must not be printed: " << message;

  // What `openssl rand -hex 16`, without its newline, writes: 128 bits.
  message = ErrorText(Read(Bytes(std::string(32, 'f'))));
  EXPECT_NE(message.find("holds 32 hex digits, a 128-bit key"), std::string::npos) << message;
}

TEST_F(KeyFileTest, MissingDirectoryUnreadable) {
  EXPECT_EQ(ErrorText(ReadKeyFile(dir_.path() + "/none")),
            "key file " + dir_.path() + "/none: No such file or directory");
  EXPECT_EQ(ErrorText(ReadKeyFile(dir_.path())), "key file " + dir_.path() + ": it is a directory, not a regular file");
  WriteFile(path_, Pattern(32));
  ASSERT_EQ(::chmod(path_.c_str(), 0), 0);
  if (::geteuid() != 0) {
    EXPECT_EQ(ErrorText(ReadKeyFile(path_)), "key file " + path_ + ": Permission denied");
  }
  ASSERT_EQ(::mkfifo((dir_.path() + "/fifo").c_str(), 0600), 0);
  EXPECT_EQ(ErrorText(ReadKeyFile(dir_.path() + "/fifo")),
            "key file " + dir_.path() + "/fifo: it is a FIFO (named pipe), not a regular file");
}

// ---------------------------------------------------------------- sealed files

class SealedTest : public ::testing::Test {
 protected:
  // Seals `plain` into `path`, written in pieces of 1, 2, 3, ... bytes.
  void Seal(const std::string& path, const std::vector<uint8_t>& plain, const Key& key,
            const std::string& context = "rank_0000.bin", uint32_t chunk = kChunk) {
    llvm::Expected<SealedWriter> writer = SealedWriter::Create(key, path, context, chunk);
    ASSERT_TRUE(bool(writer)) << ErrorText(writer.takeError());
    llvm::ArrayRef<uint8_t> rest = plain;
    for (size_t piece = 1; !rest.empty(); ++piece) {
      size_t n = std::min(piece, rest.size());
      ASSERT_FALSE(bool(writer->Write(rest.take_front(n))));
      rest = rest.drop_front(n);
    }
    EXPECT_EQ(writer->plaintext_bytes(), plain.size());
    llvm::Error e = writer->Finish();
    ASSERT_FALSE(bool(e)) << ErrorText(std::move(e));
  }

  auto Unseal(const std::string& path, const Key& key, const std::string& context = "rank_0000.bin")
      -> llvm::Expected<std::vector<uint8_t>> {
    llvm::Expected<SealedReader> reader = SealedReader::Open(key, path, context);
    if (!reader) return reader.takeError();
    return reader->ReadAll();
  }

  // The file `bytes` is refused with a message containing `expected`.
  void ExpectRefused(const std::vector<uint8_t>& bytes, const std::string& expected, const Key& key,
                     const std::string& context = "rank_0000.bin") {
    WriteFile(damaged_, bytes);
    std::string message = ErrorText(Unseal(damaged_, key, context));
    EXPECT_EQ(message.rfind(damaged_ + ": ", 0), 0u) << message;
    EXPECT_NE(message.find(expected), std::string::npos) << "expected \"" << expected << "\" in: " << message;
  }

  // Where chunk i (ciphertext, then tag) starts in a file of kChunk chunks.
  static auto ChunkAt(size_t i) -> size_t { return kSealedHeaderBytes + i * (kChunk + kSealedTagBytes); }

  TempDir dir_{"avf-crypto"};
  std::string path_ = dir_.path() + "/sealed", damaged_ = dir_.path() + "/damaged";
  Key key_ = MakeKey(1);
};

TEST_F(SealedTest, RoundTrips) {
  for (size_t size : {size_t{0}, size_t{1}, size_t{kChunk - 1}, size_t{kChunk}, size_t{kChunk + 1},
                      size_t{3 * kChunk + 5}, size_t{1000}}) {
    std::vector<uint8_t> plain = Pattern(size);
    Seal(path_, plain, key_);
    std::vector<uint8_t> file = ReadFile(path_);
    EXPECT_TRUE(IsSealed(file));
    EXPECT_EQ(file.size(), SealedFileSize(size, kChunk)) << size;
    EXPECT_EQ(SealedPlaintextSize(file.size(), kChunk), size);
    llvm::Expected<std::vector<uint8_t>> back = Unseal(path_, key_);
    ASSERT_TRUE(bool(back)) << size << ": " << ErrorText(back.takeError());
    EXPECT_EQ(*back, plain) << size;
  }
  EXPECT_FALSE(IsSealed(Bytes("AVF")));
  EXPECT_FALSE(IsSealed(Bytes("AVFT....")));
}

TEST_F(SealedTest, ReadsInPiecesAndKnowsTheSizeFirst) {
  std::vector<uint8_t> plain = Pattern(5 * kChunk + 7);
  Seal(path_, plain, key_);
  llvm::Expected<SealedReader> reader = SealedReader::Open(key_, path_, "rank_0000.bin");
  ASSERT_TRUE(bool(reader)) << ErrorText(reader.takeError());
  EXPECT_EQ(reader->plaintext_bytes(), plain.size());
  EXPECT_EQ(reader->chunk_bytes(), kChunk);
  std::vector<uint8_t> back(3);
  llvm::Expected<size_t> got = reader->Read(back);
  ASSERT_TRUE(got && *got == 3);
  std::vector<uint8_t> piece(kChunk + 3);
  while (true) {
    got = reader->Read(piece);
    ASSERT_TRUE(bool(got)) << ErrorText(got.takeError());
    if (*got == 0) break;
    back.insert(back.end(), piece.begin(), piece.begin() + static_cast<ptrdiff_t>(*got));
  }
  EXPECT_EQ(back, plain);
  got = reader->Read(piece);
  EXPECT_TRUE(got && *got == 0);
}

// Random access: every offset, read on from there, gives the plaintext's bytes.
TEST_F(SealedTest, SeeksAnywhere) {
  std::vector<uint8_t> plain = Pattern(3 * kChunk + 5);
  Seal(path_, plain, key_);
  llvm::Expected<SealedReader> reader = SealedReader::Open(key_, path_, "rank_0000.bin");
  ASSERT_TRUE(bool(reader)) << ErrorText(reader.takeError());
  for (size_t offset : {size_t{0}, size_t{1}, size_t{kChunk - 1}, size_t{kChunk}, size_t{2 * kChunk + 3},
                        size_t{3 * kChunk + 4}, plain.size()}) {
    ASSERT_FALSE(bool(reader->Seek(offset))) << offset;
    std::vector<uint8_t> piece(std::min<size_t>(kChunk + 2, plain.size() - offset));
    llvm::Expected<size_t> got = reader->Read(piece);
    ASSERT_TRUE(got && *got == piece.size()) << offset;
    EXPECT_TRUE(std::equal(piece.begin(), piece.end(), plain.begin() + static_cast<ptrdiff_t>(offset))) << offset;
  }
  EXPECT_NE(ErrorText(reader->Seek(plain.size() + 1)).find("is past the end of its"), std::string::npos);
}

TEST_F(SealedTest, DefaultChunkSizeAndFd) {
  std::vector<uint8_t> plain = Pattern(kDefaultChunkBytes + 1);
  int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  llvm::Expected<SealedWriter> writer = SealedWriter::Open(key_, fd, "to fd", "ctx");
  ASSERT_TRUE(bool(writer)) << ErrorText(writer.takeError());
  ASSERT_FALSE(bool(writer->Write(plain)));
  ASSERT_FALSE(bool(writer->Finish()));
  EXPECT_EQ(::fsync(fd), 0);
  EXPECT_EQ(::close(fd), 0);
  EXPECT_EQ(ReadFile(path_).size(), SealedFileSize(plain.size(), kDefaultChunkBytes));
  llvm::Expected<std::vector<uint8_t>> back = Unseal(path_, key_, "ctx");
  ASSERT_TRUE(bool(back)) << ErrorText(back.takeError());
  EXPECT_TRUE(*back == plain);
}

TEST_F(SealedTest, WrongKeyAndWrongContext) {
  Seal(path_, Pattern(3 * kChunk + 5), key_);
  std::vector<uint8_t> file = ReadFile(path_);
  ExpectRefused(file, "wrong key or corrupted data: the header does not authenticate", MakeKey(2));
  ExpectRefused(file, "the context \"rank_0001.bin\"", key_, "rank_0001.bin");
}

TEST_F(SealedTest, EveryFlippedByteIsRefused) {
  Seal(path_, Pattern(3 * kChunk + 5), key_);
  const std::vector<uint8_t> file = ReadFile(path_);
  for (size_t at = 0; at < file.size(); ++at) {
    std::vector<uint8_t> bad = file;
    bad[at] ^= 0x20;
    WriteFile(damaged_, bad);
    EXPECT_FALSE(bool(Unseal(damaged_, key_))) << "a flipped byte " << at << " was not noticed";
  }
  std::vector<uint8_t> bad = file;
  bad[0] = 'X';
  ExpectRefused(bad, "not a sealed file", key_);
  bad = file, bad[4] = 2;
  ExpectRefused(bad, "sealed-file format version 2; this reader knows version 1", key_);
  bad = file, bad[14] ^= 1;  // the nonce
  ExpectRefused(bad, "the header does not authenticate", key_);
  bad = file, bad[30] ^= 1;  // the header's tag
  ExpectRefused(bad, "the header does not authenticate", key_);
  bad = file, bad[ChunkAt(1) + 3] ^= 1;  // chunk 1's ciphertext
  ExpectRefused(bad, "corrupted data: chunk 1 of 4 does not authenticate", key_);
  bad = file, bad[ChunkAt(2) + kChunk + 5] ^= 1;  // chunk 2's tag
  ExpectRefused(bad, "corrupted data: chunk 2 of 4 does not authenticate", key_);
  bad = file, bad[file.size() - 1] ^= 1;  // the last chunk's tag
  ExpectRefused(bad, "chunk 3 of 4, the last, does not authenticate", key_);
}

TEST_F(SealedTest, Truncated) {
  Seal(path_, Pattern(3 * kChunk + 5), key_);
  const std::vector<uint8_t> file = ReadFile(path_);
  auto cut = [&](size_t size) {
    return std::vector<uint8_t>(file.begin(), file.begin() + static_cast<ptrdiff_t>(size));
  };
  ExpectRefused(cut(ChunkAt(3)), "truncated: the file ends after chunk 2, which was not the last one written", key_);
  ExpectRefused(cut(ChunkAt(1)), "truncated: the file ends after chunk 0", key_);
  ExpectRefused(cut(ChunkAt(3) + 3), "truncated inside a chunk", key_);
  ExpectRefused(cut(ChunkAt(2) + kChunk), "truncated inside a chunk", key_);
  ExpectRefused(cut(ChunkAt(0)), "truncated inside a chunk", key_);
  ExpectRefused(cut(kSealedHeaderBytes - 1), "truncated: 35 bytes, shorter than the 36-byte header", key_);
  ExpectRefused(cut(2), "2 bytes, too short for a sealed file", key_);
  for (size_t size = 0; size < file.size(); ++size) {
    WriteFile(damaged_, cut(size));
    std::string message = ErrorText(Unseal(damaged_, key_));
    EXPECT_TRUE(message.find("truncated") != std::string::npos || message.find("too short") != std::string::npos)
        << size << ": " << message;
  }
}

TEST_F(SealedTest, UnfinishedWriterReadsAsTruncated) {
  {
    llvm::Expected<SealedWriter> writer = SealedWriter::Create(key_, path_, "rank_0000.bin", kChunk);
    ASSERT_TRUE(bool(writer));
    ASSERT_FALSE(bool(writer->Write(Pattern(2 * kChunk))));
  }
  ExpectRefused(ReadFile(path_), "truncated: the file ends after chunk 0", key_);
}

TEST_F(SealedTest, SwappedAndForeignChunks) {
  Seal(path_, Pattern(3 * kChunk + 5), key_);
  const std::vector<uint8_t> file = ReadFile(path_);
  const size_t record = kChunk + kSealedTagBytes;
  std::vector<uint8_t> swapped = file;
  std::swap_ranges(swapped.begin() + ChunkAt(0), swapped.begin() + ChunkAt(1), swapped.begin() + ChunkAt(1));
  ExpectRefused(swapped, "corrupted data: chunk 0 of 4 does not authenticate", key_);

  // The same plaintext, key and context: only the file's nonce differs.
  std::string other = dir_.path() + "/other";
  Seal(other, Pattern(3 * kChunk + 5), key_);
  std::vector<uint8_t> foreign = file, other_file = ReadFile(other);
  std::copy_n(other_file.begin() + ChunkAt(1), record, foreign.begin() + ChunkAt(1));
  ExpectRefused(foreign, "corrupted data: chunk 1 of 4 does not authenticate", key_);
  // Another file's header in front of this file's chunks.
  std::copy_n(other_file.begin(), kSealedHeaderBytes, foreign.begin());
  ExpectRefused(foreign, "chunk 0 of 4 does not authenticate", key_);
}

TEST_F(SealedTest, ExtraBytes) {
  Seal(path_, Pattern(2 * kChunk), key_);
  std::vector<uint8_t> file = ReadFile(path_), more = file;
  more.push_back(0);
  ExpectRefused(more, "truncated inside a chunk", key_);
  more.insert(more.end(), kSealedTagBytes, 0);
  ExpectRefused(more, "17 bytes follow chunk 1, the last one written: something was appended", key_);
}

TEST_F(SealedTest, NotSealedMissingAndMisuse) {
  WriteFile(path_, Bytes("{\"step\": 100}"));
  ExpectRefused(ReadFile(path_), "not a sealed file (it does not start with \"AVFE\"): it is not encrypted", key_);
  EXPECT_EQ(ErrorText(SealedReader::Open(key_, dir_.path() + "/none", "x")),
            dir_.path() + "/none: No such file or directory");
  EXPECT_EQ(ErrorText(SealedWriter::Create(key_, dir_.path() + "/no/such", "x")),
            dir_.path() + "/no/such: cannot create it: No such file or directory");
  EXPECT_EQ(ErrorText(SealedWriter::Create(key_, path_, "x", 0)), path_ + ": chunk size 0 is outside 1..67108864");

  llvm::Expected<SealedWriter> writer = SealedWriter::Create(key_, path_, "x", kChunk);
  ASSERT_TRUE(bool(writer));
  ASSERT_FALSE(bool(writer->Finish()));
  EXPECT_EQ(ErrorText(writer->Write(Bytes("late"))), path_ + ": written after Finish()");
  EXPECT_EQ(ErrorText(writer->Finish()), path_ + ": finished twice");

  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ::close(fds[0]);
  // A reader gone: write() fails with EPIPE (SIGPIPE is ignored for the test).
  auto old = ::signal(SIGPIPE, SIG_IGN);
  llvm::Expected<SealedWriter> broken = SealedWriter::Open(key_, fds[1], "pipe", "x", kChunk);
  ::signal(SIGPIPE, old);
  ::close(fds[1]);
  EXPECT_EQ(ErrorText(std::move(broken)), "pipe: cannot write: Broken pipe");
}

}  // namespace
}  // namespace avf::crypto

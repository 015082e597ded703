// safetensors files (runtime/interop/safetensors.h): F32 and BF16 round
// trips bit for bit, the bytes of the format's own examples, F16 read, and
// every malformed file refused with a message naming the file and the problem.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include "interop/elements.h"
#include "interop/safetensors.h"
#include "numeric/bf16.h"
#include "temp_dir.h"

namespace avf::interop {
namespace {

using testing::TempDir;

auto Bits(const std::vector<float>& v) -> std::vector<uint32_t> {
  std::vector<uint32_t> bits;
  for (float f : v) bits.push_back(std::bit_cast<uint32_t>(f));
  return bits;
}

auto Slurp(const std::string& path) -> std::string {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

void Spill(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

auto LengthBytes(uint64_t n) -> std::string {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[static_cast<size_t>(i)] = static_cast<char>(n >> (8 * i));
  return s;
}

// A file of `header` (its length first) and `data_bytes` zero bytes.
auto Raw(const std::string& header, size_t data_bytes) -> std::string {
  return LengthBytes(header.size()) + header + std::string(data_bytes, '\0');
}

auto Special() -> std::vector<float> {
  float inf = std::numeric_limits<float>::infinity();
  return {0.0f, -0.0f, 1.0f, -2.5f, 3.14159265f, 1e-42f, inf, -inf, std::nanf(""), 65504.0f, 1e30f, -7e-20f};
}

TEST(Safetensors, F32RoundTripIsBitwise) {
  TempDir dir("avf-interop");
  std::string path = dir.path() + "/a.safetensors";
  std::vector<HostTensor> tensors{
      {"matrix", {3, 4}, Special()}, {"vector", {5}, {1, 2, 3, 4, 5}}, {"scalar", {}, {42.0f}}, {"empty", {0, 3}, {}}};
  ASSERT_FALSE(llvm::errorToBool(WriteSafetensors(path, tensors, Dtype::F32, {{"format", "pt"}, {"step", "7"}})));
  llvm::Expected<SafetensorsFile> file = ReadSafetensorsFile(path);
  ASSERT_TRUE(static_cast<bool>(file)) << llvm::toString(file.takeError());
  EXPECT_EQ(file->dtype, Dtype::F32);
  EXPECT_EQ(file->metadata, (std::map<std::string, std::string>{{"format", "pt"}, {"step", "7"}}));
  ASSERT_EQ(file->tensors.size(), tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {  // written in order, read in the order of the data
    EXPECT_EQ(file->tensors[i].name, tensors[i].name);
    EXPECT_EQ(file->tensors[i].shape, tensors[i].shape);
    EXPECT_EQ(Bits(file->tensors[i].data), Bits(tensors[i].data)) << tensors[i].name;
  }
  std::string bytes = Slurp(path);
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  EXPECT_EQ(n % 8, 0u) << "the data starts 8-byte aligned";
  EXPECT_EQ(bytes.size(), 8 + n + 4 * (12 + 5 + 1));
}

TEST(Safetensors, Bf16RoundsToNearestEven) {
  TempDir dir("avf-interop");
  std::string path = dir.path() + "/b.safetensors";
  std::vector<float> values = Special();
  values.push_back(std::bit_cast<float>(0x3f808000u));  // a tie: rounds to the even 0x3f80
  values.push_back(std::bit_cast<float>(0x3f818000u));  // a tie: rounds up to the even 0x3f82
  values.push_back(std::bit_cast<float>(0x3f808001u));  // above the tie: up
  ASSERT_FALSE(
      llvm::errorToBool(WriteSafetensors(path, {{"t", {static_cast<int64_t>(values.size())}, values}}, Dtype::BF16)));
  llvm::Expected<SafetensorsFile> file = ReadSafetensorsFile(path);
  ASSERT_TRUE(static_cast<bool>(file)) << llvm::toString(file.takeError());
  EXPECT_EQ(file->dtype, Dtype::BF16);
  ASSERT_EQ(file->tensors.size(), 1u);
  std::vector<float> rounded;
  for (float v : values) rounded.push_back(numeric::ToFloat(numeric::ToBf16(v)));
  EXPECT_EQ(Bits(file->tensors[0].data), Bits(rounded));
  size_t n = values.size();
  EXPECT_EQ(std::bit_cast<uint32_t>(file->tensors[0].data[n - 3]), 0x3f800000u);
  EXPECT_EQ(std::bit_cast<uint32_t>(file->tensors[0].data[n - 2]), 0x3f820000u);
  EXPECT_EQ(std::bit_cast<uint32_t>(file->tensors[0].data[n - 1]), 0x3f810000u);
  EXPECT_EQ(Slurp(path).size() % 2, 0u);
}

// The bytes of the format's own serialization examples.
TEST(Safetensors, WritesTheReferenceBytes) {
  TempDir dir("avf-interop");
  std::string path = dir.path() + "/r.safetensors";
  ASSERT_FALSE(llvm::errorToBool(WriteSafetensors(path, {{"attn.0", {1, 2, 3}, {0, 1, 2, 3, 4, 5}}}, Dtype::F32)));
  std::string header = R"({"attn.0":{"dtype":"F32","shape":[1,2,3],"data_offsets":[0,24]}})";
  ASSERT_EQ(header.size(), 64u);
  std::string data;
  for (float f : {0.0f, 1.0f, 2.0f, 3.0f, 4.0f, 5.0f}) data.append(reinterpret_cast<const char*>(&f), 4);
  EXPECT_EQ(Slurp(path), LengthBytes(64) + header + data);

  ASSERT_FALSE(llvm::errorToBool(WriteSafetensors(path, {}, Dtype::F32)));
  EXPECT_EQ(Slurp(path), LengthBytes(8) + "{}      ");
  ASSERT_FALSE(llvm::errorToBool(WriteSafetensors(path, {}, Dtype::F32, {{"framework", "pt"}})));
  EXPECT_EQ(Slurp(path), LengthBytes(40) + R"({"__metadata__":{"framework":"pt"}})" + "     ");
  llvm::Expected<SafetensorsFile> file = ReadSafetensorsFile(path);
  ASSERT_TRUE(static_cast<bool>(file)) << llvm::toString(file.takeError());
  EXPECT_TRUE(file->tensors.empty());
  EXPECT_EQ(file->metadata.at("framework"), "pt");
}

TEST(Safetensors, ReadsF16) {
  const std::vector<std::pair<uint16_t, float>> cases{{0x3c00, 1.0f},
                                                      {0xc000, -2.0f},
                                                      {0x7bff, 65504.0f},
                                                      {0x0001, std::ldexp(1.0f, -24)},
                                                      {0x03ff, std::ldexp(1023.0f, -24)},
                                                      {0x0400, std::ldexp(1.0f, -14)},
                                                      {0x8000, -0.0f},
                                                      {0x7c00, std::numeric_limits<float>::infinity()},
                                                      {0x3555, 0.333251953125f}};
  std::string data;
  for (const auto& [bits, value] : cases) data.append(reinterpret_cast<const char*>(&bits), 2);
  data.append("\x00\x7e", 2);  // a quiet NaN
  std::string header = R"({"h":{"dtype":"F16","shape":[10],"data_offsets":[0,20]}})";
  TempDir dir("avf-interop");
  std::string path = dir.path() + "/h.safetensors";
  Spill(path, LengthBytes(header.size()) + header + data);
  llvm::Expected<std::vector<HostTensor>> tensors = ReadSafetensors(path);
  ASSERT_TRUE(static_cast<bool>(tensors)) << llvm::toString(tensors.takeError());
  ASSERT_EQ(tensors->at(0).data.size(), 10u);
  for (size_t i = 0; i < cases.size(); ++i)
    EXPECT_EQ(std::bit_cast<uint32_t>(tensors->at(0).data[i]), std::bit_cast<uint32_t>(cases[i].second)) << i;
  EXPECT_TRUE(std::isnan(tensors->at(0).data[9]));
}

// Each malformed file is refused with its path and a message that contains `why`.
struct Malformed {
  const char* name;
  std::string bytes;
  const char* why;
};

auto MalformedFiles() -> std::vector<Malformed> {
  auto one = [](const std::string& entry, size_t data) { return Raw(R"({"t":)" + entry + "}", data); };
  std::string f32 = R"("dtype":"F32","shape":[2],)";
  return {
      {"empty", "", "too short"},
      {"short", "\x08\x00\x00", "too short"},
      {"length past the end", LengthBytes(100) + "{}", "runs past the end of the file"},
      {"length over the limit", LengthBytes(200'000'000) + "{}", "over the limit"},
      {"length near 2^64", LengthBytes(~uint64_t{0}) + "{}", "over the limit"},
      {"not an object", Raw("[1, 2]  ", 0), "does not start with '{'"},
      {"not JSON", Raw(R"({"t": )", 0), "not JSON"},
      {"not UTF-8", Raw("{\"\xff\xfe\": 1}", 0), "not UTF-8"},
      {"entry not an object", one("3", 0), "not an object with dtype"},
      {"no dtype", one(R"({"shape":[1],"data_offsets":[0,4]})", 4), "no \"dtype\""},
      {"dtype not a string", one(R"({"dtype":4,"shape":[1],"data_offsets":[0,4]})", 4), "not a string"},
      {"unknown dtype", one(R"({"dtype":"F33","shape":[1],"data_offsets":[0,4]})", 4), "unknown dtype \"F33\""},
      {"unsupported dtype", one(R"({"dtype":"I64","shape":[1],"data_offsets":[0,8]})", 8), "I64 is not supported"},
      {"no shape", one(R"({"dtype":"F32","data_offsets":[0,4]})", 4), "no \"shape\""},
      {"negative dim", one(R"({"dtype":"F32","shape":[-1],"data_offsets":[0,4]})", 4), "non-negative integer"},
      {"fractional dim", one(R"({"dtype":"F32","shape":[1.5],"data_offsets":[0,4]})", 4), "non-negative integer"},
      {"no offsets", one("{" + f32 + R"("x":1})", 8), "\"data_offsets\" is not [begin, end]"},
      {"three offsets", one("{" + f32 + R"("data_offsets":[0,4,8]})", 8), "\"data_offsets\" is not [begin, end]"},
      {"offsets reversed", one("{" + f32 + R"("data_offsets":[8,0]})", 8), "end before they begin"},
      {"size mismatch", one("{" + f32 + R"("data_offsets":[0,4]})", 4), "hold 4 bytes, but shape [2] of F32 takes 8"},
      {"overflow", one(R"({"dtype":"F32","shape":[4294967296,4294967296,4],"data_offsets":[0,0]})", 0), "overflows"},
      {"huge offsets", one("{" + f32 + R"("data_offsets":[18446744073709551608,18446744073709551616]})", 0),
       "\"data_offsets\" is not [begin, end]"},
      {"gap", Raw(R"({"a":{)" + f32 + R"("data_offsets":[0,8]},"b":{)" + f32 + R"("data_offsets":[12,20]}})", 20),
       "4 bytes of the data before tensor \"b\" belong to no tensor"},
      {"overlap", Raw(R"({"a":{)" + f32 + R"("data_offsets":[0,8]},"b":{)" + f32 + R"("data_offsets":[4,12]}})", 12),
       "tensor \"b\" (bytes [4, 12)) overlaps tensor \"a\" (bytes [0, 8))"},
      {"data truncated", one("{" + f32 + R"("data_offsets":[0,8]})", 5),
       "the tensors hold 8 bytes, but the file has 5"},
      {"data trailing", one("{" + f32 + R"("data_offsets":[0,8]})", 9), "the tensors hold 8 bytes, but the file has 9"},
      {"repeated name",
       Raw(R"({"a":{)" + f32 + R"("data_offsets":[0,8]}, "a" :{)" + f32 + R"("data_offsets":[8,16]}})", 16),
       "\"a\" appears twice"},
      {"repeated escaped name",
       Raw(R"({"a":{)" + f32 + R"("data_offsets":[0,8]},"\u0061":{)" + f32 + R"("data_offsets":[8,16]}})", 16),
       "\"a\" appears twice"},
      {"metadata not an object", Raw(R"({"__metadata__":[1]})", 0), "\"__metadata__\" is an array"},
      {"metadata value not a string", Raw(R"({"__metadata__":{"k":1}})", 0), "\"__metadata__\" \"k\" is a number"},
  };
}

TEST(Safetensors, RefusesEveryMalformedFile) {
  TempDir dir("avf-interop");
  for (const Malformed& m : MalformedFiles()) {
    std::string path = dir.path() + "/bad.safetensors";
    Spill(path, m.bytes);
    llvm::Expected<std::vector<HostTensor>> tensors = ReadSafetensors(path);
    ASSERT_FALSE(static_cast<bool>(tensors)) << m.name << ": read without an error";
    std::string message = llvm::toString(tensors.takeError());
    EXPECT_NE(message.find(path + ": "), std::string::npos) << m.name << ": " << message;
    EXPECT_NE(message.find(m.why), std::string::npos) << m.name << ": " << message;
  }
}

TEST(Safetensors, ErrorsShowTheStartOfALongName) {
  TempDir dir("avf-interop");
  std::string path = dir.path() + "/long.safetensors", name(100'000, 'n');
  Spill(path, Raw("{\"" + name + R"(":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8));
  llvm::Expected<std::vector<HostTensor>> tensors = ReadSafetensors(path);
  ASSERT_FALSE(static_cast<bool>(tensors));
  std::string message = llvm::toString(tensors.takeError());
  EXPECT_LT(message.size(), 400u);
  EXPECT_NE(message.find(std::string(200, 'n') + "...\" belong to no tensor"), std::string::npos) << message;
}

TEST(Safetensors, RefusesWhatIsNotARegularFile) {
  TempDir dir("avf-interop");
  std::string fifo = dir.path() + "/fifo.safetensors";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  for (const std::string& path : {dir.path(), fifo, dir.path() + "/missing.safetensors"}) {
    llvm::Expected<std::vector<HostTensor>> tensors = ReadSafetensors(path);
    ASSERT_FALSE(static_cast<bool>(tensors)) << path;
    EXPECT_NE(llvm::toString(tensors.takeError()).find(path + ": cannot open"), std::string::npos);
  }
}

TEST(Safetensors, WriterRefusesWhatItCannotWrite) {
  TempDir dir("avf-interop");
  std::string path = dir.path() + "/w.safetensors";
  struct Case {
    std::vector<HostTensor> tensors;
    Dtype dtype;
    const char* why;
  };
  const Case cases[] = {
      {{{"a", {1}, {1}}, {"a", {1}, {2}}}, Dtype::F32, "tensor \"a\" appears twice"},
      {{{"a", {2, 2}, {1, 2, 3}}}, Dtype::F32, "shape [2, 2] has 4 elements, the data 3"},
      {{{"a", {-1}, {}}}, Dtype::F32, "shape [-1] is not a tensor's"},
      {{{"", {1}, {1}}}, Dtype::F32, "the name must be non-empty"},
      {{{"__metadata__", {1}, {1}}}, Dtype::F32, "other than __metadata__"},
      {{{"\xff", {1}, {1}}}, Dtype::F32, "UTF-8"},
      {{{"a", {1}, {1}}}, Dtype::F16, "F16 is read, not written"},
  };
  for (const Case& c : cases) {
    llvm::Error err = WriteSafetensors(path, c.tensors, c.dtype);
    ASSERT_TRUE(static_cast<bool>(err)) << c.why;
    EXPECT_NE(llvm::toString(std::move(err)).find(c.why), std::string::npos) << c.why;
    EXPECT_FALSE(std::filesystem::exists(path));
  }
  llvm::Error err = WriteSafetensors(dir.path() + "/no/such/folder/x.safetensors", {}, Dtype::F32);
  ASSERT_TRUE(static_cast<bool>(err));
  EXPECT_NE(llvm::toString(std::move(err)).find("cannot create a temporary file"), std::string::npos);
}

TEST(Safetensors, WriteReplacesAtomically) {
  TempDir dir("avf-interop");
  std::string path = dir.path() + "/m.safetensors";
  ASSERT_FALSE(llvm::errorToBool(WriteSafetensors(path, {{"a", {2}, {1, 2}}}, Dtype::F32)));
  ASSERT_FALSE(llvm::errorToBool(WriteSafetensors(path, {{"b", {1}, {3}}}, Dtype::BF16)));
  llvm::Expected<std::vector<HostTensor>> tensors = ReadSafetensors(path);
  ASSERT_TRUE(static_cast<bool>(tensors)) << llvm::toString(tensors.takeError());
  ASSERT_EQ(tensors->size(), 1u);
  EXPECT_EQ(tensors->at(0).name, "b");
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) files += entry.is_regular_file();
  EXPECT_EQ(files, 1) << "no temporary file is left beside it";
}

TEST(Safetensors, HalfToFloatCoversEveryExponent) {
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    float f = HalfToFloat(static_cast<uint16_t>(bits));
    uint32_t exponent = (bits >> 10) & 0x1f, mantissa = bits & 0x3ff;
    if (exponent == 0x1f && mantissa != 0) {
      EXPECT_TRUE(std::isnan(f)) << bits;
      continue;
    }
    double magnitude = exponent == 0x1f ? INFINITY
                       : exponent == 0  ? std::ldexp(static_cast<double>(mantissa), -24)
                                        : std::ldexp(1.0 + mantissa / 1024.0, static_cast<int>(exponent) - 15);
    EXPECT_EQ(static_cast<double>(f), (bits & 0x8000) ? -magnitude : magnitude) << bits;
    EXPECT_EQ(std::signbit(f), (bits & 0x8000) != 0) << bits;
  }
}

}  // namespace
}  // namespace avf::interop

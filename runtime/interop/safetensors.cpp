#include "interop/safetensors.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <set>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <llvm/Support/JSON.h>
#include <llvm/Support/raw_ostream.h>

#include "interop/elements.h"
#include "interop/files.h"
#include "io/regular_file.h"

namespace avf::interop {

namespace {

auto Fail(const std::string& why) -> llvm::Error {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s", why.c_str());
}

// Elements converted per read or write: bounds the staging buffer.
constexpr size_t kChunkElements = size_t{1} << 20;

struct DtypeSpelling {
  const char* name;
  int64_t bytes;  // 0: a dtype of the format that the reader does not take
  Dtype dtype;
};
constexpr DtypeSpelling kDtypes[] = {
    {"F32", 4, Dtype::F32}, {"BF16", 2, Dtype::BF16}, {"F16", 2, Dtype::F16}, {"F64", 0, {}},
    {"I64", 0, {}},         {"U64", 0, {}},           {"I32", 0, {}},         {"U32", 0, {}},
    {"I16", 0, {}},         {"U16", 0, {}},           {"I8", 0, {}},          {"U8", 0, {}},
    {"BOOL", 0, {}},        {"F8_E5M2", 0, {}},       {"F8_E4M3", 0, {}},
};

auto DescribeKind(const llvm::json::Value& v) -> const char* {
  switch (v.kind()) {
    case llvm::json::Value::Null: return "null";
    case llvm::json::Value::Boolean: return "a boolean";
    case llvm::json::Value::Number: return "a number";
    case llvm::json::Value::String: return "a string";
    case llvm::json::Value::Array: return "an array";
    case llvm::json::Value::Object: return "an object";
  }
  return "a value";
}

// A JSON integer in [0, INT64_MAX), or nullopt. LLVM 14's parser reads a
// larger integer as INT64_MAX, so that value stands for "too large".
auto Count(const llvm::json::Value& v) -> std::optional<int64_t> {
  auto i = v.getAsInteger();  // llvm::Optional in LLVM 14
  if (!i || *i < 0 || *i == std::numeric_limits<int64_t>::max()) return std::nullopt;
  return *i;
}

auto ParseDtype(const llvm::json::Object& o) -> llvm::Expected<Dtype> {
  const llvm::json::Value* v = o.get("dtype");
  if (!v) return Fail("has no \"dtype\"");
  auto s = v->getAsString();
  if (!s) return Fail(fmt::format("\"dtype\" is {}, not a string", DescribeKind(*v)));
  for (const DtypeSpelling& d : kDtypes) {
    if (*s != d.name) continue;
    if (d.bytes == 0) return Fail(fmt::format("dtype {} is not supported (F32, BF16 and F16 are)", d.name));
    return d.dtype;
  }
  return Fail(fmt::format("unknown dtype \"{}\"", s->str()));
}

auto ParseShape(const llvm::json::Object& o) -> llvm::Expected<std::vector<int64_t>> {
  const llvm::json::Array* a = o.getArray("shape");
  if (!a) return Fail("has no \"shape\" array");
  std::vector<int64_t> shape;
  for (const llvm::json::Value& v : *a) {
    std::optional<int64_t> n = Count(v);
    if (!n) return Fail("\"shape\" holds something other than a non-negative integer");
    shape.push_back(*n);
  }
  return shape;
}

// The entry of tensor `name`: dtype, shape and offsets agree with each other.
auto ParseEntry(const std::string& name, const llvm::json::Value& value) -> llvm::Expected<TensorEntry> {
  const llvm::json::Object* o = value.getAsObject();
  if (!o) return Fail(fmt::format("is {}, not an object with dtype, shape and data_offsets", DescribeKind(value)));
  TensorEntry e;
  e.name = name;
  llvm::Expected<Dtype> dtype = ParseDtype(*o);
  if (!dtype) return dtype.takeError();
  e.dtype = *dtype;
  llvm::Expected<std::vector<int64_t>> shape = ParseShape(*o);
  if (!shape) return shape.takeError();
  e.shape = std::move(*shape);
  const llvm::json::Array* offsets = o->getArray("data_offsets");
  std::optional<int64_t> begin, end;
  if (offsets && offsets->size() == 2) begin = Count((*offsets)[0]), end = Count((*offsets)[1]);
  if (!begin || !end) return Fail("\"data_offsets\" is not [begin, end] of two non-negative integers");
  if (*end < *begin) return Fail(fmt::format("\"data_offsets\" [{}, {}] end before they begin", *begin, *end));
  e.begin = static_cast<uint64_t>(*begin), e.end = static_cast<uint64_t>(*end);
  uint64_t bytes = static_cast<uint64_t>(DtypeBytes(e.dtype));
  for (int64_t n : e.shape) {
    if (__builtin_mul_overflow(bytes, static_cast<uint64_t>(n), &bytes))
      return Fail(fmt::format("shape {} of {} overflows 64 bits of bytes", ShapeText(e.shape), DtypeName(e.dtype)));
  }
  if (bytes != e.end - e.begin)
    return Fail(fmt::format("\"data_offsets\" [{}, {}] hold {} bytes, but shape {} of {} takes {}", e.begin, e.end,
                            e.end - e.begin, ShapeText(e.shape), DtypeName(e.dtype), bytes));
  return e;
}

auto ParseMetadata(const llvm::json::Value& value) -> llvm::Expected<std::map<std::string, std::string>> {
  const llvm::json::Object* o = value.getAsObject();
  if (!o) return Fail(fmt::format("\"__metadata__\" is {}, not an object of strings", DescribeKind(value)));
  std::map<std::string, std::string> metadata;
  for (const auto& [key, v] : *o) {
    auto s = v.getAsString();
    if (!s)
      return Fail(fmt::format("\"__metadata__\" \"{}\" is {}, not a string", NameText(key.str()), DescribeKind(v)));
    metadata[key.str()] = s->str();
  }
  return metadata;
}

// The first key of the root object that appears twice: llvm::json keeps one
// of two equal keys silently. `json` has parsed, so every string ends.
auto RepeatedKey(llvm::StringRef json) -> std::optional<std::string> {
  std::set<std::string> seen;
  int depth = 0;
  for (size_t i = 0; i < json.size(); ++i) {
    char ch = json[i];
    if (ch == '{' || ch == '[') ++depth;
    if (ch == '}' || ch == ']') --depth;
    if (ch != '"') continue;
    size_t start = i;
    for (++i; i < json.size() && json[i] != '"'; ++i) i += json[i] == '\\';
    size_t next = json.find_first_not_of(" \t\r\n", i + 1);
    if (depth != 1 || next == llvm::StringRef::npos || json[next] != ':') continue;
    llvm::Expected<llvm::json::Value> key = llvm::json::parse(json.slice(start, i + 1));
    if (!key) {
      llvm::consumeError(key.takeError());
      continue;
    }
    if (!seen.insert(key->getAsString()->str()).second) return key->getAsString()->str();
  }
  return std::nullopt;
}

// The entries sorted by offset must tile [0, data_bytes).
auto CheckTiling(std::vector<TensorEntry>& entries, uint64_t data_bytes) -> llvm::Error {
  std::sort(entries.begin(), entries.end(), [](const TensorEntry& a, const TensorEntry& b) {
    return std::tie(a.begin, a.end, a.name) < std::tie(b.begin, b.end, b.name);
  });
  uint64_t next = 0;
  const TensorEntry* previous = nullptr;
  for (const TensorEntry& e : entries) {
    if (e.begin < next)
      return Fail(fmt::format("tensor \"{}\" (bytes [{}, {})) overlaps tensor \"{}\" (bytes [{}, {}))",
                              NameText(e.name), e.begin, e.end, NameText(previous->name), previous->begin,
                              previous->end));
    if (e.begin > next)
      return Fail(fmt::format("{} bytes of the data before tensor \"{}\" belong to no tensor", e.begin - next,
                              NameText(e.name)));
    next = e.end, previous = &e;
  }
  if (next != data_bytes)
    return Fail(
        fmt::format("the tensors hold {} bytes, but the file has {} bytes of data after the header", next, data_bytes));
  return llvm::Error::success();
}

auto ReadTensor(int fd, uint64_t data_start, const TensorEntry& e) -> llvm::Expected<HostTensor> {
  size_t width = static_cast<size_t>(DtypeBytes(e.dtype)), count = (e.end - e.begin) / width;
  HostTensor t{e.name, e.shape, std::vector<float>(count)};
  std::vector<uint8_t> bytes(std::min(count, kChunkElements) * width);
  for (size_t done = 0; done < count;) {
    size_t n = std::min(count - done, kChunkElements);
    if (llvm::Error err = ReadAt(fd, data_start + e.begin + done * width, n * width, bytes.data())) return err;
    DecodeElements(e.dtype, bytes.data(), n, t.data.data() + done);
    done += n;
  }
  return t;
}

auto CheckWritable(const std::vector<HostTensor>& tensors, Dtype dtype,
                   const std::map<std::string, std::string>& metadata) -> llvm::Error {
  if (dtype == Dtype::F16) return Fail("F16 is read, not written: write F32 or BF16");
  std::set<std::string> names;
  for (const HostTensor& t : tensors) {
    if (t.name.empty() || t.name == "__metadata__" || !llvm::json::isUTF8(t.name))
      return Fail(fmt::format("tensor \"{}\": the name must be non-empty UTF-8 other than __metadata__", t.name));
    if (!names.insert(t.name).second) return Fail(fmt::format("tensor \"{}\" appears twice", t.name));
    uint64_t count = 1;
    for (int64_t n : t.shape) {
      if (n < 0 || __builtin_mul_overflow(count, static_cast<uint64_t>(n), &count))
        return Fail(fmt::format("tensor \"{}\": shape {} is not a tensor's", t.name, ShapeText(t.shape)));
    }
    if (count != t.data.size())
      return Fail(fmt::format("tensor \"{}\": shape {} has {} elements, the data {}", t.name, ShapeText(t.shape), count,
                              t.data.size()));
  }
  for (const auto& [key, value] : metadata) {
    if (!llvm::json::isUTF8(key) || !llvm::json::isUTF8(value))
      return Fail(fmt::format("metadata \"{}\": keys and values must be UTF-8", key));
  }
  return llvm::Error::success();
}

// The header's JSON, padded with spaces to a multiple of 8 bytes.
auto HeaderText(const std::vector<HostTensor>& tensors, Dtype dtype, const std::map<std::string, std::string>& metadata)
    -> std::string {
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::json::OStream j(os);
  uint64_t offset = 0;
  j.objectBegin();
  if (!metadata.empty()) {
    j.attributeObject("__metadata__", [&] {
      for (const auto& [key, value] : metadata) j.attribute(key, value);
    });
  }
  for (const HostTensor& t : tensors) {
    uint64_t end = offset + t.data.size() * static_cast<uint64_t>(DtypeBytes(dtype));
    j.attributeObject(t.name, [&] {
      j.attribute("dtype", DtypeName(dtype));
      j.attributeArray("shape", [&] {
        for (int64_t n : t.shape) j.value(n);
      });
      j.attributeArray("data_offsets", [&] { j.value(offset), j.value(end); });
    });
    offset = end;
  }
  j.objectEnd();
  os.flush();
  text.append((8 - text.size() % 8) % 8, ' ');
  return text;
}

auto WriteContents(int fd, const std::vector<HostTensor>& tensors, Dtype dtype, const std::string& header) -> bool {
  uint8_t length[8];
  for (int i = 0; i < 8; ++i) length[i] = static_cast<uint8_t>(static_cast<uint64_t>(header.size()) >> (8 * i));
  if (!WriteAll(fd, length, 8) || !WriteAll(fd, header.data(), header.size())) return false;
  size_t width = static_cast<size_t>(DtypeBytes(dtype));
  std::vector<uint8_t> bytes;
  for (const HostTensor& t : tensors) {
    for (size_t done = 0; done < t.data.size(); done += kChunkElements) {
      size_t n = std::min(t.data.size() - done, kChunkElements);
      bytes.resize(n * width);
      EncodeElements(dtype, t.data.data() + done, n, bytes.data());
      if (!WriteAll(fd, bytes.data(), bytes.size())) return false;
    }
  }
  return true;
}

}  // namespace

auto DtypeName(Dtype d) -> const char* {
  switch (d) {
    case Dtype::F32: return "F32";
    case Dtype::BF16: return "BF16";
    case Dtype::F16: return "F16";
  }
  return "?";
}

auto DtypeBytes(Dtype d) -> int64_t { return d == Dtype::F32 ? 4 : 2; }

auto ShapeText(const std::vector<int64_t>& shape) -> std::string { return fmt::format("[{}]", fmt::join(shape, ", ")); }

auto NameText(const std::string& name) -> std::string {
  constexpr size_t kShown = 200;
  return name.size() <= kShown ? name : name.substr(0, kShown) + "...";
}

auto ParseHeader(const std::string& json, uint64_t data_bytes) -> llvm::Expected<Header> {
  if (json.empty() || json[0] != '{') return Fail("the header is not a JSON object (it does not start with '{')");
  size_t bad = 0;
  if (!llvm::json::isUTF8(json, &bad)) return Fail(fmt::format("the header is not UTF-8 (byte {})", bad));
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(json);
  if (!parsed) return Fail("the header is not JSON: " + llvm::toString(parsed.takeError()));
  const llvm::json::Object* root = parsed->getAsObject();
  if (!root) return Fail("the header is not a JSON object");
  if (std::optional<std::string> name = RepeatedKey(json))
    return Fail(fmt::format("\"{}\" appears twice in the header", NameText(*name)));
  Header h;
  for (const auto& [key, value] : *root) {
    if (key == "__metadata__") {
      llvm::Expected<std::map<std::string, std::string>> metadata = ParseMetadata(value);
      if (!metadata) return metadata.takeError();
      h.metadata = std::move(*metadata);
      continue;
    }
    llvm::Expected<TensorEntry> e = ParseEntry(key.str(), value);
    if (!e) return Fail(fmt::format("tensor \"{}\": {}", NameText(key.str()), llvm::toString(e.takeError())));
    h.entries.push_back(std::move(*e));
  }
  if (llvm::Error err = CheckTiling(h.entries, data_bytes)) return err;
  return h;
}

auto ReadSafetensorsFile(const std::string& path) -> llvm::Expected<SafetensorsFile> {
  auto fail = [&](const std::string& why) { return Fail(fmt::format("{}: {}", path, why)); };
  llvm::Expected<io::RegularFile> file = io::RegularFile::Open(path);
  if (!file) return fail("cannot open the safetensors file: " + llvm::toString(file.takeError()));
  uint64_t size = file->size();
  if (size < 8) return fail(fmt::format("{} bytes, too short for a safetensors file (8-byte header length)", size));
  uint8_t length[8];
  if (llvm::Error err = ReadAt(file->fd(), 0, 8, length)) return fail(llvm::toString(std::move(err)));
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = n << 8 | length[i];
  if (n > kMaxHeaderBytes)
    return fail(fmt::format("header length {} is over the limit of {} bytes", n, kMaxHeaderBytes));
  if (n > size - 8) return fail(fmt::format("header length {} runs past the end of the file ({} bytes)", n, size));
  std::string json(n, '\0');
  if (llvm::Error err = ReadAt(file->fd(), 8, n, reinterpret_cast<uint8_t*>(json.data())))
    return fail(llvm::toString(std::move(err)));
  llvm::Expected<Header> header = ParseHeader(json, size - 8 - n);
  if (!header) return fail(llvm::toString(header.takeError()));
  SafetensorsFile out;
  out.metadata = std::move(header->metadata);
  if (!header->entries.empty()) out.dtype = header->entries.front().dtype;
  for (const TensorEntry& e : header->entries) {
    llvm::Expected<HostTensor> t = ReadTensor(file->fd(), 8 + n, e);
    if (!t) return fail(fmt::format("tensor \"{}\": {}", NameText(e.name), llvm::toString(t.takeError())));
    out.tensors.push_back(std::move(*t));
  }
  return out;
}

auto ReadSafetensors(const std::string& path) -> llvm::Expected<std::vector<HostTensor>> {
  llvm::Expected<SafetensorsFile> file = ReadSafetensorsFile(path);
  if (!file) return file.takeError();
  return std::move(file->tensors);
}

auto WriteSafetensors(const std::string& path, const std::vector<HostTensor>& tensors, Dtype dtype,
                      const std::map<std::string, std::string>& metadata) -> llvm::Error {
  if (llvm::Error err = CheckWritable(tensors, dtype, metadata))
    return Fail(fmt::format("{}: {}", path, llvm::toString(std::move(err))));
  std::string header = HeaderText(tensors, dtype, metadata);
  return WriteAtomically(path, "the safetensors file",
                         [&](int fd) { return WriteContents(fd, tensors, dtype, header); });
}

}  // namespace avf::interop

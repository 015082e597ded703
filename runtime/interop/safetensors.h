// The safetensors file format, as Hugging Face's libraries write and read it:
// an 8-byte little-endian header length N, N bytes of a JSON object
//   {"NAME": {"dtype": "F32", "shape": [rows, cols], "data_offsets": [begin, end]}, ...,
//    "__metadata__": {"key": "value", ...}}
// (padded with spaces to a multiple of 8 bytes, so the data is aligned), then
// the data: each tensor row-major, little-endian, at [begin, end) of the
// bytes after the header. The tensors tile the data exactly: sorted by
// offset, each begins where the previous one ends, and the last ends at the
// end of the file.
//
// Tensors are held as fp32 on the host whatever the file's dtype. Plain
// C++17 (no <span>, no <bit>): the files that parse JSON include it and are
// compiled as C++17 under clang (CMakeLists.txt).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <llvm/Support/Error.h>

namespace avf::interop {

enum class Dtype : uint8_t { F32, BF16, F16 };

// "F32", "BF16", "F16": the spelling of the header's "dtype".
auto DtypeName(Dtype d) -> const char*;
auto DtypeBytes(Dtype d) -> int64_t;

// "[768, 2304]": a shape as the errors print it.
auto ShapeText(const std::vector<int64_t>& shape) -> std::string;
// A tensor name as the errors print it: its first 200 bytes (a hostile
// header's name can be as long as the header).
auto NameText(const std::string& name) -> std::string;

struct HostTensor {
  std::string name;
  std::vector<int64_t> shape;  // {} is a scalar (one element)
  std::vector<float> data;     // row-major, product(shape) elements
};

// The largest header the reader accepts, as Hugging Face's reader: 100 MB.
inline constexpr uint64_t kMaxHeaderBytes = 100'000'000;

// Writes `tensors` in their order, as F32 or BF16 (rounded to nearest even,
// numeric/bf16.h), with `metadata` as "__metadata__" when it is not empty.
// Atomic: a temporary file beside `path`, flushed to disk, then renamed over
// it. Refuses (naming the tensor) an F16 dtype, a name that is empty, not
// UTF-8, "__metadata__" or repeated, and data whose size is not the product
// of the shape.
auto WriteSafetensors(const std::string& path, const std::vector<HostTensor>& tensors, Dtype dtype,
                      const std::map<std::string, std::string>& metadata = {}) -> llvm::Error;

struct SafetensorsFile {
  std::vector<HostTensor> tensors;  // in the order of their data in the file
  std::map<std::string, std::string> metadata;
  Dtype dtype = Dtype::F32;  // the first tensor's (F32 for a file without tensors)
};

// Reads a file of F32, BF16 and F16 tensors (widened exactly to fp32). Every
// problem is an error that names the file, the tensor where there is one, and
// what is wrong: a header length beyond the file or kMaxHeaderBytes, a header
// that is not a JSON object of tensor entries, an unknown or unsupported
// dtype, a shape or offset that is not a non-negative integer, an element
// count whose bytes overflow, offsets that leave a gap, overlap or do not
// end at the end of the file, a repeated name. Nothing is allocated beyond
// what the file's size bounds (at most twice its bytes, for 2-byte dtypes).
auto ReadSafetensorsFile(const std::string& path) -> llvm::Expected<SafetensorsFile>;
auto ReadSafetensors(const std::string& path) -> llvm::Expected<std::vector<HostTensor>>;

// The parse of a header alone (the JSON text after the length): the entries,
// sorted by offset and checked against `data_bytes`, the size of the data
// after the header. For the reader and its tests.
struct TensorEntry {
  std::string name;
  Dtype dtype = Dtype::F32;
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;
};
struct Header {
  std::vector<TensorEntry> entries;
  std::map<std::string, std::string> metadata;
};
auto ParseHeader(const std::string& json, uint64_t data_bytes) -> llvm::Expected<Header>;

}  // namespace avf::interop

// A streaming JSON writer for the emitters: llvm::json::OStream behind a
// header that needs no llvm/Support/JSON.h, because clang 14 with libstdc++ 12
// can only compile that header as C++17 (json_writer.cpp is built so) while
// the emitters are C++20. Doubles print as the shortest text that reads back
// as the same value (llvm::json alone prints 17 digits: 0.1 -> 0.10000000000000001).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>

#include <llvm/Support/raw_ostream.h>

namespace avf::emit {

class JsonWriter {
 public:
  // indent: spaces per level; 0 writes one line.
  JsonWriter(llvm::raw_ostream& out, unsigned indent);
  ~JsonWriter();
  JsonWriter(const JsonWriter&) = delete;
  auto operator=(const JsonWriter&) -> JsonWriter& = delete;

  void Object(const std::function<void()>& body);
  void Array(const std::function<void()>& body);
  void Key(std::string_view key);  // the next value belongs to `key`

  void String(std::string_view v);
  void Int(int64_t v);
  void Number(double v);  // integers print without a fraction; NaN/inf as null
  void Bool(bool v);
  void Null();

  // key + value in one call.
  void Field(std::string_view key, std::string_view v) {
    Key(key);
    String(v);
  }
  void Field(std::string_view key, const char* v) {
    Key(key);
    String(v);
  }
  void Field(std::string_view key, int64_t v) {
    Key(key);
    Int(v);
  }
  void Field(std::string_view key, int v) {
    Key(key);
    Int(v);
  }
  void Field(std::string_view key, bool v) {
    Key(key);
    Bool(v);
  }
  void NumberField(std::string_view key, double v) {
    Key(key);
    Number(v);
  }
  void ObjectField(std::string_view key, const std::function<void()>& body) {
    Key(key);
    Object(body);
  }
  void ArrayField(std::string_view key, const std::function<void()>& body) {
    Key(key);
    Array(body);
  }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace avf::emit

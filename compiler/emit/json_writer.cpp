#include "emit/json_writer.h"

#include <cmath>
#include <string>

#include <fmt/format.h>
#include <llvm/Support/JSON.h>

namespace avf::emit {

struct JsonWriter::Impl {
  Impl(llvm::raw_ostream& out, unsigned indent) : stream(out, indent) {}
  llvm::json::OStream stream;
  bool in_attribute = false;  // Key() opened an attribute the next value closes
};

JsonWriter::JsonWriter(llvm::raw_ostream& out, unsigned indent) : impl_(std::make_unique<Impl>(out, indent)) {}
JsonWriter::~JsonWriter() = default;

namespace {

// Runs `write` as the value of the pending key, if there is one.
template <typename F>
void AsValue(llvm::json::OStream& s, bool& in_attribute, F write) {
  bool close = in_attribute;
  in_attribute = false;
  write();
  if (close) s.attributeEnd();
}

}  // namespace

void JsonWriter::Key(std::string_view key) {
  impl_->stream.attributeBegin(llvm::StringRef(key.data(), key.size()));
  impl_->in_attribute = true;
}

void JsonWriter::Object(const std::function<void()>& body) {
  AsValue(impl_->stream, impl_->in_attribute, [&] { impl_->stream.object(body); });
}

void JsonWriter::Array(const std::function<void()>& body) {
  AsValue(impl_->stream, impl_->in_attribute, [&] { impl_->stream.array(body); });
}

void JsonWriter::String(std::string_view v) {
  AsValue(impl_->stream, impl_->in_attribute, [&] { impl_->stream.value(std::string(v)); });
}

void JsonWriter::Int(int64_t v) {
  AsValue(impl_->stream, impl_->in_attribute, [&] { impl_->stream.value(v); });
}

void JsonWriter::Number(double v) {
  AsValue(impl_->stream, impl_->in_attribute, [&] {
    if (!std::isfinite(v)) impl_->stream.value(nullptr);
    else if (v == std::floor(v) && std::fabs(v) < 9e15) impl_->stream.value(static_cast<int64_t>(v));
    else impl_->stream.rawValue(fmt::format("{}", v));
  });
}

void JsonWriter::Bool(bool v) {
  AsValue(impl_->stream, impl_->in_attribute, [&] { impl_->stream.value(v); });
}

void JsonWriter::Null() {
  AsValue(impl_->stream, impl_->in_attribute, [&] { impl_->stream.value(nullptr); });
}

}  // namespace avf::emit

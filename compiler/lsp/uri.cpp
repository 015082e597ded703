#include "lsp/uri.h"

#include <cctype>

#include <fmt/format.h>
#include <llvm/ADT/SmallString.h>
#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/FileSystem.h>

namespace avf::lsp {

namespace {

auto Unreserved(char c) -> bool {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_' || c == '~' || c == '/';
}

}  // namespace

auto PathFromUri(std::string_view uri) -> std::string {
  llvm::StringRef rest(uri.data(), uri.size());
  if (!rest.consume_front("file://")) return std::string(uri);
  std::string path;
  for (size_t i = 0; i < rest.size(); ++i) {
    unsigned value = 0;
    if (rest[i] == '%' && i + 2 < rest.size() && !rest.substr(i + 1, 2).getAsInteger(16, value)) {
      path += static_cast<char>(value);
      i += 2;
    } else {
      path += rest[i];
    }
  }
  return path;
}

auto UriFromPath(std::string_view path) -> std::string {
  llvm::SmallString<256> absolute(path);
  llvm::sys::fs::make_absolute(absolute);
  std::string uri = "file://";
  for (char c : absolute) {
    if (Unreserved(c)) uri += c;
    else uri += fmt::format("%{:02X}", static_cast<unsigned char>(c));
  }
  return uri;
}

}  // namespace avf::lsp

// `file://` URIs <-> paths. A document whose URI is not a file (`untitled:`)
// keeps its URI as its name; its imports resolve only through the stdlib.
#pragma once

#include <string>
#include <string_view>

namespace avf::lsp {

auto PathFromUri(std::string_view uri) -> std::string;
auto UriFromPath(std::string_view path) -> std::string;

}  // namespace avf::lsp

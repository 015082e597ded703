// `aviflowc lsp`: a Language Server Protocol server over two file
// descriptors (standard input and output), docs/editors.md. It answers
// every request, including malformed ones (with an error), and ends when
// the client says `exit` or closes its input.
#pragma once

#include <string>

#include "lsp/workspace.h"

namespace avf::lsp {

struct ServerOptions {
  SearchDirs dirs;
  std::string version;  // serverInfo.version
};

// Returns the exit status: 0 after `shutdown`, else 1 (as LSP says).
auto Serve(int in, int out, const ServerOptions& options) -> int;

}  // namespace avf::lsp

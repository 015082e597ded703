// `aviflowc fmt FILE...`: each file lexed and parsed (a file with errors gets
// its diagnostics and is left as it is), then formatted (format/format.h).
#pragma once

#include <functional>

#include "diag/diagnostic.h"
#include "driver/options.h"
#include "source/source_set.h"

namespace avf::driver {

// `finish` renders one file's diagnostics and returns its exit status.
using FinishFile = std::function<int(const source::SourceSet&, const diag::DiagnosticEngine&)>;

// 0 when every file was formatted (with --check: was in canonical form), 1
// when one had errors or (with --check) would change, 2 on an I/O error.
auto FormatFiles(const Options& o, const FinishFile& finish) -> int;

}  // namespace avf::driver

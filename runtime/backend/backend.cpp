#include "backend/backend.h"

namespace avf::backend {

auto KindName(Kind kind) -> std::string_view { return kind == Kind::kCpu ? "cpu" : "cuda"; }

}  // namespace avf::backend

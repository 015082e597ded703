// Text -> value for the closed enumerations, over plan_format/enums.def (the
// one table of spellings the writer, this reader and the schema share).
#pragma once

#include <optional>
#include <string>

#include "plan/plan.h"

namespace avf::runtime {

template <typename E>
auto ParseEnum(llvm::StringRef text) -> std::optional<E> {
  return plan_format::ParseEnum<E>(std::string_view(text.data(), text.size()));
}

using plan_format::EnumChoices;

}  // namespace avf::runtime

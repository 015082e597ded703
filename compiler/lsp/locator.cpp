#include "lsp/locator.h"

#include "lsp/uri.h"

namespace avf::lsp {

auto Locator::IndexOf(unsigned buffer_id) -> const LineIndex& {
  auto it = indexes_.find(buffer_id);
  if (it == indexes_.end()) {
    llvm::StringRef text = analysis_.sources->Text(buffer_id);
    it = indexes_.emplace(buffer_id, LineIndex(std::string_view(text.data(), text.size()))).first;
  }
  return it->second;
}

auto Locator::UriOf(unsigned buffer_id) const -> std::string {
  // The document is the first buffer of its analysis, even when its text was
  // refused (a NUL byte) and it has no module.
  if (buffer_id == 1) return main_uri_;
  return UriFromPath(analysis_.sources->Name(buffer_id).str());
}

auto Locator::LocationOf(llvm::SMRange range) -> std::optional<Location> {
  if (!range.Start.isValid()) return std::nullopt;
  const llvm::SourceMgr& mgr = analysis_.sources->mgr();
  unsigned id = mgr.FindBufferContainingLoc(range.Start);
  if (id == 0) return std::nullopt;
  const char* base = analysis_.sources->Text(id).data();
  size_t size = analysis_.sources->Text(id).size();
  size_t begin = range.Start.getPointer() - base;
  size_t end = begin;
  if (range.End.isValid() && range.End.getPointer() >= range.Start.getPointer() &&
      range.End.getPointer() <= base + size) {
    end = range.End.getPointer() - base;
  }
  const LineIndex& index = IndexOf(id);
  return Location{UriOf(id), {index.PositionOf(begin, encoding_), index.PositionOf(end, encoding_)}};
}

}  // namespace avf::lsp

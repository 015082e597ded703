// A byte-level BPE tokenizer that users and tests can train on their own
// text, so no download is needed (`avf-run tokenize`). Token ids 0..255 are
// the bytes; each merge adds one id. Text is split into words before BPE
// (a word keeps the space in front of it, as GPT-2 does), so merges never
// cross a word boundary and each distinct word is encoded once.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <llvm/Support/Error.h>

namespace avf::data {

class Tokenizer {
 public:
  // Bytes only: a vocabulary of 256.
  static auto ByteLevel() -> Tokenizer;
  // Learns merges from `text` until the vocabulary has `vocab_size` ids (or
  // no pair occurs twice). Deterministic: ties go to the smallest pair.
  static auto Train(std::string_view text, uint32_t vocab_size) -> Tokenizer;

  auto Encode(std::string_view text) const -> std::vector<uint32_t>;
  auto Decode(const std::vector<uint32_t>& ids) const -> std::string;
  auto vocab_size() const -> uint32_t { return static_cast<uint32_t>(256 + merges_.size()); }
  auto merges() const -> const std::vector<std::pair<uint32_t, uint32_t>>& { return merges_; }

  // `{"format": "aviflow-bpe", "version": 1, "merges": [[a, b], ...]}`.
  auto ToJson() const -> std::string;
  static auto FromJson(std::string_view json) -> llvm::Expected<Tokenizer>;

 private:
  auto EncodeWord(std::string_view word) const -> std::vector<uint32_t>;
  void Rebuild();  // the pieces and the rank lookup from merges_

  std::vector<std::pair<uint32_t, uint32_t>> merges_;  // id 256 + i = merges_[i]
  std::vector<std::string> pieces_;                    // the bytes of every id
};

// Splits text into words: each word starts at a space or at the text's start.
auto SplitWords(std::string_view text) -> std::vector<std::string_view>;

}  // namespace avf::data

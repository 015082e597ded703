#include "data/tokenizer.h"

#include <algorithm>
#include <map>
#include <optional>
#include <unordered_map>

#include <llvm/Support/JSON.h>
#include <llvm/Support/raw_ostream.h>

namespace avf::data {

namespace {

auto PairKey(uint32_t a, uint32_t b) -> uint64_t { return static_cast<uint64_t>(a) << 32 | b; }

auto Fail(const std::string& why) -> llvm::Error {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "tokenizer: %s", why.c_str());
}

// Each distinct word as a sequence of ids, with how often it occurs.
struct WordCounts {
  std::vector<std::vector<uint32_t>> words;
  std::vector<int64_t> counts;
};

auto CountWords(std::string_view text) -> WordCounts {
  std::map<std::string_view, int64_t> freq;  // ordered: deterministic
  for (std::string_view w : SplitWords(text)) ++freq[w];
  WordCounts wc;
  for (const auto& [w, n] : freq) {
    wc.words.emplace_back(w.begin(), w.end());
    for (uint32_t& id : wc.words.back()) id &= 0xff;
    wc.counts.push_back(n);
  }
  return wc;
}

// The most frequent adjacent pair (ties: the smallest), or nullopt when none occurs twice.
auto BestPair(const WordCounts& wc) -> std::optional<std::pair<uint32_t, uint32_t>> {
  std::unordered_map<uint64_t, int64_t> freq;
  for (size_t w = 0; w < wc.words.size(); ++w) {
    const std::vector<uint32_t>& ids = wc.words[w];
    for (size_t i = 0; i + 1 < ids.size(); ++i) freq[PairKey(ids[i], ids[i + 1])] += wc.counts[w];
  }
  uint64_t best = 0;
  int64_t best_count = 1;
  for (const auto& [key, n] : freq) {
    if (n > best_count || (n == best_count && n > 1 && key < best)) {
      best = key;
      best_count = n;
    }
  }
  if (best_count < 2) return std::nullopt;
  return std::pair<uint32_t, uint32_t>{static_cast<uint32_t>(best >> 32), static_cast<uint32_t>(best)};
}

void ApplyMerge(std::vector<uint32_t>& ids, uint32_t a, uint32_t b, uint32_t to) {
  size_t out = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i + 1 < ids.size() && ids[i] == a && ids[i + 1] == b) {
      ids[out++] = to;
      ++i;
    } else {
      ids[out++] = ids[i];
    }
  }
  ids.resize(out);
}

}  // namespace

auto SplitWords(std::string_view text) -> std::vector<std::string_view> {
  std::vector<std::string_view> words;
  size_t start = 0;
  for (size_t i = 1; i <= text.size(); ++i) {
    if (i == text.size() || (text[i] == ' ' && text[i - 1] != ' ')) {
      words.push_back(text.substr(start, i - start));
      start = i;
    }
  }
  return words;
}

auto Tokenizer::ByteLevel() -> Tokenizer {
  Tokenizer t;
  t.Rebuild();
  return t;
}

auto Tokenizer::Train(std::string_view text, uint32_t vocab_size) -> Tokenizer {
  Tokenizer t;
  WordCounts wc = CountWords(text);
  while (t.vocab_size() < vocab_size) {
    auto pair = BestPair(wc);
    if (!pair) break;
    uint32_t id = t.vocab_size();
    t.merges_.push_back(*pair);
    for (std::vector<uint32_t>& ids : wc.words) ApplyMerge(ids, pair->first, pair->second, id);
  }
  t.Rebuild();
  return t;
}

void Tokenizer::Rebuild() {
  pieces_.clear();
  for (uint32_t b = 0; b < 256; ++b) pieces_.emplace_back(1, static_cast<char>(b));
  for (const auto& [a, b] : merges_) pieces_.push_back(pieces_[a] + pieces_[b]);
}

// Merges in the order they were learned, as training applied them.
auto Tokenizer::EncodeWord(std::string_view word) const -> std::vector<uint32_t> {
  std::vector<uint32_t> ids;
  for (char c : word) ids.push_back(static_cast<uint8_t>(c));
  for (size_t m = 0; m < merges_.size() && ids.size() > 1; ++m) {
    ApplyMerge(ids, merges_[m].first, merges_[m].second, static_cast<uint32_t>(256 + m));
  }
  return ids;
}

auto Tokenizer::Encode(std::string_view text) const -> std::vector<uint32_t> {
  std::unordered_map<std::string_view, std::vector<uint32_t>> cache;
  std::vector<uint32_t> out;
  for (std::string_view w : SplitWords(text)) {
    auto it = cache.find(w);
    if (it == cache.end()) it = cache.emplace(w, EncodeWord(w)).first;
    out.insert(out.end(), it->second.begin(), it->second.end());
  }
  return out;
}

auto Tokenizer::Decode(const std::vector<uint32_t>& ids) const -> std::string {
  std::string out;
  for (uint32_t id : ids) out += id < pieces_.size() ? pieces_[id] : "\xef\xbf\xbd";  // U+FFFD for unknown ids
  return out;
}

auto Tokenizer::ToJson() const -> std::string {
  llvm::json::Array merges;
  for (const auto& [a, b] : merges_) merges.push_back(llvm::json::Array{a, b});
  llvm::json::Object root{{"format", "aviflow-bpe"}, {"version", 1}, {"merges", std::move(merges)}};
  std::string s;
  llvm::raw_string_ostream os(s);
  os << llvm::json::Value(std::move(root));
  return os.str() + "\n";
}

auto Tokenizer::FromJson(std::string_view json) -> llvm::Expected<Tokenizer> {
  llvm::Expected<llvm::json::Value> v = llvm::json::parse(json);
  if (!v) return Fail("not JSON: " + llvm::toString(v.takeError()));
  const llvm::json::Object* root = v->getAsObject();
  auto format = root ? root->getString("format") : llvm::None;
  if (!format || *format != "aviflow-bpe") return Fail("not an aviflow-bpe tokenizer");
  auto version = root->getInteger("version");
  if (!version || *version != 1) return Fail("version is not 1");
  const llvm::json::Array* merges = root->getArray("merges");
  if (!merges) return Fail("no `merges` list");
  Tokenizer t;
  for (const llvm::json::Value& m : *merges) {
    const llvm::json::Array* pair = m.getAsArray();
    uint32_t next = t.vocab_size();
    llvm::Optional<int64_t> a, b;
    if (pair && pair->size() == 2) {
      a = (*pair)[0].getAsInteger();
      b = (*pair)[1].getAsInteger();
    }
    if (!a || !b || *a < 0 || *b < 0 || *a >= next || *b >= next) {
      return Fail("merge " + std::to_string(next - 256) + " is not a pair of earlier ids");
    }
    t.merges_.emplace_back(static_cast<uint32_t>(*a), static_cast<uint32_t>(*b));
  }
  t.Rebuild();
  return t;
}

}  // namespace avf::data

#include "checkpoint/index.h"

#include <fmt/format.h>
#include <llvm/ADT/Optional.h>
#include <llvm/Support/JSON.h>

namespace avf::checkpoint {

namespace {

using llvm::json::Array;
using llvm::json::Object;
using llvm::json::Value;

// Counts in an index are bounded so that no sum or product of them overflows.
constexpr int64_t kMaxCount = int64_t{1} << 50;

auto PartJson(const Chunk& c) -> Value {
  Array rows;
  for (const model::TensorPart::Rows& r : c.part.row_blocks) rows.push_back(Array{r.first, r.count});
  return Object{{"file", c.file},
                {"offset", static_cast<int64_t>(c.offset)},
                {"rows", std::move(rows)},
                {"col_first", c.part.col_first},
                {"col_count", c.part.col_count},
                {"first", c.first},
                {"count", c.count}};
}

auto TensorsJson(const std::vector<Tensor>& tensors) -> Array {
  Array out;
  for (const Tensor& t : tensors) {
    Array chunks;
    for (const Chunk& c : t.chunks) chunks.push_back(PartJson(c));
    out.push_back(Object{{"name", t.name}, {"rows", t.rows}, {"cols", t.cols}, {"chunks", std::move(chunks)}});
  }
  return out;
}

auto FileJson(const DataFile& f) -> Value {
  return Object{{"name", f.name}, {"bytes", static_cast<int64_t>(f.bytes)}, {"sha256", f.sha256}};
}

auto ModelJson(const model::ModelConfig& m) -> Value {
  return Object{{"arch", ArchName(m.arch)},  {"layers", m.layers},     {"hidden", m.hidden},
                {"heads", m.heads},          {"kv_heads", m.kv_heads}, {"ffn", m.ffn},
                {"vocab", m.vocab},          {"seq_len", m.seq_len},   {"tied_embeddings", m.tied_embeddings},
                {"rope_theta", m.rope_theta}};
}

auto Print(Value v) -> std::string {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::formatv("{0:1}", v) << "\n";
  return os.str();
}

// Reads fields of one JSON object; the first problem sticks, named by its path.
class Reader {
 public:
  Reader(const Object* o, std::string where, std::string& error) : o_(o), where_(std::move(where)), error_(error) {
    if (!o_) Fail("", "not an object");
  }
  auto Int(llvm::StringRef key, int64_t lo = 0, int64_t hi = kMaxCount) -> int64_t {
    llvm::Optional<int64_t> v = o_ ? o_->getInteger(key) : llvm::None;
    if (!v || *v < lo || *v > hi) Fail(key, fmt::format("expected an integer in {}..{}", lo, hi));
    return v.getValueOr(0);
  }
  auto Str(llvm::StringRef key) -> std::string {
    llvm::Optional<llvm::StringRef> v = o_ ? o_->getString(key) : llvm::None;
    if (!v) Fail(key, "expected a string");
    return v ? v->str() : "";
  }
  auto Bool(llvm::StringRef key) -> bool {
    llvm::Optional<bool> v = o_ ? o_->getBoolean(key) : llvm::None;
    if (!v) Fail(key, "expected true or false");
    return v.getValueOr(false);
  }
  auto Num(llvm::StringRef key) -> double {
    llvm::Optional<double> v = o_ ? o_->getNumber(key) : llvm::None;
    if (!v) Fail(key, "expected a number");
    return v.getValueOr(0);
  }
  auto Arr(llvm::StringRef key) -> const Array* {
    const Array* a = o_ ? o_->getArray(key) : nullptr;
    if (!a) Fail(key, "expected an array");
    return a;
  }
  auto Obj(llvm::StringRef key) -> Reader { return {o_ ? o_->getObject(key) : nullptr, Path(key), error_}; }
  // A reader of `v`, an array's element, named `name` under this object.
  auto At(const std::string& name, const Value& v) -> Reader { return {v.getAsObject(), Path(name), error_}; }
  auto Path(llvm::StringRef key) const -> std::string { return where_.empty() ? key.str() : where_ + "." + key.str(); }
  void Fail(llvm::StringRef key, const std::string& what) {
    if (error_.empty()) error_ = fmt::format("{}: {}", key.empty() ? where_ : Path(key), what);
  }

 private:
  const Object* o_;
  std::string where_;
  std::string& error_;
};

auto ReadChunk(Reader r) -> Chunk {
  Chunk c;
  c.file = r.Int("file", 0, 1 << 24);
  c.offset = static_cast<uint64_t>(r.Int("offset"));
  if (const Array* rows = r.Arr("rows")) {
    for (const Value& v : *rows) {
      const Array* pair = v.getAsArray();
      llvm::Optional<int64_t> first = pair && pair->size() == 2 ? (*pair)[0].getAsInteger() : llvm::None;
      llvm::Optional<int64_t> count = pair && pair->size() == 2 ? (*pair)[1].getAsInteger() : llvm::None;
      if (!first || !count || *first < 0 || *count < 0 || *first > kMaxCount || *count > kMaxCount) {
        r.Fail("rows", "expected [first, count] pairs of counts");
        break;
      }
      c.part.row_blocks.push_back({*first, *count});
    }
  }
  c.part.col_first = r.Int("col_first");
  c.part.col_count = r.Int("col_count");
  c.first = r.Int("first");
  c.count = r.Int("count", 1);
  return c;
}

auto ReadTensor(Reader t) -> Tensor {
  Tensor out;
  out.name = t.Str("name");
  out.rows = t.Int("rows", 0, 1 << 30);
  out.cols = t.Int("cols", 0, 1 << 30);
  if (const Array* chunks = t.Arr("chunks")) {
    for (size_t i = 0; i < chunks->size(); ++i) {
      out.chunks.push_back(ReadChunk(t.At(fmt::format("chunks[{}]", i), (*chunks)[i])));
      out.chunks.back().part.rows = out.rows, out.chunks.back().part.cols = out.cols;
    }
  }
  return out;
}

auto ReadTensors(Reader& r, std::vector<Tensor>& out) -> void {
  const Array* tensors = r.Arr("tensors");
  if (!tensors) return;
  for (size_t i = 0; i < tensors->size(); ++i) {
    out.push_back(ReadTensor(r.At(fmt::format("tensors[{}]", i), (*tensors)[i])));
  }
}

auto ReadFile(Reader f) -> DataFile {
  DataFile out;
  out.name = f.Str("name");
  out.bytes = static_cast<uint64_t>(f.Int("bytes"));
  out.sha256 = f.Str("sha256");
  if (out.sha256.size() != 64 || out.sha256.find_first_not_of("0123456789abcdef") != std::string::npos) {
    f.Fail("sha256", "expected 64 lowercase hex digits");
  }
  bool plain = !out.name.empty() && out.name.find('/') == std::string::npos && out.name != "." && out.name != "..";
  if (!plain) f.Fail("name", "expected a file name in the step directory");
  return out;
}

auto ReadModel(Reader m) -> model::ModelConfig {
  model::ModelConfig c;
  std::string arch = m.Str("arch");
  if (arch != "gpt2" && arch != "llama") m.Fail("arch", "expected \"gpt2\" or \"llama\"");
  c.arch = arch == "llama" ? model::Arch::Llama : model::Arch::Gpt2;
  c.layers = m.Int("layers", 1, 100000), c.hidden = m.Int("hidden", 1, 1 << 20);
  c.heads = m.Int("heads", 1, 1 << 20), c.kv_heads = m.Int("kv_heads", 1, 1 << 20);
  c.ffn = m.Int("ffn", 1, 1 << 22), c.vocab = m.Int("vocab", 1, 100000000);
  c.seq_len = m.Int("seq_len", 1, 100000000), c.tied_embeddings = m.Bool("tied_embeddings");
  c.rope_theta = m.Num("rope_theta");
  return c;
}

auto ReadOrigin(Reader o) -> Origin {
  Origin out;
  out.job = o.Str("job");
  out.model = ReadModel(o.Obj("model"));
  out.precision = o.Str("precision");
  Reader plan = o.Obj("plan");
  out.plan_sha256 = plan.Str("sha256");
  out.ranks = plan.Int("ranks", 1), out.data = plan.Int("data", 1), out.tensor = plan.Int("tensor", 1);
  out.pipeline = plan.Int("pipeline", 1), out.virtual_stages = plan.Int("virtual_stages", 1);
  out.zero = plan.Int("zero", 0, 3), out.micro_batch = plan.Int("micro_batch", 1);
  out.init_seed = static_cast<uint64_t>(o.Int("init_seed", 0, INT64_MAX));
  return out;
}

auto ReadData(Reader d) -> DataPosition {
  DataPosition out;
  out.dataset = d.Str("dataset");
  out.tokens = d.Int("tokens", 1), out.global_batch = d.Int("global_batch", 1), out.seq_len = d.Int("seq_len", 1);
  out.batches = d.Int("batches"), out.epoch = d.Int("epoch"), out.next_sequence = d.Int("next_sequence");
  return out;
}

auto Parse(llvm::StringRef text, llvm::StringRef path) -> llvm::Expected<Value> {
  llvm::Expected<Value> v = llvm::json::parse(text);
  if (!v) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s",
                                   fmt::format("{}: not JSON: {}", path.str(), llvm::toString(v.takeError())).c_str());
  }
  return v;
}

auto Problem(llvm::StringRef path, const std::string& what) -> llvm::Error {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s", fmt::format("{}: {}", path.str(), what).c_str());
}

// Every chunk inside its part, its file and its tensor; the chunks' counts
// add up to the tensor (a reader also checks that they cover every element).
auto CheckChunks(const Index& index) -> std::string {
  for (const Tensor& t : index.tensors) {
    int64_t covered = 0;
    for (const Chunk& c : t.chunks) {
      int64_t part_rows = 0;
      for (const model::TensorPart::Rows& r : c.part.row_blocks) {
        if (r.first + r.count > t.rows)
          return fmt::format("{}: a chunk holds rows past the tensor's {}", t.name, t.rows);
        part_rows += r.count;
      }
      if (c.part.col_first + c.part.col_count > t.cols || part_rows > t.rows)
        return fmt::format("{}: a chunk's part is not inside the tensor's {} x {}", t.name, t.rows, t.cols);
      if (c.first + c.count > part_rows * c.part.col_count)
        return fmt::format("{}: a chunk's elements run past its part", t.name);
      if (c.file >= static_cast<int64_t>(index.files.size()))
        return fmt::format("{}: a chunk is in file {}, but the index lists {} files", t.name, c.file,
                           index.files.size());
      const DataFile& f = index.files[static_cast<size_t>(c.file)];
      if (c.offset > f.bytes || static_cast<uint64_t>(c.count) * 4 > f.bytes - c.offset)
        return fmt::format("{}: a chunk runs past the end of {} ({} bytes)", t.name, f.name, f.bytes);
      covered += c.count;
      if (covered > t.rows * t.cols) break;
    }
    if (covered != t.rows * t.cols)
      return fmt::format("{}: its chunks hold {} elements, but the tensor has {} x {}", t.name, covered, t.rows,
                         t.cols);
  }
  return "";
}

}  // namespace

auto Prefix(StateKind kind) -> llvm::StringRef {
  switch (kind) {
    case StateKind::Param: return "param/";
    case StateKind::AdamM: return "adam_m/";
    case StateKind::AdamV: return "adam_v/";
  }
  return "";
}

auto IndexToJson(const Index& index) -> std::string {
  const Origin& o = index.origin;
  const DataPosition& d = index.data;
  Array files;
  for (const DataFile& f : index.files) files.push_back(FileJson(f));
  Object plan{{"sha256", o.plan_sha256}, {"ranks", o.ranks},
              {"data", o.data},          {"tensor", o.tensor},
              {"pipeline", o.pipeline},  {"virtual_stages", o.virtual_stages},
              {"zero", o.zero},          {"micro_batch", o.micro_batch}};
  Object data{{"dataset", d.dataset}, {"tokens", d.tokens}, {"global_batch", d.global_batch},  {"seq_len", d.seq_len},
              {"batches", d.batches}, {"epoch", d.epoch},   {"next_sequence", d.next_sequence}};
  return Print(
      Object{{"format", kFormatName},
             {"version", kFormatVersion},
             {"step", index.step},
             {"origin", Object{{"job", o.job},
                               {"model", ModelJson(o.model)},
                               {"precision", o.precision},
                               {"plan", std::move(plan)},
                               {"init_seed", static_cast<int64_t>(o.init_seed)}}},
             {"data", std::move(data)},
             {"encryption",
              index.key_id.empty() ? Value(nullptr) : Value(Object{{"cipher", kCipher}, {"key_id", index.key_id}})},
             {"files", std::move(files)},
             {"tensors", TensorsJson(index.tensors)}});
}

auto ParseIndex(llvm::StringRef text, llvm::StringRef path) -> llvm::Expected<Index> {
  llvm::Expected<Value> v = Parse(text, path);
  if (!v) return v.takeError();
  std::string error;
  Reader root(v->getAsObject(), "", error);
  Index index;
  if (root.Str("format") != kFormatName) return Problem(path, "not an aviflow checkpoint index");
  int64_t version = root.Int("version", 0, INT64_MAX);
  if (error.empty() && version != kFormatVersion) {
    return Problem(path,
                   fmt::format("checkpoint format version {}; this avf-run reads version {}", version, kFormatVersion));
  }
  index.step = root.Int("step");
  index.origin = ReadOrigin(root.Obj("origin"));
  index.data = ReadData(root.Obj("data"));
  if (const Object* o = v->getAsObject(); o && o->get("encryption") && !o->get("encryption")->getAsNull()) {
    Reader encryption = root.Obj("encryption");
    if (encryption.Str("cipher") != kCipher) encryption.Fail("cipher", fmt::format("expected \"{}\"", kCipher.str()));
    index.key_id = encryption.Str("key_id");
  } else if (!o || !o->get("encryption")) {
    root.Fail("encryption", "missing (null when the files are not encrypted)");
  }
  if (const Array* files = root.Arr("files")) {
    for (size_t i = 0; i < files->size(); ++i) {
      index.files.push_back(ReadFile(root.At(fmt::format("files[{}]", i), (*files)[i])));
    }
  }
  ReadTensors(root, index.tensors);
  if (error.empty()) error = CheckChunks(index);
  if (!error.empty()) return Problem(path, error);
  return index;
}

auto RankPartToJson(const RankPart& part) -> std::string {
  return Print(Object{{"file", FileJson(part.file)}, {"tensors", TensorsJson(part.tensors)}});
}

auto ParseRankPart(llvm::StringRef text, llvm::StringRef path) -> llvm::Expected<RankPart> {
  llvm::Expected<Value> v = Parse(text, path);
  if (!v) return v.takeError();
  std::string error;
  Reader root(v->getAsObject(), "", error);
  RankPart part;
  part.file = ReadFile(root.Obj("file"));
  ReadTensors(root, part.tensors);
  if (!error.empty()) return Problem(path, error);
  return part;
}

auto ArchName(model::Arch arch) -> llvm::StringRef { return arch == model::Arch::Llama ? "llama" : "gpt2"; }

}  // namespace avf::checkpoint

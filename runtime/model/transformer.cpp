#include "model/transformer.h"

#include <algorithm>
#include <cmath>
#include <string_view>

namespace avf::model {

namespace {

auto SplitMix(uint64_t x) -> uint64_t {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// FNV-1a: the tensor's name picks its own random stream.
auto NameHash(std::string_view name) -> uint64_t {
  uint64_t h = 0xcbf29ce484222325ull;
  for (char c : name) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
  return h;
}

// N(0, 1) for element `index` of a stream: Box-Muller on two counter-based
// uniforms, so any element is computed without the ones before it.
auto Normal(uint64_t stream, int64_t index) -> double {
  constexpr double kScale = 1.0 / 9007199254740992.0;  // 2^-53
  auto i = static_cast<uint64_t>(index);
  double u1 = (static_cast<double>(SplitMix(stream ^ SplitMix(2 * i)) >> 11) + 1.0) * kScale;
  double u2 = static_cast<double>(SplitMix(stream ^ SplitMix(2 * i + 1)) >> 11) * kScale;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

auto EndsWith(const std::string& s, std::string_view tail) -> bool {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

template <typename T>
Transformer<T>::Transformer(ModelConfig config, ShardSpec shard, backend::Kernels<T>& kernels,
                            comm::Communicator* tensor)
    : config_(config),
      shard_(std::move(shard)),
      layout_(LayoutOf(config_, shard_)),
      k_(kernels),
      tp_(tensor),
      params_(k_, static_cast<size_t>(layout_.total)),
      grads_(k_, static_cast<size_t>(layout_.total)),
      ctx_{config_, layout_, k_, tp_, shard_.sequence_parallel, {params_.data()}, {grads_.data()}, w_} {
  const std::vector<ParamLayout::Range>& blocks = layout_.block_ranges;
  int64_t front = blocks.empty() ? layout_.total : blocks.front().first;
  int64_t back = blocks.empty() ? layout_.total : blocks.back().first + blocks.back().count;
  segments_.push_back({0, front});
  for (const ParamLayout::Range& r : blocks) segments_.push_back({r.first, r.count});
  segments_.push_back({back, layout_.total - back});
}

template <typename T>
void Transformer<T>::InitialValues(uint64_t seed, int64_t first, int64_t count, float* out) const {
  double residual_scale = 1.0 / std::sqrt(2.0 * static_cast<double>(config_.layers));
  for (const ParamTensor& t : layout_.tensors) {
    int64_t lo = std::max(first, t.offset), hi = std::min(first + count, t.offset + t.size);
    if (lo >= hi) continue;
    bool norm = t.name.find("ln_") != std::string::npos;
    bool bias = EndsWith(t.name, ".bias");
    bool residual = EndsWith(t.name, "attn.proj.weight") || EndsWith(t.name, "mlp.proj.weight") ||
                    EndsWith(t.name, "mlp.down.weight");
    uint64_t stream = SplitMix(seed ^ NameHash(t.name));
    for (int64_t i = lo; i < hi; ++i) {
      double v = bias   ? 0.0
                 : norm ? 1.0
                        : 0.02 * Normal(stream, t.part.FullIndex(i - t.offset)) * (residual ? residual_scale : 1.0);
      out[i - first] = static_cast<float>(v);
    }
  }
}

template <typename T>
void Transformer<T>::Initialize(uint64_t seed) {
  if (params_.empty()) return;  // windowed parameters: the owner of each slice initializes it
  // In pieces: a whole host copy of a large model's parameters would be what
  // decides the process's peak memory.
  constexpr int64_t kPiece = 1 << 20;
  std::vector<float> values(static_cast<size_t>(std::min(kPiece, layout_.total)));
  std::vector<T> host(values.size());
  for (int64_t first = 0; first < layout_.total; first += kPiece) {
    int64_t count = std::min(kPiece, layout_.total - first);
    InitialValues(seed, first, count, values.data());
    for (int64_t i = 0; i < count; ++i)
      host[static_cast<size_t>(i)] = backend::Narrow<T>(values[static_cast<size_t>(i)]);
    k_.CopyFromHost(params_.data() + first, host.data(), static_cast<size_t>(count) * sizeof(T));
  }
}

template <typename T>
void Transformer<T>::UseWindows(Windows windows) {
  windowed_ = true;
  windows_ = std::move(windows);
  int64_t widest = 0;
  for (const ParamLayout::Range& r : layout_.block_ranges) widest = std::max(widest, r.count);
  const Segment& front = segments_.front();
  const Segment& back = segments_.back();
  auto views = [&](Buffer<T>& f, Buffer<T>& b, Buffer<T>& k) -> StateView<T> {
    f = ctx_.Alloc(front.count), k = ctx_.Alloc(widest), b = ctx_.Alloc(back.count);
    return {nullptr, f.data(), front.count, k.data(), 0, b.data(), back.first};
  };
  grads_ = Buffer<T>();
  ctx_.grads = views(g_front_, g_back_, g_block_);
  if (windows_.parameters) {
    params_ = Buffer<T>();
    ctx_.params = views(p_front_, p_back_, p_block_);
  }
}

template <typename T>
void Transformer<T>::Enter(int64_t segment) {
  if (!windowed_) return;
  const Segment& s = segments_[static_cast<size_t>(segment)];
  bool block = segment > 0 && segment < back_segment();
  if (block) ctx_.grads.block_first = ctx_.params.block_first = s.first;
  if (!windows_.parameters || s.count == 0) return;
  T* window = block ? p_block_.data() : segment == 0 ? p_front_.data() : p_back_.data();
  windows_.fill(segment, window);
}

// The head reads the back segment, and wte in the front one when the
// output projection is the embedding itself (tied, on one stage).
template <typename T>
void Transformer<T>::EnterHead() {
  Enter(back_segment());
  if (layout_.lm_head < 0) Enter(0);
}

template <typename T>
void Transformer<T>::ZeroGradients() {
  grads_.Zero();
  g_front_.Zero(), g_block_.Zero(), g_back_.Zero();
}

template <typename T>
auto Transformer<T>::BlocksOf(int64_t chunk) const -> std::pair<int64_t, int64_t> {
  const std::vector<int64_t>& first = layout_.chunk_first_block;
  int64_t end =
      chunk + 1 < chunks() ? first[static_cast<size_t>(chunk + 1)] : static_cast<int64_t>(layout_.blocks.size());
  return {first[static_cast<size_t>(chunk)], end};
}

template <typename T>
void Transformer<T>::ReserveSlot(Slot& s) {
  int64_t n = ctx_.n(), rc = ctx_.rows() * config_.hidden;
  s.tokens = Buffer<uint32_t>(k_, static_cast<size_t>(IsEmbedding(0) ? n : 0));
  s.targets = Buffer<uint32_t>(k_, static_cast<size_t>(shard_.output ? n : 0));
  s.chunks.resize(static_cast<size_t>(chunks()));
  for (int64_t c = 0; c < chunks(); ++c) {
    ChunkActs& a = s.chunks[static_cast<size_t>(c)];
    auto [first, end] = BlocksOf(c);
    a.input = ctx_.Alloc(rc);
    a.blocks.resize(static_cast<size_t>(end - first));
    for (BlockActs<T>& b : a.blocks) ReserveBlock(ctx_, b);
    if (IsOutput(c)) ReserveHead(ctx_, a.head);
  }
}

// Everything a step touches is allocated here, once per shape, so the steps
// themselves allocate nothing.
template <typename T>
void Transformer<T>::Reserve(int64_t batch, int64_t seq, int64_t slots) {
  if (batch == ctx_.batch && seq == ctx_.seq && slots == static_cast<int64_t>(slots_.size())) return;
  ctx_.batch = batch, ctx_.seq = seq;
  ReserveWorkspace(ctx_);
  slots_.clear();
  slots_.resize(static_cast<size_t>(slots));
  for (Slot& s : slots_) ReserveSlot(s);
  losses_.assign(static_cast<size_t>(slots), 0.0);
  dnext_ = ctx_.Alloc(ctx_.rows() * config_.hidden);
  dinput_ = ctx_.Alloc(ctx_.rows() * config_.hidden);
}

template <typename T>
auto Transformer<T>::At(int64_t chunk, int64_t slot) -> ChunkActs& {
  return slots_[static_cast<size_t>(slot)].chunks[static_cast<size_t>(chunk)];
}

template <typename T>
void Transformer<T>::SetTokens(int64_t slot, const uint32_t* tokens) {
  Buffer<uint32_t>& b = slots_[static_cast<size_t>(slot)].tokens;
  k_.CopyFromHost(b.data(), tokens, b.size() * sizeof(uint32_t));
}

template <typename T>
void Transformer<T>::SetTargets(int64_t slot, const uint32_t* targets) {
  Buffer<uint32_t>& b = slots_[static_cast<size_t>(slot)].targets;
  k_.CopyFromHost(b.data(), targets, b.size() * sizeof(uint32_t));
}

template <typename T>
auto Transformer<T>::Input(int64_t chunk, int64_t slot) -> T* {
  return At(chunk, slot).input.data();
}

template <typename T>
auto Transformer<T>::Output(int64_t chunk, int64_t slot) -> const T* {
  ChunkActs& a = At(chunk, slot);
  return a.blocks.empty() ? a.input.data() : a.blocks.back().out.data();
}

template <typename T>
void Transformer<T>::ForwardChunk(int64_t chunk, int64_t slot) {
  ChunkActs& a = At(chunk, slot);
  Slot& s = slots_[static_cast<size_t>(slot)];
  if (IsEmbedding(chunk)) {
    Enter(0);
    EmbedForward(ctx_, s.tokens.data(), a.input.data());
  }
  auto [first, end] = BlocksOf(chunk);
  const T* x = a.input.data();
  for (int64_t b = first; b < end; ++b) {
    BlockActs<T>& acts = a.blocks[static_cast<size_t>(b - first)];
    Enter(BlockSegment(b));
    BlockForward(ctx_, layout_.blocks[static_cast<size_t>(b)], x, acts);
    x = acts.out.data();
  }
  if (IsOutput(chunk)) {
    EnterHead();
    losses_[static_cast<size_t>(slot)] = HeadForward(ctx_, x, s.targets.data(), a.head);
  }
}

// d(output) comes from the head or from OutputGrad (dnext_); each block's
// input gradient alternates between dnext_ and dinput_, ending in dinput_.
template <typename T>
void Transformer<T>::BackwardChunk(int64_t chunk, int64_t slot) {
  ChunkActs& a = At(chunk, slot);
  Slot& s = slots_[static_cast<size_t>(slot)];
  auto [first, end] = BlocksOf(chunk);
  size_t bytes = ActivationBytes();
  Buffer<T>& dinput = dinput_;
  Buffer<T>* cur = &dnext_;
  if (IsOutput(chunk)) {
    dnext_.Zero();
    EnterHead();
    HeadBackward(ctx_, Output(chunk, slot), s.targets.data(), a.head, dnext_.data());
  } else {
    // The caller wrote d(output) into OutputGrad(), which is dnext_.
  }
  Buffer<T>* other = &dinput;
  for (int64_t b = end - 1; b >= first; --b) {
    other->Zero();
    Enter(BlockSegment(b));
    BlockBackward(ctx_, layout_.blocks[static_cast<size_t>(b)], a.blocks[static_cast<size_t>(b - first)], cur->data(),
                  other->data());
    std::swap(cur, other);
    if (windowed_) {
      FinishBlockGradients(b);
      windows_.take(b, g_block_.data());
      g_block_.Zero();
    } else if (on_block_gradients_) {
      on_block_gradients_(b);
    }
  }
  if (cur != &dinput) k_.Copy2D(dinput.data(), 0, cur->data(), 0, bytes, 1);
  if (IsEmbedding(chunk)) {
    Enter(0);
    EmbedBackward(ctx_, s.tokens.data(), dinput.data());
  }
}

template <typename T>
void Transformer<T>::FinishBlockGradients(int64_t block) {
  if (!shard_.sequence_parallel || tp_.size() == 1) return;
  const BlockParams& b = layout_.blocks[static_cast<size_t>(block)];
  ctx_.grads.block_first = layout_.block_ranges[static_cast<size_t>(block)].first;
  for (int64_t offset : {b.ln1_w, b.ln1_b, b.ln2_w, b.ln2_b}) {
    if (offset >= 0) tp_.AllReduce(ctx_.G(offset), config_.hidden);
  }
}

template <typename T>
void Transformer<T>::FinishHeadGradients() {
  if (!shard_.sequence_parallel || tp_.size() == 1) return;
  for (int64_t offset : {layout_.lnf_w, layout_.lnf_b}) {
    if (offset >= 0) tp_.AllReduce(ctx_.G(offset), config_.hidden);
  }
}

template <typename T>
void Transformer<T>::FinishGradients() {
  // Windowed blocks were summed before they were taken.
  for (int64_t b = 0; !windowed_ && b < static_cast<int64_t>(layout_.blocks.size()); ++b) FinishBlockGradients(b);
  FinishHeadGradients();
}

template <typename T>
auto Transformer<T>::Forward(const uint32_t* tokens, const uint32_t* targets, int64_t batch, int64_t seq) -> double {
  Reserve(batch, seq, 1);
  SetTokens(0, tokens);
  SetTargets(0, targets);
  for (int64_t c = 0; c < chunks(); ++c) {
    if (c > 0) k_.Copy2D(Input(c, 0), 0, Output(c - 1, 0), 0, ActivationBytes(), 1);
    ForwardChunk(c, 0);
  }
  return Loss(0);
}

template <typename T>
void Transformer<T>::Backward() {
  for (int64_t c = chunks() - 1; c >= 0; --c) {
    if (c + 1 < chunks()) k_.Copy2D(OutputGrad(), 0, InputGrad(), 0, ActivationBytes(), 1);
    BackwardChunk(c, 0);
  }
}

namespace {

template <typename B>
auto Bytes(const B& b) -> int64_t {
  return static_cast<int64_t>(b.size() * sizeof(*b.data()));
}

template <typename T>
auto BlockBytes(const BlockActs<T>& a) -> int64_t {
  int64_t sum = Bytes(a.mean1) + Bytes(a.rstd1) + Bytes(a.mean2) + Bytes(a.rstd2) + Bytes(a.attention);
  for (const Buffer<T>* b : {&a.ln1, &a.q, &a.k, &a.v, &a.attn, &a.x2, &a.ln2, &a.h, &a.act, &a.out}) {
    sum += Bytes(*b);
  }
  return sum;
}

template <typename T>
auto WorkspaceBytes(const Workspace<T>& w) -> int64_t {
  int64_t sum = 0;
  for (const Buffer<T>* b :
       {&w.qkv, &w.full, &w.partial, &w.rows,  &w.gate, &w.up, &w.dfull, &w.dpartial, &w.drows, &w.dx2, &w.dz,
        &w.dy,  &w.dact, &w.dh,      &w.dattn, &w.dq,   &w.dk, &w.dv,    &w.dqkv,     &w.dgate, &w.dup, &w.logits}) {
    sum += Bytes(*b);
  }
  for (const Buffer<Wide<T>>* b : {&w.row_max, &w.maxes, &w.target, &w.row_sum, &w.dlosses}) sum += Bytes(*b);
  return sum;
}

}  // namespace

template <typename T>
auto Transformer<T>::Memory() const -> MemoryBytes {
  MemoryBytes m;
  m.parameters = Bytes(params_), m.gradients = Bytes(grads_);
  for (const Slot& s : slots_) {
    m.activations += Bytes(s.tokens) + Bytes(s.targets);
    for (const ChunkActs& c : s.chunks) {
      m.activations += Bytes(c.input);
      for (const BlockActs<T>& b : c.blocks) m.activations += BlockBytes(b);
      const HeadActs<T>& h = c.head;
      m.activations += Bytes(h.lnf) + Bytes(h.mean) + Bytes(h.rstd) + Bytes(h.probs) + Bytes(h.losses);
    }
  }
  // The logits (one micro-batch's, in the workspace) are what the planner's
  // activations count for the output layer, beside the kept probabilities.
  m.activations += Bytes(w_.logits);
  m.scratch = WorkspaceBytes(w_) - Bytes(w_.logits) + Bytes(dnext_) + Bytes(dinput_);
  for (const Buffer<T>* b : {&p_front_, &p_block_, &p_back_, &g_front_, &g_block_, &g_back_}) m.scratch += Bytes(*b);
  return m;
}

template class Transformer<float>;
template class Transformer<double>;
template class Transformer<backend::Bf16>;

}  // namespace avf::model

// The GPT-2 / Llama transformer, or the shard of it one rank of a parallel
// plan holds (model/config.h ShardSpec: a pipeline stage's model chunks, cut
// across the tensor group), on a compute backend (backend/backend.h).
// Gradients go into a flat buffer laid out like the parameters and
// ACCUMULATE (call ZeroGradients between steps), so micro-batches add up.
//
// Two ways to drive it:
//  - Forward/Backward: one micro-batch through the whole model (one rank,
//    or a tensor group holding every layer);
//  - the chunk calls, for a pipeline schedule: activations of up to `slots`
//    micro-batches in flight are kept, each chunk's input and output
//    exchanged by the caller (Input/Output, OutputGrad/InputGrad).
// Tensor-parallel collectives cannot fail silently: after each call that may
// communicate, TakeError() returns the first failure.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "backend/backend.h"
#include "backend/buffer.h"
#include "comm/communicator.h"
#include "cpu/cpu_backend.h"
#include "model/config.h"
#include "model/layers.h"
#include "model/tensor_group.h"

namespace avf::model {

template <typename T>
class Transformer {
 public:
  // `tensor` is this rank's tensor group (null: one tensor rank); its size
  // and rank must be shard.tensor_size and shard.tensor_rank.
  explicit Transformer(ModelConfig config, ShardSpec shard = {}, backend::Kernels<T>& kernels = cpu::Backend<T>(),
                       comm::Communicator* tensor = nullptr);

  // GPT-2-style initialisation: N(0, 0.02), residual projections scaled by
  // 1/sqrt(2 x layers), biases 0, norm weights 1. Each element's value
  // depends only on the seed, its tensor's name and its index in the full
  // tensor, so every shard holds exactly the full model's values.
  void Initialize(uint64_t seed);

  auto Forward(const uint32_t* tokens, const uint32_t* targets, int64_t batch, int64_t seq) -> double;
  void Backward();
  void ZeroGradients();

  // Activations for `slots` micro-batches of batch x seq; reallocates only
  // when the shape changes.
  void Reserve(int64_t batch, int64_t seq, int64_t slots);
  // Rows of the activations chunks exchange: batch x seq, / T with sequence parallelism.
  auto activation_rows() const -> int64_t { return ctx_.rows(); }
  auto ActivationBytes() const -> size_t { return static_cast<size_t>(ctx_.rows() * config_.hidden) * sizeof(T); }
  auto chunks() const -> int64_t { return static_cast<int64_t>(layout_.chunk_first_block.size()); }
  // Host arrays of batch x seq, for the embedding chunk and the output chunk.
  void SetTokens(int64_t slot, const uint32_t* tokens);
  void SetTargets(int64_t slot, const uint32_t* targets);
  // A chunk without the embedding reads its input here (activation_rows() x hidden).
  auto Input(int64_t chunk, int64_t slot) -> T*;
  void ForwardChunk(int64_t chunk, int64_t slot);
  auto Output(int64_t chunk, int64_t slot) -> const T*;
  // The mean loss of the slot's micro-batch, after the output chunk's forward.
  auto Loss(int64_t slot) const -> double { return losses_[static_cast<size_t>(slot)]; }
  // A chunk without the output head reads d(output) here before
  // BackwardChunk; InputGrad holds d(input) after it. One buffer each,
  // shared by every chunk and slot: write the one just before the backward,
  // read (or send) the other before the next backward.
  auto OutputGrad() -> T* { return dnext_.data(); }
  void BackwardChunk(int64_t chunk, int64_t slot);
  auto InputGrad() const -> const T* { return dinput_.data(); }
  // Once per step, after its last backward: with sequence parallelism each
  // tensor rank has the norms' gradients of its own rows only; this sums
  // them over the tensor group (so calling it twice would count them twice).
  // FinishGradients does every block and the head; an engine that reduces
  // blocks as they complete calls FinishBlockGradients(block) for each, then
  // FinishHeadGradients().
  void FinishGradients();
  void FinishBlockGradients(int64_t block);
  void FinishHeadGradients();

  // A contiguous part of the flat buffer that the windowed modes move as
  // one: segment 0 holds the tensors before the first block (the
  // embeddings), segments 1 .. blocks the blocks, the last one the tensors
  // after the last block (final norm, output projection); an end may be empty.
  struct Segment {
    int64_t first = 0, count = 0;
  };
  auto segments() const -> const std::vector<Segment>& { return segments_; }
  static auto BlockSegment(int64_t block) -> int64_t { return block + 1; }
  auto back_segment() const -> int64_t { return static_cast<int64_t>(segments_.size()) - 1; }

  // ZeRO 2 and 3: the rank keeps no whole gradient buffer (and, with
  // `parameters`, no whole parameter buffer); each segment is computed in a
  // window. `fill` is called before a segment's parameters are read, to put
  // them in `window`; `take` gets a block's gradients of one micro-batch as
  // soon as its backward is done (with sequence parallelism already summed
  // over the tensor group), and the window is zeroed after. The front and
  // back windows' gradients accumulate over the micro-batches until the
  // caller takes them (FrontGradients, BackGradients) after the step's last
  // backward. Call before Reserve.
  struct Windows {
    bool parameters = false;
    std::function<void(int64_t segment, T* window)> fill;
    std::function<void(int64_t block, T* window)> take;
  };
  void UseWindows(Windows windows);
  auto windowed() const -> bool { return windowed_; }
  auto FrontGradients() -> T* { return g_front_.data(); }
  auto BackGradients() -> T* { return g_back_.data(); }
  // The values of elements [first, first + count) of this shard's flat
  // parameter buffer after Initialize(seed), for a rank that holds a slice:
  // in fp32, which Initialize rounds to T (bf16 training keeps them as its
  // fp32 master).
  void InitialValues(uint64_t seed, int64_t first, int64_t count, float* out) const;

  // Called by BackwardChunk after each block's backward with the block's
  // index (its gradients are ParamLayout::block_ranges[block]), so a
  // data-parallel reducer can start on them while the next block runs.
  using GradientHook = std::function<void(int64_t block)>;
  void SetGradientHook(GradientHook hook) { on_block_gradients_ = std::move(hook); }

  // Bytes of what this rank holds, by what the planner predicts: the
  // parameter and gradient buffers (whole; empty when windowed), the
  // activations kept for backward over every slot (embedding outputs,
  // blocks, head, received inputs and gradients), and the scratch: the
  // shared workspace and the windows.
  struct MemoryBytes {
    int64_t parameters = 0, gradients = 0, activations = 0, scratch = 0;
  };
  auto Memory() const -> MemoryBytes;

  auto TakeError() -> llvm::Error { return tp_.TakeError(); }
  // Seconds in tensor-parallel collectives since the last call.
  auto TakeTensorCommSeconds() -> double { return tp_.TakeSeconds(); }
  auto config() const -> const ModelConfig& { return config_; }
  auto shard() const -> const ShardSpec& { return shard_; }
  auto layout() const -> const ParamLayout& { return layout_; }
  auto kernels() -> backend::Kernels<T>& { return k_; }
  // In the backend's memory: host-visible on the CPU backend.
  auto parameters() -> Buffer<T>& { return params_; }
  auto gradients() -> Buffer<T>& { return grads_; }

 private:
  struct ChunkActs {
    Buffer<T> input;
    std::vector<BlockActs<T>> blocks;
    HeadActs<T> head;
  };
  struct Slot {
    Buffer<uint32_t> tokens, targets;
    std::vector<ChunkActs> chunks;
  };
  auto BlocksOf(int64_t chunk) const -> std::pair<int64_t, int64_t>;
  auto IsEmbedding(int64_t chunk) const -> bool { return shard_.embedding && chunk == 0; }
  auto IsOutput(int64_t chunk) const -> bool { return shard_.output && chunk == chunks() - 1; }
  auto At(int64_t chunk, int64_t slot) -> ChunkActs&;
  void ReserveSlot(Slot& s);
  // Windowed modes: before a segment is computed, its parameters in place
  // and the views pointing at the block's windows.
  void Enter(int64_t segment);
  void EnterHead();

  ModelConfig config_;
  ShardSpec shard_;
  ParamLayout layout_;
  backend::Kernels<T>& k_;
  TensorGroup tp_;
  Buffer<T> params_, grads_;
  Workspace<T> w_;
  LayerContext<T> ctx_;
  std::vector<Slot> slots_;
  std::vector<double> losses_;
  Buffer<T> dnext_, dinput_;
  GradientHook on_block_gradients_;
  std::vector<Segment> segments_;
  bool windowed_ = false;
  Windows windows_;
  Buffer<T> p_front_, p_block_, p_back_, g_front_, g_block_, g_back_;
};

}  // namespace avf::model

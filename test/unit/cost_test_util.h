// Model shapes, hardware and layouts the cost model's unit tests share
// (cost_test.cpp, cost_compute_test.cpp).
#pragma once

#include <cmath>
#include <cstdint>

#include <gtest/gtest.h>

#include "cost/counts.h"
#include "cost/predict.h"
#include "cost/shape.h"

namespace avf::cost::test_shapes {

inline auto D(int64_t v) -> double { return static_cast<double>(v); }

// |actual - expected| <= rel * |expected|.
inline void ExpectRel(double actual, double expected, double rel) {
  EXPECT_NEAR(actual, expected, rel * std::fabs(expected)) << "relative bound " << rel;
}

inline auto Gpt(int64_t layers, int64_t hidden, int64_t heads, int64_t vocab, int64_t seq) -> ModelShape {
  ModelShape m;
  m.arch = Arch::Gpt2;
  m.layers = layers;
  m.hidden = hidden;
  m.heads = heads;
  m.kv_heads = heads;
  m.ffn = 4 * hidden;
  m.vocab = vocab;
  m.seq_len = seq;
  m.tied_embeddings = true;
  return m;
}

inline auto Llama(int64_t layers, int64_t hidden, int64_t heads, int64_t kv_heads, int64_t ffn, int64_t vocab,
                  int64_t seq) -> ModelShape {
  ModelShape m;
  m.arch = Arch::Llama;
  m.layers = layers;
  m.hidden = hidden;
  m.heads = heads;
  m.kv_heads = kv_heads;
  m.ffn = ffn;
  m.vocab = vocab;
  m.seq_len = seq;
  m.tied_embeddings = false;
  return m;
}

// The shapes of stdlib/models.avf (config.json of each reference checkpoint).
inline auto Gpt2_124M() -> ModelShape { return Gpt(12, 768, 12, 50257, 1024); }
inline auto Gpt2_1558M() -> ModelShape { return Gpt(48, 1600, 25, 50257, 1024); }
inline auto Llama2_7B() -> ModelShape { return Llama(32, 4096, 32, 32, 11008, 32000, 4096); }
inline auto Llama2_13B() -> ModelShape { return Llama(40, 5120, 40, 40, 13824, 32000, 4096); }
inline auto Llama2_70B() -> ModelShape { return Llama(80, 8192, 64, 8, 28672, 32000, 4096); }
inline auto Llama3_8B() -> ModelShape { return Llama(32, 4096, 32, 8, 14336, 128256, 8192); }
inline auto Llama3_70B() -> ModelShape { return Llama(80, 8192, 64, 8, 28672, 128256, 8192); }
inline auto Llama3_405B() -> ModelShape { return Llama(126, 16384, 128, 8, 53248, 128256, 8192); }

// An 8-GPU node with A100-like numbers; latencies 0 unless a test sets them,
// so that the bandwidth terms can be compared exactly.
inline auto Node8() -> Hardware {
  Hardware hw;
  hw.gpu_memory = 80e9;
  hw.peak_flops = 312e12;
  hw.hbm_bandwidth = 2039e9;
  hw.gpus_per_node = 8;
  hw.nvlink_bandwidth = 300e9;
  hw.nic_bandwidth = 25e9;
  hw.nics_per_node = 8;
  hw.nodes = 64;
  return hw;
}

inline auto Work(const ModelShape& m, int64_t gpus, int64_t batch) -> Workload {
  Workload w;
  w.model = m;
  w.gpus = gpus;
  w.global_batch = batch;
  return w;
}

inline auto MakeLayout(int64_t data, int64_t tensor, int64_t pipeline, int64_t micro_batch) -> Layout {
  Layout l;
  l.data = data;
  l.tensor = tensor;
  l.pipeline = pipeline;
  l.micro_batch = micro_batch;
  return l;
}

// Constants for the formula tests, independent of the fitted ones.
inline constexpr Calibration kPlain{
    .matmul_efficiency = 0.65,
    .narrow_width = 256,
    .balance_exponent = 0,
    .attention_efficiency = 0.5,
    .attention_balance_exponent = 0,
    .elementwise_bytes = 0,
    .overlap = 1,
    .interference = 0,
};

}  // namespace avf::cost::test_shapes

// The CUDA kernels (kernels/) against their CPU references: GELU forward and
// backward against runtime/cpu, three AdamW updates against optim::AdamW,
// element by element, and the squared norm over runs against the host sum.
// Without a GPU (this machine, CI) the GPU tests skip with CUDA's reason,
// and a launch must fail with an error, not crash.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cpu/kernels.h"
#include "kernels/cuda_backend.h"
#include "kernels/kernels.h"
#include "optim/optimizer.h"

namespace avf::kernels {
namespace {

// Empty when a device can run kernels; else CUDA's reason.
auto NoDevice() -> std::string {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) return std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
  return n > 0 ? "" : "no CUDA device is visible";
}

#define REQUIRE_GPU()                                                    \
  do {                                                                   \
    if (std::string why = NoDevice(); !why.empty()) GTEST_SKIP() << why; \
  } while (0)

// A device copy of a host vector, freed at scope exit.
template <typename T>
class Device {
 public:
  explicit Device(const std::vector<T>& host) : n_(host.size()) {
    EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(&p_), n_ * sizeof(T)), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(p_, host.data(), n_ * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
  }
  ~Device() { cudaFree(p_); }
  Device(const Device&) = delete;
  auto operator=(const Device&) -> Device& = delete;
  auto get() -> T* { return p_; }
  auto Host() const -> std::vector<T> {
    std::vector<T> host(n_);
    EXPECT_EQ(cudaMemcpy(host.data(), p_, n_ * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
    return host;
  }

 private:
  T* p_ = nullptr;
  size_t n_;
};

auto Random(size_t n, float lo, float hi, uint32_t seed) -> std::vector<float> {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// Every element within a few float roundings of the tensor's scale. Both
// sides run optim::AdamWElement in fp32, but nvcc and the host compiler fuse
// different multiply-adds into FMAs, so an element differs by a few roundings of its
// TERMS; where the terms cancel (m = b1 m + (1 - b1) g with opposite signs)
// that is many roundings of the result, never more than of the largest value.
void ExpectClose(const std::vector<float>& got, const std::vector<float>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size());
  float scale = 0;
  for (float w : want) scale = std::max(scale, std::fabs(w));
  int reported = 0;
  for (size_t i = 0; i < got.size() && reported < 5; ++i) {
    if (std::fabs(got[i] - want[i]) > 1e-6f * scale + 1e-12f) {
      ADD_FAILURE() << what << "[" << i << "]: " << got[i] << " on the GPU, " << want[i] << " on the CPU";
      ++reported;
    }
  }
}

// The same for the GELU kernels, whose CPU reference computes in float (the
// GPU kernels in double): a few float roundings each, and in the tails the
// rounding of exp's argument grows with it. So within 1e-6 of the magnitudes
// involved, the result's and, for a backward that adds into `before`, the
// added term's, and 1e-7 (a float ulp near 1) for results near zero.
void ExpectCloseToFloatMath(const std::vector<float>& got, const std::vector<float>& want,
                            const std::vector<float>& before, const char* what) {
  ASSERT_EQ(got.size(), want.size());
  int reported = 0;
  for (size_t i = 0; i < got.size() && reported < 5; ++i) {
    double magnitude = std::fabs(want[i]) + std::fabs(want[i] - before[i]);
    if (std::fabs(got[i] - want[i]) > 1e-6 * magnitude + 1e-7) {
      ADD_FAILURE() << what << "[" << i << "]: " << got[i] << " on the GPU, " << want[i] << " on the CPU";
      ++reported;
    }
  }
}

// Over 65535 blocks of 256, so the grid-stride loop runs more than once.
constexpr size_t kN = 65535 * 256 + 1001;

TEST(Kernels, GeluForwardAndBackwardMatchTheCpu) {
  REQUIRE_GPU();
  std::vector<float> in = Random(kN, -6, 6, 1), dout = Random(kN, -1, 1, 2), din = Random(kN, -1, 1, 3);
  std::vector<float> out(kN), want_din = din;
  Device<float> d_in(in), d_out(out), d_dout(dout), d_din(din);
  ASSERT_EQ(GeluForward(d_out.get(), d_in.get(), kN, nullptr), cudaSuccess);
  ASSERT_EQ(GeluBackward(d_din.get(), d_in.get(), d_dout.get(), kN, nullptr), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  cpu::GeluForward(out.data(), in.data(), kN);
  cpu::GeluBackward(want_din.data(), in.data(), dout.data(), kN);  // adds into the nonzero din
  ExpectCloseToFloatMath(d_out.Host(), out, std::vector<float>(kN), "out");
  ExpectCloseToFloatMath(d_din.Host(), want_din, din, "din");
}

// The runs of `host` with their `before` (the counts of the runs ahead).
auto DeviceRuns(const std::vector<optim::ElementRun>& host) -> std::vector<DeviceRun> {
  std::vector<DeviceRun> runs;
  int64_t before = 0;
  for (const optim::ElementRun& r : host) {
    runs.push_back({r.first, r.count, before});
    before += r.count;
  }
  return runs;
}

TEST(Kernels, AdamWMatchesTheCpuOptimizer) {
  REQUIRE_GPU();
  constexpr size_t n = 100003;
  optim::OptimizerConfig c;
  c.lr = 1e-2, c.weight_decay = 0.1, c.warmup = 1, c.total_steps = 4, c.clip_norm = 1.0;
  std::vector<float> params = Random(n, -1, 1, 4);
  // Decay everywhere but on every third element.
  std::vector<optim::ElementRun> decayed;
  for (int64_t first = 1; first < static_cast<int64_t>(n); first += 3) {
    decayed.push_back({first, std::min<int64_t>(2, static_cast<int64_t>(n) - first)});
  }
  optim::AdamW cpu_adam(c, static_cast<int64_t>(n), decayed);
  std::vector<float> zeros(n, 0.0f);
  Device<float> d_params(params), d_m(zeros), d_v(zeros), d_publish(zeros);
  Device<DeviceRun> d_decayed(DeviceRuns(decayed));
  for (int64_t step = 0; step < 3; ++step) {
    std::vector<float> grads = Random(n, -0.1f, 0.1f, 10 + static_cast<uint32_t>(step));
    double norm = optim::GlobalNorm(grads.data(), static_cast<int64_t>(n));  // about 18: clipped
    optim::ElementScalars s = optim::ElementScalarsOf(c, optim::ScalarsOf(c, step, norm));
    Device<float> d_grads(grads);
    ASSERT_EQ(AdamWUpdate<float>(d_params.get(), d_grads.get(), d_m.get(), d_v.get(), n, d_decayed.get(),
                                 static_cast<int64_t>(decayed.size()), s, d_publish.get(), nullptr),
              cudaSuccess);
    cpu_adam.Step(params.data(), grads.data(), norm);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    ExpectClose(d_params.Host(), params, "params");
    ExpectClose(d_m.Host(), cpu_adam.moments().first, "m");
    ExpectClose(d_v.Host(), cpu_adam.moments().second, "v");
    EXPECT_TRUE(d_publish.Host() == d_params.Host()) << "published is not the master";  // fp32: the same
  }
}

// Over runs with gaps, zero-count runs and more counted elements than the
// norm's blocks take in one pass, twice (the same bits), against the host
// sum in double.
TEST(Kernels, SquaredNormMatchesTheHostSum) {
  REQUIRE_GPU();
  std::vector<optim::ElementRun> host;
  std::mt19937 rng(5);
  int64_t at = 0;
  for (int i = 0; i < 200; ++i) {
    at += static_cast<int64_t>(rng() % 100);
    int64_t count = i % 7 == 0 ? 0 : static_cast<int64_t>(rng() % 20000);
    host.push_back({at, count});
    at += count;
  }
  std::vector<float> x = Random(static_cast<size_t>(at) + 11, -2, 2, 6);
  std::vector<DeviceRun> runs = DeviceRuns(host);
  int64_t counted = runs.back().before + runs.back().count;
  double want = 0;
  for (const optim::ElementRun& r : host) {
    for (int64_t i = r.first; i < r.first + r.count; ++i) want += static_cast<double>(x[i]) * x[i];
  }
  Device<float> d_x(x);
  Device<DeviceRun> d_runs(runs);
  Device<double> d_out(std::vector<double>(2, -1.0));
  std::vector<char> workspace(SquaredNormWorkspaceBytes());
  Device<char> d_workspace(workspace);
  for (int rep = 0; rep < 2; ++rep) {
    ASSERT_EQ(SquaredNorm<float>(d_out.get() + rep, d_x.get(), d_runs.get(), static_cast<int64_t>(runs.size()), counted,
                                 d_workspace.get(), nullptr),
              cudaSuccess);
  }
  std::vector<double> got = d_out.Host();
  EXPECT_NEAR(got[0], want, 1e-12 * want);
  EXPECT_EQ(std::memcmp(&got[0], &got[1], sizeof(double)), 0) << got[0] << " then " << got[1];
  // No counted elements: 0, still written.
  ASSERT_EQ(SquaredNorm<float>(d_out.get(), d_x.get(), d_runs.get(), 0, 0, d_workspace.get(), nullptr), cudaSuccess);
  EXPECT_EQ(d_out.Host()[0], 0.0);
}

// Refused before CUDA is called: runs with or without a device.
TEST(Kernels, SizesAreChecked) {
  optim::ElementScalars s{};
  EXPECT_EQ(GeluForward<float>(nullptr, nullptr, -1, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(AdamWUpdate<float>(nullptr, nullptr, nullptr, nullptr, -5, nullptr, 0, s, nullptr, nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(AdamWUpdate<Bf16>(nullptr, nullptr, nullptr, nullptr, 5, nullptr, -1, s, nullptr, nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(SquaredNorm<float>(nullptr, nullptr, nullptr, -1, 0, nullptr, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(SquaredNorm<Bf16>(nullptr, nullptr, nullptr, 1, -1, nullptr, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(Scale<float>(nullptr, -1, 2.0f, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(GeluBackward<float>(nullptr, nullptr, nullptr, 0, nullptr), cudaSuccess);  // nothing to do
  EXPECT_EQ(AdamWUpdate<float>(nullptr, nullptr, nullptr, nullptr, 0, nullptr, 0, s, nullptr, nullptr), cudaSuccess);
  EXPECT_EQ(Scale<Bf16>(nullptr, 0, 2.0f, nullptr), cudaSuccess);
}

// avf-run refuses a GPU for a model whose heads attention would refuse
// (HeadDimProblem), before any rank joins: the two agree on every width.
TEST(Kernels, HeadWidthsRefusedBeforeTrainingAreThoseAttentionRefuses) {
  for (int64_t hd = 1; hd <= 2 * kAttentionMaxHeadDim; ++hd) {
    bool attention_takes = AttentionLseBytes({.b = 1, .t = 8, .heads = 2, .kv_heads = 1, .head_dim = hd}) > 0;
    EXPECT_EQ(HeadDimProblem(hd).empty(), attention_takes) << "head_dim " << hd;
  }
  EXPECT_EQ(HeadDimProblem(4),
            "the GPU's attention kernels take heads whose width (hidden / heads) is a multiple of 8 up to 256, and "
            "this model's is 4");
  EXPECT_FALSE(HeadDimProblem(0).empty());
  EXPECT_TRUE(HeadDimProblem(64).empty());
  EXPECT_TRUE(HeadDimProblem(128).empty());
}

TEST(Kernels, WithoutADeviceALaunchFailsWithCudasReason) {
  if (NoDevice().empty()) GTEST_SKIP() << "a CUDA device is visible";
  cudaError_t e = GeluForward<float>(nullptr, nullptr, 16, nullptr);
  EXPECT_NE(e, cudaSuccess);
  std::fprintf(stderr, "[expected failure] %s: %s\n", cudaGetErrorName(e), cudaGetErrorString(e));
}

}  // namespace
}  // namespace avf::kernels

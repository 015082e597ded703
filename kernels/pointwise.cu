// Element-wise kernels (kernels.h): GELU, SwiGLU, the residual add, rotary
// embeddings and the bf16 conversions. One thread per element (or rotated
// pair) in a grid-stride loop; inputs widened to fp32, each output rounded
// once, and every backward adds into its gradient with one rounding.
#include "kernels/device.cuh"
#include "kernels/kernels.h"

namespace avf::kernels {

namespace {

using device::GlobalThread;
using device::GridStride;
using device::Load;
using device::Store;

constexpr float kGeluScale = static_cast<float>(0.7978845608028654);  // sqrt(2 / pi)
constexpr float kGeluCubic = static_cast<float>(0.044715);
constexpr float kGeluCubic3 = static_cast<float>(3 * 0.044715);

__device__ __forceinline__ auto Sigmoid(float x) -> float { return 1.0f / (1.0f + expf(-x)); }

// out(N) = x sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3), x = in(N).
template <typename T>
__global__ void gelu_forward_kernel(T* out, const T* in, int64_t n) {
  for (int64_t i = GlobalThread(); i < n; i += GridStride()) {
    float x = Load(in[i]);
    float u = kGeluScale * (x + kGeluCubic * x * x * x);
    out[i] = Store<T>(x * Sigmoid(2.0f * u));
  }
}

// din(N) += (s + 2 x s (1 - s) du/dx) dout(N), s = sigmoid(2u), 1 - s taken
// as sigmoid(-2u) as on the CPU.
template <typename T>
__global__ void gelu_backward_kernel(T* din, const T* in, const T* dout, int64_t n) {
  for (int64_t i = GlobalThread(); i < n; i += GridStride()) {
    float x = Load(in[i]);
    float u = kGeluScale * (x + kGeluCubic * x * x * x);
    float du = kGeluScale * (1.0f + kGeluCubic3 * x * x);
    float s = Sigmoid(2.0f * u), one_minus_s = Sigmoid(-2.0f * u);
    float grad = s + 2.0f * x * s * one_minus_s * du;
    din[i] = Store<T>(Load(din[i]) + grad * Load(dout[i]));
  }
}

// out(N) = gate sigmoid(gate) up.
template <typename T>
__global__ void swiglu_forward_kernel(T* out, const T* gate, const T* up, int64_t n) {
  for (int64_t i = GlobalThread(); i < n; i += GridStride()) {
    float g = Load(gate[i]);
    out[i] = Store<T>(g * Sigmoid(g) * Load(up[i]));
  }
}

// dup(N) += silu(gate) dout, dgate(N) += up silu'(gate) dout.
template <typename T>
__global__ void swiglu_backward_kernel(T* dgate, T* dup, const T* dout, const T* gate, const T* up, int64_t n) {
  for (int64_t i = GlobalThread(); i < n; i += GridStride()) {
    float g = Load(gate[i]), dy = Load(dout[i]);
    float s = Sigmoid(g), one_minus_s = Sigmoid(-g);
    dup[i] = Store<T>(Load(dup[i]) + g * s * dy);
    dgate[i] = Store<T>(Load(dgate[i]) + Load(up[i]) * (s + g * s * one_minus_s) * dy);
  }
}

// out(N) = a(N) + b(N).
template <typename T>
__global__ void residual_forward_kernel(T* out, const T* a, const T* b, int64_t n) {
  for (int64_t i = GlobalThread(); i < n; i += GridStride()) out[i] = Store<T>(Load(a[i]) + Load(b[i]));
}

// da(N) += dout(N), db(N) += dout(N).
template <typename T>
__global__ void residual_backward_kernel(T* da, T* db, const T* dout, int64_t n) {
  for (int64_t i = GlobalThread(); i < n; i += GridStride()) {
    float dy = Load(dout[i]);
    da[i] = Store<T>(Load(da[i]) + dy);
    db[i] = Store<T>(Load(db[i]) + dy);
  }
}

// x(B, T, heads, head_dim) seen as pairs(B * T * heads * half): pair
// (2i, 2i+1) of position pos rotated by sign pos theta^(-2i/head_dim). The
// angle, its cosine and sine in double (the CPU's table), then cast to fp32.
template <typename T>
__global__ void rope_kernel(T* x, int64_t pairs, int64_t t, int64_t heads, int64_t half, double theta, double sign) {
  for (int64_t p = GlobalThread(); p < pairs; p += GridStride()) {
    int64_t i = p % half, pos = p / half / heads % t;
    double angle =
        sign * static_cast<double>(pos) * pow(theta, -2.0 * static_cast<double>(i) / static_cast<double>(2 * half));
    float c = static_cast<float>(cos(angle)), s = static_cast<float>(sin(angle));
    float x0 = Load(x[2 * p]), x1 = Load(x[2 * p + 1]);
    x[2 * p] = Store<T>(x0 * c - x1 * s);
    x[2 * p + 1] = Store<T>(x0 * s + x1 * c);
  }
}

template <typename T>
auto Rope(T* x, int64_t b, int64_t t, int64_t heads, int64_t head_dim, double theta, double sign, cudaStream_t stream)
    -> cudaError_t {
  if (head_dim <= 0 || head_dim % 2 != 0) return cudaErrorInvalidValue;
  int64_t half = head_dim / 2, pairs = b * t * heads * half;
  return device::Run({b, t, heads}, pairs, [&] {
    rope_kernel<<<device::Blocks(pairs), device::kBlock, 0, stream>>>(x, pairs, t, heads, half, theta, sign);
  });
}

// to(N) = from(N) rounded to nearest even.
__global__ void round_to_bf16_kernel(Bf16* to, const float* from, int64_t n) {
  for (int64_t i = GlobalThread(); i < n; i += GridStride()) to[i] = Store<Bf16>(from[i]);
}

// to(N) = from(N) widened (exact).
__global__ void widen_bf16_kernel(float* to, const Bf16* from, int64_t n) {
  for (int64_t i = GlobalThread(); i < n; i += GridStride()) to[i] = Load(from[i]);
}

}  // namespace

template <typename T>
auto GeluForward(T* out, const T* in, int64_t n, cudaStream_t stream) -> cudaError_t {
  return device::Run({n}, n,
                     [&] { gelu_forward_kernel<<<device::Blocks(n), device::kBlock, 0, stream>>>(out, in, n); });
}

template <typename T>
auto GeluBackward(T* din, const T* in, const T* dout, int64_t n, cudaStream_t stream) -> cudaError_t {
  return device::Run({n}, n,
                     [&] { gelu_backward_kernel<<<device::Blocks(n), device::kBlock, 0, stream>>>(din, in, dout, n); });
}

template <typename T>
auto SwigluForward(T* out, const T* gate, const T* up, int64_t n, cudaStream_t stream) -> cudaError_t {
  return device::Run(
      {n}, n, [&] { swiglu_forward_kernel<<<device::Blocks(n), device::kBlock, 0, stream>>>(out, gate, up, n); });
}

template <typename T>
auto SwigluBackward(T* dgate, T* dup, const T* dout, const T* gate, const T* up, int64_t n, cudaStream_t stream)
    -> cudaError_t {
  return device::Run({n}, n, [&] {
    swiglu_backward_kernel<<<device::Blocks(n), device::kBlock, 0, stream>>>(dgate, dup, dout, gate, up, n);
  });
}

template <typename T>
auto ResidualForward(T* out, const T* a, const T* b, int64_t n, cudaStream_t stream) -> cudaError_t {
  return device::Run({n}, n,
                     [&] { residual_forward_kernel<<<device::Blocks(n), device::kBlock, 0, stream>>>(out, a, b, n); });
}

template <typename T>
auto ResidualBackward(T* da, T* db, const T* dout, int64_t n, cudaStream_t stream) -> cudaError_t {
  return device::Run(
      {n}, n, [&] { residual_backward_kernel<<<device::Blocks(n), device::kBlock, 0, stream>>>(da, db, dout, n); });
}

template <typename T>
auto RopeForward(T* x, int64_t b, int64_t t, int64_t heads, int64_t head_dim, double theta, cudaStream_t stream)
    -> cudaError_t {
  return Rope(x, b, t, heads, head_dim, theta, 1.0, stream);
}

template <typename T>
auto RopeBackward(T* dx, int64_t b, int64_t t, int64_t heads, int64_t head_dim, double theta, cudaStream_t stream)
    -> cudaError_t {
  return Rope(dx, b, t, heads, head_dim, theta, -1.0, stream);
}

auto RoundToBf16(Bf16* to, const float* from, int64_t n, cudaStream_t stream) -> cudaError_t {
  return device::Run({n}, n,
                     [&] { round_to_bf16_kernel<<<device::Blocks(n), device::kBlock, 0, stream>>>(to, from, n); });
}

auto WidenBf16(float* to, const Bf16* from, int64_t n, cudaStream_t stream) -> cudaError_t {
  return device::Run({n}, n, [&] { widen_bf16_kernel<<<device::Blocks(n), device::kBlock, 0, stream>>>(to, from, n); });
}

#define AVF_POINTWISE_KERNELS(T)                                                                             \
  template auto GeluForward<T>(T*, const T*, int64_t, cudaStream_t)->cudaError_t;                            \
  template auto GeluBackward<T>(T*, const T*, const T*, int64_t, cudaStream_t)->cudaError_t;                 \
  template auto SwigluForward<T>(T*, const T*, const T*, int64_t, cudaStream_t)->cudaError_t;                \
  template auto SwigluBackward<T>(T*, T*, const T*, const T*, const T*, int64_t, cudaStream_t)->cudaError_t; \
  template auto ResidualForward<T>(T*, const T*, const T*, int64_t, cudaStream_t)->cudaError_t;              \
  template auto ResidualBackward<T>(T*, T*, const T*, int64_t, cudaStream_t)->cudaError_t;                   \
  template auto RopeForward<T>(T*, int64_t, int64_t, int64_t, int64_t, double, cudaStream_t)->cudaError_t;   \
  template auto RopeBackward<T>(T*, int64_t, int64_t, int64_t, int64_t, double, cudaStream_t)->cudaError_t;

AVF_POINTWISE_KERNELS(float)
AVF_POINTWISE_KERNELS(Bf16)

}  // namespace avf::kernels

// The element types the backend computes on, and the wider type each keeps
// its statistics and accumulations in: fp32 for fp32 and bf16 (mixed
// precision: bf16 tensors, fp32 norms' mean and rstd, softmax maxima and sums,
// losses, and every sum), fp64 for the finite-difference checks' fp64.
#pragma once

#include <type_traits>

#include "numeric/bf16.h"

namespace avf::backend {

using numeric::Bf16;

template <typename T>
struct Widened {
  using type = T;
};
template <>
struct Widened<Bf16> {
  using type = float;
};
template <typename T>
using Wide = typename Widened<T>::type;

// Every element type widens exactly into its Wide type, and back with one
// rounding (to nearest even for bf16).
template <typename T>
constexpr auto Widen(T x) -> Wide<T> {
  if constexpr (std::is_same_v<T, Bf16>) return numeric::ToFloat(x);
  else return x;
}
template <typename T>
constexpr auto Narrow(Wide<T> x) -> T {
  if constexpr (std::is_same_v<T, Bf16>) return numeric::ToBf16(x);
  else return x;
}

}  // namespace avf::backend

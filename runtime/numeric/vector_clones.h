// AVF_VECTOR_CLONES, on a function whose loops are compute-bound
// (exponentials, square roots, bf16 conversions): GCC compiles it once per
// instruction set, AVX-512, AVX2 with FMA and the baseline, and the loader
// picks the best the CPU has (the project builds without -march). Put it on
// functions called from inside a parallel loop, not on one that opens the
// parallel region (the region's body would not be cloned). Clang 14 cannot
// clone templates, so its builds (sanitizers, fuzzing) run the baseline.
#pragma once

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(__CUDACC__)
#define AVF_VECTOR_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define AVF_VECTOR_CLONES
#endif

// Clang leaves some `omp simd` loops scalar (std::exp calls in double,
// selects, the optimizer's loop over references) and warns that it did; in
// its builds (sanitizers, fuzzing) that is a matter of speed, not an error.
#if defined(__clang__)
#pragma clang diagnostic ignored "-Wpass-failed"
#endif

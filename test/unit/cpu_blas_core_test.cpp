// OpenBLAS's core follows the CPU's feature flags, not its model table: a
// core narrower than the CPU runs is replaced, a wider or equal one and
// names the table does not know are left alone.
#include "cpu/blas_core.h"

#include <gtest/gtest.h>

namespace avf::cpu {
namespace {

TEST(BlasCore, NamesMapToTheirKernels) {
  EXPECT_EQ(CoreVectorLevel("SkylakeX"), VectorLevel::Avx512);
  EXPECT_EQ(CoreVectorLevel("Haswell"), VectorLevel::Avx2);
  EXPECT_EQ(CoreVectorLevel("Zen"), VectorLevel::Avx2);
  EXPECT_EQ(CoreVectorLevel("Sandybridge"), VectorLevel::Avx);
  EXPECT_EQ(CoreVectorLevel("Prescott"), VectorLevel::Sse);
  EXPECT_EQ(CoreVectorLevel("armv8"), VectorLevel::Unknown);
  EXPECT_EQ(CoreVectorLevel(""), VectorLevel::Unknown);
}

TEST(BlasCore, NarrowerCoreIsReplaced) {
  // AMD Zen 4 with OpenBLAS 0.3.21: Haswell kernels on an AVX-512 CPU.
  EXPECT_EQ(BetterOpenBlasCore("Haswell", VectorLevel::Avx512), "SKYLAKEX");
  // An Intel model newer than the library: generic kernels.
  EXPECT_EQ(BetterOpenBlasCore("Prescott", VectorLevel::Avx512), "SKYLAKEX");
  EXPECT_EQ(BetterOpenBlasCore("Prescott", VectorLevel::Avx2), "HASWELL");
  EXPECT_EQ(BetterOpenBlasCore("Core2", VectorLevel::Avx), "SANDYBRIDGE");
}

TEST(BlasCore, EqualWiderOrUnknownIsLeftAlone) {
  EXPECT_EQ(BetterOpenBlasCore("SkylakeX", VectorLevel::Avx512), "");
  EXPECT_EQ(BetterOpenBlasCore("Cooperlake", VectorLevel::Avx512), "");
  EXPECT_EQ(BetterOpenBlasCore("Haswell", VectorLevel::Avx2), "");
  EXPECT_EQ(BetterOpenBlasCore("SkylakeX", VectorLevel::Avx2), "");
  EXPECT_EQ(BetterOpenBlasCore("armv8", VectorLevel::Avx512), "");
  EXPECT_EQ(BetterOpenBlasCore("Haswell", VectorLevel::Unknown), "");
}

TEST(BlasCore, ThisMachineIsConsistent) {
  // Whatever this CPU is, the loaded library names a core, and asking for a
  // better one never asks for one narrower than the library already runs.
  std::string picked = OpenBlasCore();
  EXPECT_FALSE(picked.empty());
  std::string better = BetterOpenBlasCore(picked, CpuVectorLevel());
  if (!better.empty()) {
    EXPECT_GT(CoreVectorLevel(better), CoreVectorLevel(picked));
  }
}

}  // namespace
}  // namespace avf::cpu

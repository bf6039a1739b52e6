#include "tools/cli/blas_core.h"

#include <cblas.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace actorflow {
namespace cli {
namespace {

TEST(BlasCoreTest, OneThreadUnlessTheEnvironmentSaysHowMany) {
  ASSERT_EQ(unsetenv("OPENBLAS_NUM_THREADS"), 0);
  openblas_set_num_threads(2);
  if (openblas_get_num_threads() < 2) GTEST_SKIP() << "OpenBLAS keeps one thread here";
  UseOneBlasThreadUnlessConfigured();
  EXPECT_EQ(openblas_get_num_threads(), 1);
  openblas_set_num_threads(2);
  ASSERT_EQ(setenv("OPENBLAS_NUM_THREADS", "2", 1), 0);
  UseOneBlasThreadUnlessConfigured();
  EXPECT_EQ(openblas_get_num_threads(), 2);
  ASSERT_EQ(unsetenv("OPENBLAS_NUM_THREADS"), 0);
}

TEST(BlasCoreTest, AGivenCoreTypeIsLeftAlone) {
  ASSERT_EQ(setenv("OPENBLAS_CORETYPE", "Haswell", 1), 0);
  EXPECT_EQ(BetterBlasCore(), "");
  ASSERT_EQ(unsetenv("OPENBLAS_CORETYPE"), 0);
}

// This process's OpenBLAS chose its core at load time: a generic one on a CPU with
// AVX2 is replaced (by SkylakeX with AVX-512), a CPU-specific one is kept.
TEST(BlasCoreTest, OnlyAGenericCoreOnACapableCpuIsReplaced) {
  ASSERT_EQ(unsetenv("OPENBLAS_CORETYPE"), 0);
  const std::string chosen = openblas_get_corename();
  const bool generic = chosen == "Prescott" || chosen == "Core2" || chosen == "Nehalem";
  __builtin_cpu_init();
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512vl");
  const std::string better = BetterBlasCore();
  if (!generic || !avx2) {
    EXPECT_EQ(better, "") << "OpenBLAS chose " << chosen;
  } else {
    EXPECT_EQ(better, avx512 ? "SkylakeX" : "Haswell") << "OpenBLAS chose " << chosen;
  }
}

}  // namespace
}  // namespace cli
}  // namespace actorflow

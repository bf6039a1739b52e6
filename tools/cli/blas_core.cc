#include "tools/cli/blas_core.h"

#include <cblas.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace actorflow {
namespace cli {

std::string BetterBlasCore() {
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr) return "";
  const char* core = openblas_get_corename();
  // The generic x86-64 cores a dynamic-arch OpenBLAS falls back to.
  const bool generic = core != nullptr && (std::strcmp(core, "Prescott") == 0 ||
                                           std::strcmp(core, "Core2") == 0 ||
                                           std::strcmp(core, "Nehalem") == 0);
  if (!generic) return "";
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl")) {
    return "SkylakeX";
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
  return "";
}

void RestartWithBetterBlasCore(char** argv) {
  const std::string core = BetterBlasCore();
  if (core.empty()) return;
  if (setenv("OPENBLAS_CORETYPE", core.c_str(), /*overwrite=*/1) != 0) return;
  execv("/proc/self/exe", argv);
  // The exec failed: go on with the kernels OpenBLAS chose.
  unsetenv("OPENBLAS_CORETYPE");
}

void UseOneBlasThreadUnlessConfigured() {
  if (std::getenv("OPENBLAS_NUM_THREADS") == nullptr) openblas_set_num_threads(1);
}

}  // namespace cli
}  // namespace actorflow

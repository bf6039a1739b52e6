// Small helpers shared by the CPU kernels: registering one kernel template for a list
// of element types, and validating axes given by attrs.
//
// Thread safety: registration runs during static initialization; the axis helpers are
// pure functions.
#ifndef ACTORFLOW_KERNELS_CPU_KERNEL_UTIL_H_
#define ACTORFLOW_KERNELS_CPU_KERNEL_UTIL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "graph/shape.h"
#include "graph/types.h"
#include "kernels/kernel.h"

namespace actorflow {
namespace cpu {

// Registers K<T> as the CPU kernel of `op` for each T in Ts:
//   static const CpuKernelRegistrations<AddKernel, float, double> reg_add("Add");
template <template <typename> class K, typename... Ts>
struct CpuKernelRegistrations {
  explicit CpuKernelRegistrations(const char* op) {
    (KernelRegistry::Global().Register(op, kDeviceCpu, DTypeOf<Ts>::value,
                                       MakeKernelFactory<K<Ts>>()),
     ...);
  }
};

// Maps `axis` (negative counts from the end) into [0, rank). Returns false when it is
// out of range; the caller reports the error with the node's name.
inline bool NormalizeAxis(int64_t axis, int rank, int* out) {
  if (axis < -rank || axis >= rank) return false;
  *out = static_cast<int>(axis < 0 ? axis + rank : axis);
  return true;
}

// "[2,3]" for an int list; for error messages.
inline std::string IntListToString(const std::vector<int64_t>& values) {
  std::string s = "[";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) s += ",";
    s += std::to_string(values[i]);
  }
  return s + "]";
}

}  // namespace cpu
}  // namespace actorflow

#endif  // ACTORFLOW_KERNELS_CPU_KERNEL_UTIL_H_

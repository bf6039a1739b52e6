// Small helpers shared by the CPU kernels: registering one kernel template for a list
// of element types, validating axes given by attrs, and allocating outputs whose
// shapes come from input values or shapes (checked, never wrapped around).
//
// Thread safety: registration runs during static initialization; the axis helpers are
// pure functions.
#ifndef ACTORFLOW_KERNELS_CPU_KERNEL_UTIL_H_
#define ACTORFLOW_KERNELS_CPU_KERNEL_UTIL_H_

#include <cstdint>
#include <new>
#include <string>
#include <vector>

#include "graph/checked_size.h"
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

// Allocates output i of `shape` (a shape computed from the inputs' values or shapes,
// so possibly from outside) with the node's output dtype. Fails the node and returns
// nullptr instead: InvalidArgument when the element or byte count does not fit in
// int64 (an empty input reshaped to huge dims, then reduced or multiplied, would
// otherwise wrap around), ResourceExhausted when the memory cannot be had.
// `overwrite`: the kernel writes every element, so the buffer is not zero-filled.
inline Tensor* AllocateCheckedOutput(KernelContext* ctx, int i, const Shape& shape,
                                     bool overwrite = false) {
  const DType dtype = ctx->node().output_dtype(i);
  StatusOr<int64_t> bytes = CheckedByteSize(dtype, shape);
  if (!bytes.ok()) {
    ctx->Fail(Code::kInvalidArgument, "output " + std::to_string(i) + ": " +
                                          bytes.status().message());
    return nullptr;
  }
  try {
    return overwrite ? &ctx->allocate_output_for_overwrite(i, shape)
                     : &ctx->allocate_output(i, shape);
  } catch (const std::bad_alloc&) {
    ctx->Fail(Code::kResourceExhausted, "output " + std::to_string(i) + " " +
                                            DTypeName(dtype) + shape.ToString() + ": cannot "
                                            "allocate " + std::to_string(*bytes) + " bytes");
    return nullptr;
  }
}

// Output `output` written over input `input` when that input can take it: the step
// holds its only reference (RefCountIsOne: the executor hands a tensor's last consumer
// the step's own reference, and nothing else can read the buffer any more), it lies
// in host memory, and it has the output's dtype and exactly `shape`. Returns the
// output, which then shares the input's buffer, and sets *in_place; otherwise
// AllocateCheckedOutput(overwrite = true) and *in_place = false. For element-wise
// kernels that compute element i of the output from element i of that input (and of
// other inputs) only: in place that is the same computation with one buffer fewer,
// so a small step allocates less. The kernel's in-place loop must not assume the two
// pointers differ (no __restrict between them).
inline Tensor* ForwardInputOrAllocateOutput(KernelContext* ctx, int input, int output,
                                            const Shape& shape, bool* in_place) {
  const Tensor& in = ctx->input(input);
  *in_place = in.RefCountIsOne() && in.memory_kind() == MemoryKind::kHost &&
              in.dtype() == ctx->node().output_dtype(output) && in.shape() == shape;
  if (!*in_place) return AllocateCheckedOutput(ctx, output, shape, /*overwrite=*/true);
  ctx->set_output(output, in);
  return &ctx->outputs()[output];
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

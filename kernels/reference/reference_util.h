// Building blocks of the reference kernels: multi-index iteration, broadcasting,
// element access widened to double/int64, attr and input checks, and the op table that
// each family file (reference_elementwise.cc, reference_reduction.cc, ...) fills in.
//
// Everything here favours being obviously right over being fast: indices are explicit
// std::vector<int64_t> multi-indices in row-major order.
#ifndef ACTORFLOW_KERNELS_REFERENCE_REFERENCE_UTIL_H_
#define ACTORFLOW_KERNELS_REFERENCE_REFERENCE_UTIL_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "graph/attr_value.h"
#include "graph/shape.h"
#include "graph/status.h"
#include "graph/tensor.h"
#include "graph/types.h"

namespace actorflow {
namespace reference {

// One call of a reference op.
struct RefCall {
  const std::string& op;
  const AttrMap& attrs;
  const std::vector<Tensor>& inputs;
};

using RefFn = std::function<StatusOr<std::vector<Tensor>>(const RefCall& call)>;
using RefTable = std::map<std::string, RefFn>;

// Each family file adds its ops.
void AddElementwiseOps(RefTable* table);
void AddReductionOps(RefTable* table);
void AddArrayOps(RefTable* table);
void AddNnOps(RefTable* table);
void AddConvOps(RefTable* table);  // reference_conv.cc
void AddNormOps(RefTable* table);  // reference_norm.cc
void AddSparseOps(RefTable* table);  // reference_sparse.cc
void AddShapeOps(RefTable* table);   // reference_shape.cc
void AddMathOps(RefTable* table);    // reference_math.cc
void AddRnnOps(RefTable* table);     // reference_rnn.cc

// --- Indexing ---------------------------------------------------------------------

// Row-major strides: strides[rank-1] = 1.
std::vector<int64_t> Strides(const Shape& shape);
// The multi-index of flat position `flat` in `shape` (row-major).
std::vector<int64_t> Unravel(int64_t flat, const Shape& shape);
// The flat position of multi-index `index` in `shape` (row-major).
int64_t Ravel(const std::vector<int64_t>& index, const Shape& shape);
// Calls fn(multi_index, flat) for every element of `shape` in row-major order (no
// call for an empty shape, one call with an empty index for a scalar).
void ForEachIndex(const Shape& shape,
                  const std::function<void(const std::vector<int64_t>&, int64_t)>& fn);

// NumPy broadcasting of two shapes; InvalidArgument naming `op` when incompatible.
StatusOr<Shape> BroadcastShape(const std::string& op, const Shape& a, const Shape& b);
// The flat position in an input of shape `in` that output multi-index `out_index`
// (of the broadcast shape, rank >= in.rank()) reads: trailing dims aligned, dims of 1
// stretched.
int64_t BroadcastSource(const std::vector<int64_t>& out_index, const Shape& in);

// --- Elements ---------------------------------------------------------------------

// Element i widened: bool as 0/1.
double GetDouble(const Tensor& t, int64_t i);
// Element i as int64; for a floating tensor, truncated toward zero.
int64_t GetInt(const Tensor& t, int64_t i);
// Writes `v` into element i converted to the tensor's dtype (float32 rounds to nearest;
// integers truncate toward zero; bool is v != 0).
void SetDouble(Tensor* t, int64_t i, double v);
// Writes `v` into element i converted to the tensor's dtype (int32 keeps the low 32
// bits; bool is v != 0).
void SetInt(Tensor* t, int64_t i, int64_t v);
// Copies element `src_i` of `src` into element `dst_i` of `dst` (same dtype).
void CopyElement(const Tensor& src, int64_t src_i, Tensor* dst, int64_t dst_i);

// Wrapping int64 arithmetic (two's complement, no undefined behaviour on overflow).
int64_t WrapAdd(int64_t a, int64_t b);
int64_t WrapSub(int64_t a, int64_t b);
int64_t WrapMul(int64_t a, int64_t b);

// --- Checks -----------------------------------------------------------------------

Status CheckNumInputs(const RefCall& call, int n);
Status CheckMinInputs(const RefCall& call, int n);
// Unimplemented unless `t` has one of `dtypes` (the op set defines no other).
Status CheckDType(const RefCall& call, const Tensor& t, const std::vector<DType>& dtypes,
                  const std::string& what);
// Normalizes a possibly negative axis into [0, rank); InvalidArgument when outside
// [-rank, rank).
StatusOr<int> NormalizeAxis(const RefCall& call, int64_t axis, int rank);

// Typed attr access: InvalidArgument naming the op and attr when missing or of
// another type.
template <typename T>
StatusOr<T> GetAttr(const RefCall& call, const std::string& name) {
  auto it = call.attrs.find(name);
  if (it == call.attrs.end()) {
    return InvalidArgument(call.op + ": missing attr '" + name + "'");
  }
  if (!it->second.Is<T>()) {
    return InvalidArgument(call.op + ": attr '" + name + "' has an unexpected type");
  }
  return it->second.Get<T>();
}
bool HasAttr(const RefCall& call, const std::string& name);

}  // namespace reference
}  // namespace actorflow

#endif  // ACTORFLOW_KERNELS_REFERENCE_REFERENCE_UTIL_H_

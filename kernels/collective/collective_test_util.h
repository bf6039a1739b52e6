// Inputs, reference results and comparisons for the collective algorithms' tests.
#ifndef ACTORFLOW_KERNELS_COLLECTIVE_COLLECTIVE_TEST_UTIL_H_
#define ACTORFLOW_KERNELS_COLLECTIVE_COLLECTIVE_TEST_UTIL_H_

#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "graph/shape.h"
#include "graph/tensor.h"
#include "graph/types.h"
#include "kernels/collective/collective_algorithms.h"

namespace actorflow {

// Member `rank`'s input for a reduction test: floats of mixed sign and magnitudes
// 1e-3 .. 1e3 (so that the order of additions shows in the low bits), integers in
// [-1000, 1000]. The same (dtype, shape, rank, seed) always gives the same values.
Tensor ReductionInput(DType dtype, const Shape& shape, int rank, uint32_t seed);

// The inputs of every member of a group of `group_size`.
std::vector<Tensor> GroupInputs(DType dtype, const Shape& shape, int group_size, uint32_t seed);

// The element-wise sum of `inputs` (one dtype and element count), in double: exact for
// the integer inputs above.
std::vector<double> ReferenceSum(const std::vector<Tensor>& inputs);

// `op` applied to the reference sum as the algorithms define it: for integer dtypes the
// mean truncates toward zero.
std::vector<double> ReferenceResult(const std::vector<Tensor>& inputs, ReduceOp op);

// Success when `actual` has `dtype`, `shape` and values equal to `expected`: exactly
// for integers, within a bound on the rounding of float32/float64 sums of
// `group_size` terms of `inputs`' magnitudes.
::testing::AssertionResult MatchesReference(const Tensor& actual, DType dtype, const Shape& shape,
                                            const std::vector<double>& expected,
                                            const std::vector<Tensor>& inputs);

// True when both have the same dtype, shape and bytes (memcmp: -0.0 != 0.0, NaN
// payloads count).
bool BitIdentical(const Tensor& a, const Tensor& b);

// A copy of `t`'s values as doubles, flattened.
std::vector<double> Values(const Tensor& t);

}  // namespace actorflow

#endif  // ACTORFLOW_KERNELS_COLLECTIVE_COLLECTIVE_TEST_UTIL_H_

// Reference kernels: naive, obviously correct implementations of every stateless op of
// the op set (graph/ops_*.cc), the oracle that every device's kernels are tested
// against. Speed is not a goal: each op is a plain loop over output multi-indices that
// maps each one to input indices, computing in double for floating dtypes and in
// int64 for integer and bool dtypes, then converting to the output dtype.
//
// Independent of kernels/cpu and of any other device's kernels by design: it shares no
// code with them, so a bug in one is not silently reproduced by the other.
//
// Not covered (stateful or without a value to compare): Const, Placeholder, Variable,
// Assign, AssignAdd, AssignSub, IsVariableInitialized, VariableShape, NoOp,
// RandomUniform, RandomNormal, TruncatedNormal.
// Dropout is stateful but covered for its first draw (what a new kernel computes),
// which its counter-based stream defines exactly (kernels/random_bits.h).
//
// Thread safety: ReferenceCompute is a pure function; call it from any thread.
#ifndef ACTORFLOW_KERNELS_REFERENCE_REFERENCE_H_
#define ACTORFLOW_KERNELS_REFERENCE_REFERENCE_H_

#include <string>
#include <vector>

#include "graph/attr_value.h"
#include "graph/status.h"
#include "graph/tensor.h"
#include "graph/types.h"

namespace actorflow {

// Computes `op` on `inputs` with `attrs` as a Node holds them (defaults filled in,
// optional attrs with no default absent).
//
// `output_dtypes` are the node's inferred output dtypes; the reference derives every
// output dtype on its own from the op's semantics and returns Internal when the two
// disagree (a shape-inference bug). Pass an empty vector to skip that check.
//
// Errors: InvalidArgument for inputs the op rejects at run time (integer division by
// zero, a label out of range, a bad reshape, ...), mirroring what a kernel must report;
// Unimplemented for an op or dtype the op set does not define.
StatusOr<std::vector<Tensor>> ReferenceCompute(const std::string& op, const AttrMap& attrs,
                                               const std::vector<Tensor>& inputs,
                                               const std::vector<DType>& output_dtypes);

// True when ReferenceCompute knows `op`.
bool HasReference(const std::string& op);

}  // namespace actorflow

#endif  // ACTORFLOW_KERNELS_REFERENCE_REFERENCE_H_

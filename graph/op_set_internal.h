// What the files that register the op set share: attr declarations, OpDef
// construction, and the dtype/rank/attr checks their inference functions are built
// from. Internal to //graph (listed in its srcs, not its hdrs).
//
// The op set is registered by one file per family, each from a static initializer
// (the graph library is alwayslink, so none of them can be dropped by the linker):
//   ops_core.cc              the contract's sources, variables, element-wise math,
//                            neural-network ops, reductions and random numbers
//   ops_array.cc             the contract's shape manipulation (Reshape, Slice, ...)
//   ops_gradient_helpers.cc  building blocks of the backward rules (ReluGrad, ...)
//   ops_training.cc          in-place optimizer updates (ApplyAdam, ...)
//   ops_runtime.cc           _Send/_Recv, inserted by graph partitioning
//   ops_dataset.cc           IteratorGetNext
//   ops_queue.cc             queues and the CSV reader
//   ops_accumulator.cc       ConditionalAccumulator and its ops (sync replicas)
//   ops_nn_conv.cc           Conv2D, MaxPool, AvgPool and their backward ops (NHWC)
//   ops_nn_norm.cc           FusedBatchNorm, FusedBatchNormGrad and Dropout
//   ops_sparse.cc            row gathers, segment sums and sparse updates (embeddings)
//   ops_shape.cc             the sequence models' shape ops (ExpandDims, Pack, Split, ...)
//   ops_math.cc              BatchMatMul, LayerNorm, Gelu and their backward ops
//   ops_rnn.cc               the fused LSTM and GRU cells and their backward ops
// The first two hold the core op set, the one that CPU and reference kernels must
// cover (kernels/kernel_coverage_test.cc); graph/ops.h documents what each op
// promises, and shape arithmetic lives in graph/shape_inference.h.
//
// Inference follows one rule throughout: unknown dims (-1) and unknown ranks
// propagate, and only known facts that conflict are errors. Every check returns
// InvalidArgument naming the culprit (input i, attr 'x'); the caller prefixes the node.
//
// Thread safety: pure functions.
#ifndef ACTORFLOW_GRAPH_OP_SET_INTERNAL_H_
#define ACTORFLOW_GRAPH_OP_SET_INTERNAL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "graph/attr_value.h"
#include "graph/op_registry.h"
#include "graph/shape.h"
#include "graph/status.h"
#include "graph/types.h"

namespace actorflow {
namespace op_set_internal {

// ---------------------------------------------------------------------------
// Attr declarations and op definitions.

AttrDef Required(std::string name, AttrType type);
// Absent from the node's attrs when not written.
AttrDef Optional(std::string name, AttrType type);
AttrDef Default(std::string name, AttrType type, AttrValue value);

OpDef MakeOp(std::string name, int num_inputs, int num_outputs, std::vector<AttrDef> attrs,
             InferenceFn infer);
OpDef Stateful(OpDef def);

// ---------------------------------------------------------------------------
// Checks for inference functions.

enum class Allowed { kAny, kNumeric, kFloating, kIndex };

// `what` ("input 1", "attr 'dtype'") has a dtype of the `allowed` family.
Status CheckDType(const std::string& what, DType dtype, Allowed allowed);
Status CheckInput(const InferenceContext& ctx, int i, Allowed allowed);

// Every input has input 0's dtype.
Status CheckSameDTypes(const InferenceContext& ctx);

// Known rank must lie in [min_rank, max_rank] (max_rank < 0: no upper bound).
Status CheckRank(const std::string& what, const Shape& shape, int min_rank, int max_rank);

// The shape attr `attr` has no unknown dim and a known rank.
Status CheckFullyDefinedAttr(const InferenceContext& ctx, const std::string& attr);

// The float attr "epsilon" (of the normalizations) is finite and >= 0.
Status CheckEpsilon(const InferenceContext& ctx);

// "axis" of a reduction: an int, a list, or absent (every axis).
std::optional<std::vector<int64_t>> AxesAttr(const InferenceContext& ctx);

// Parses Shape::ToString's output: "[2,?]", "[-1,3]", "[]", "<unknown>" (string-list
// attrs of the dataset and queue ops carry shapes this way).
StatusOr<Shape> ParseShapeString(const std::string& text);

}  // namespace op_set_internal
}  // namespace actorflow

#endif  // ACTORFLOW_GRAPH_OP_SET_INTERNAL_H_

// Sparse and embedding ops: gathering rows of a table, summing rows by id, writing
// rows of a variable in place, and the optimizer updates that touch only given rows
// (TensorFlow 1.x's Gather, Unique, UnsortedSegmentSum, Scatter* and SparseApply*),
// with IndexedSlices, the gradient that names the rows it touches.
//
//   auto table = Variable(root.WithOpName("emb"), Shape{100000, 64}, DType::kFloat32);
//   auto rows = Gather(root, table, ids);                  // [batch, 64]
//   ...
//   auto grads = GradientsWithSlices(root, {loss}, {table}); // IndexedSlices of table
//   SparseApplyGradientDescent(root, table, 0.1f, grads->at(0).slices.values,
//                              grads->at(0).slices.indices);
//
// Row ids are int32 or int64 tensors. The kernels reject an id outside [0, rows) with
// InvalidArgument naming the node and the id, before anything is read or written.
// Repeated ids add up wherever rows are summed (UnsortedSegmentSum, ScatterAdd,
// ScatterSub, the gradient of Gather and every SparseApply op).
//
// Thread safety: as Scope (one building thread per graph).
#ifndef ACTORFLOW_GRAPH_SPARSE_OPS_H_
#define ACTORFLOW_GRAPH_SPARSE_OPS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/scope.h"
#include "graph/types.h"

namespace actorflow {

// The gradient of a tensor of shape dense_shape that is zero outside the rows it
// names: dense[indices[i], ...] += values[i, ...] for each i (repeated ids add).
// values [n, dense_shape[1:]] of the tensor's dtype; indices int32/int64 [n];
// dense_shape int64 [rank] (at run time). Invalid (no node) when empty.
struct IndexedSlices {
  Output values;
  Output indices;
  Output dense_shape;
  bool valid() const { return values.valid(); }
};

// params [N, d...] (any dtype), indices [i...] -> [i..., d...] with
// out[i..., :] = params[indices[i...], :]. Its gradient with respect to params is
// IndexedSlices (graph/gradients.h); indices get none.
Output Gather(const Scope& scope, const Input& params, const Input& indices);

// The distinct values of x (int32/int64 [n]) in order of first occurrence, y [k], and
// for each element of x its position in y, idx [n] of out_idx: y[idx[i]] == x[i].
struct UniqueResult {
  Output y;
  Output idx;
};
UniqueResult Unique(const Scope& scope, const Input& x, DType out_idx = DType::kInt32);

// data [ids..., d...] (numeric), segment_ids [ids...] (int), num_segments (int
// scalar) -> [num_segments, d...]: out[s] = the sum of data's rows whose id is s
// (zeros where none is). Ids outside [0, num_segments) are an InvalidArgument.
Output UnsortedSegmentSum(const Scope& scope, const Input& data, const Input& segment_ids,
                          const Input& num_segments);

// merged[indices[i][j...], d...] = data[i][j..., d...]: indices[i] (int) and data[i]
// ([indices[i]..., d...], one dtype) interleaved back into one tensor of max id + 1
// rows (a later pair wins a repeated id; rows no id names are zeros). The gradient of
// data[i] is Gather(grad, indices[i]).
Output DynamicStitch(const Scope& scope, const std::vector<Output>& indices,
                     const std::vector<Output>& data);

// Where the rows of a table of num_rows rows split into num_parts parts live, for the
// ids (int, any shape, flattened): for each part p the row ids within the part
// (local_ids[p], ids' dtype) and the ids' positions (positions[p], int32). Strategy
// "mod": id lives in part id % num_parts at row id / num_parts; "div": the parts hold
// contiguous runs of rows, as even as possible, the first num_rows % num_parts parts
// one row larger (PartitionSizes, training/optimizers/partitioned_variable.h). Ids
// outside [0, num_rows) are an InvalidArgument naming the id.
struct PartitionedRowIds {
  std::vector<Output> local_ids;
  std::vector<Output> positions;
};
PartitionedRowIds PartitionRowIds(const Scope& scope, const Input& ids, int64_t num_rows,
                                  int64_t num_parts, const std::string& strategy);

// TensorFlow 1.x's embedding_lookup: the rows `ids` (int, any shape) of a table stored
// as `params`, one Variable or the parts of a partitioned one (along dimension 0, in
// order; see PartitionRowIds for "mod" and "div"), -> [ids..., d...]. Each distinct id
// is read once (Unique), by a Gather beside its part: on a cluster only the rows a
// batch needs leave a ps task, and their gradient (summed by id on the caller's
// device) goes back as IndexedSlices, so an optimizer updates only those rows there.
// Parts must have static shapes, the sizes the strategy gives them. With "mod", a
// checkpoint of the parts restores only into as many parts; "div" into any number.
Output EmbeddingLookup(const Scope& scope, const std::vector<Output>& params, const Input& ids,
                       const std::string& partition_strategy = "mod");

// TensorFlow 1.x's embedding_lookup_sparse for multi-valued features: example
// segment_ids[i] (int [n], in [0, num_segments)) holds feature id ids[i] (int [n]);
// each example's embeddings are combined: "sum", "mean" (sum / count) or "sqrtn"
// (sum / sqrt(count)). -> [num_segments, d]; an example with no ids gets zeros.
Output EmbeddingLookupSparse(const Scope& scope, const std::vector<Output>& params,
                             const Input& ids, const Input& segment_ids,
                             const Input& num_segments, const std::string& combiner,
                             const std::string& partition_strategy = "mod");

// The dense tensor of `slices`: UnsortedSegmentSum of its rows into dense_shape[0].
Output DenseFromSlices(const Scope& scope, const IndexedSlices& slices);

// In-place row writes into the Variable `ref` [N, d...]: updates has shape
// [indices..., d...] and ref's dtype. ScatterAdd/ScatterSub add/subtract every row
// (repeated ids accumulate); ScatterUpdate writes them (of repeated ids, the last
// row wins). Each returns ref's new value. Stateful.
Output ScatterAdd(const Scope& scope, const Input& ref, const Input& indices,
                  const Input& updates);
Output ScatterSub(const Scope& scope, const Input& ref, const Input& indices,
                  const Input& updates);
Output ScatterUpdate(const Scope& scope, const Input& ref, const Input& indices,
                     const Input& updates);

// Optimizer updates of the rows `indices` [n] (int) of a Variable `var` [N, d...]
// and of its slots, with grad [n, d...] the rows' gradient; hyper-parameters are
// scalars of var's float dtype (see ApplyGradientDescent etc. in graph/ops.h). Rows
// with a repeated id are summed first, so each touched row gets exactly the update
// the dense Apply op would give it for the dense gradient DenseFromSlices(grad,
// indices); every other row of var and of its slots stays bit-identical (Adam is
// TensorFlow's lazy Adam: untouched rows' moments do not decay). Each returns var's
// new value. Stateful.
Output SparseApplyGradientDescent(const Scope& scope, const Input& var, const Input& alpha,
                                  const Input& grad, const Input& indices);
Output SparseApplyAdagrad(const Scope& scope, const Input& var, const Input& accum,
                          const Input& lr, const Input& grad, const Input& indices);
Output SparseApplyAdam(const Scope& scope, const Input& var, const Input& m, const Input& v,
                       const Input& beta1_power, const Input& beta2_power, const Input& lr,
                       const Input& beta1, const Input& beta2, const Input& epsilon,
                       const Input& grad, const Input& indices);
// TensorFlow's input order (the indices after the gradient); see ApplyFtrl.
Output SparseApplyFtrl(const Scope& scope, const Input& var, const Input& accum,
                       const Input& linear, const Input& grad, const Input& indices,
                       const Input& lr, const Input& l1, const Input& l2, const Input& lr_power);

}  // namespace actorflow

#endif  // ACTORFLOW_GRAPH_SPARSE_OPS_H_

// Partitioned variables (TensorFlow 1.x's tf.get_variable with a partitioner): one
// large variable, e.g. a [784, 4096] weight, stored as several Variable nodes ("parts")
// split along dimension 0, each on its own parameter-server shard, and read as one
// tensor.
//
//   auto w = CreatePartitionedVariable(
//       root, "w", Shape{784, 4096}, TruncatedNormal(root, {784, 4096}, DType::kFloat32, 7),
//       /*num_shards=*/3, [](int k) { return "/job:ps/task:" + std::to_string(k); });
//   auto h = MatMul(root, x, w->value);         // [?, 4096]: reads all three parts
//   adam.Minimize(root.WithOpName("train"), loss, step);   // updates each part on its shard
//
// How it works, and what stays true:
// - Part k is the Variable "<name>/part_<k>" [rows_k, d1, ...] with rows_k from
//   PartitionSizes (as even as possible, the first parts one row larger), on
//   device_for_shard(k). Each part is an ordinary variable (kVariablesCollection,
//   kTrainableVariablesCollection, its own initializer), so optimizers build one
//   update per part, colocated with it: a gradient update goes to its shard.
// - `value` is ConcatV2(parts, axis 0), a node named "<name>", built in the caller's
//   scope (and device). Gradients reach each part through ConcatV2's rule.
// - The initial value is one tensor of the whole shape; part k starts with rows
//   [offset_k, offset_k + rows_k) of it, so the whole initial value does not depend on
//   the number of shards (a random initializer runs once per initialization).
// - The graph records the partitioning in two collections: kPartitionedVariablesCollection
//   lists the whole names, and PartitionedVariablePartsKey(name) lists the parts in
//   order. Saver (training/checkpoint/checkpoint.h) reads them through GetVariablePartitionings
//   and saves the whole variable as one tensor under its whole name, so a checkpoint
//   written with 3 shards restores into 2 (or into an unpartitioned variable).
//
// Thread safety: as Scope (one building thread per graph); the other functions are
// pure.
#ifndef ACTORFLOW_TRAINING_OPTIMIZERS_PARTITIONED_VARIABLE_H_
#define ACTORFLOW_TRAINING_OPTIMIZERS_PARTITIONED_VARIABLE_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/scope.h"
#include "graph/shape.h"
#include "graph/status.h"
#include "graph/tensor.h"

namespace actorflow {

// The whole names of the graph's partitioned variables.
inline constexpr char kPartitionedVariablesCollection[] = "partitioned_variables";

// The key of the collection listing the parts of the partitioned variable `name`, in
// order along dimension 0: "partitioned_variables/<name>".
std::string PartitionedVariablePartsKey(const std::string& name);

// The rows of each of `num_shards` parts of a dimension of size `dim0`: as even as
// possible, the first dim0 % num_shards parts one larger (10 into 3: {4, 3, 3}).
// Precondition: 1 <= num_shards <= dim0.
std::vector<int64_t> PartitionSizes(int64_t dim0, int num_shards);

// Where part `shard` (0-based) lives: a device spec such as "/job:ps/task:1" or
// "/cpu:1"; empty means the caller's scope device.
using ShardDeviceFn = std::function<std::string(int shard)>;

struct PartitionedVariable {
  std::string name;           // the whole variable's name ("<scope>/<name>")
  Shape shape;                // the whole shape [d0, d1, ...]
  std::vector<Output> parts;  // Variable outputs [rows_k, d1, ...], in order along dim 0
  Output value;               // the whole value [d0, d1, ...]: ConcatV2 of the parts
};

// Creates the parts, their initializers and the whole value (see the top of this
// file). `initial_value`: a Tensor or literal of `shape` (sliced here into one Const
// per part), or an Output of `shape` (e.g. a random initializer; sliced in the graph).
// `device_for_shard` may be empty (every part on the scope's device).
// Errors, all InvalidArgument naming the variable: an empty name; `shape` not fully
// defined or a scalar; num_shards < 1; num_shards larger than shape's dimension 0
// (the dimension being split); an initial value of another shape or an invalid
// Output. Builder errors (e.g. a duplicate name) name the node; the scope's first
// error when it had already failed.
StatusOr<PartitionedVariable> CreatePartitionedVariable(const Scope& scope, const std::string& name,
                                                        const Shape& shape,
                                                        const Input& initial_value, int num_shards,
                                                        const ShardDeviceFn& device_for_shard,
                                                        bool trainable = true);

// A variable stored as parts, as the checkpoint sees it.
struct VariablePartitioning {
  std::string name;                // the whole name: the checkpoint's tensor name
  DType dtype = DType::kFloat32;
  Shape shape;                     // the whole shape
  std::vector<std::string> parts;  // Variable node names, in order along dim 0
  std::vector<Shape> part_shapes;  // [rows_k, d1, ...]
};

// The graph's partitioned variables: those recorded by CreatePartitionedVariable and,
// for each, its optimizer slots. A slot is recognised by name: when every part p_k
// has a Variable "<p_k>/<slot>" in kVariablesCollection with p_k's dtype and shape
// (e.g. "w/part_0/Adam_m", "w/part_1/Adam_m"), they form the partitioned variable
// "<name>/<slot>", so that optimizer state also restores into another shard count.
// Errors: InvalidArgument naming the variable when its parts collection is empty or
// names a node that is not a Variable, or the parts disagree in dtype, rank or
// dimensions other than 0.
StatusOr<std::vector<VariablePartitioning>> GetVariablePartitionings(const Graph& graph);

// Joins tensors of one dtype along dimension 0 (shapes [r_k, d1, ...] -> [sum r_k, d1,
// ...]). InvalidArgument for no tensors, scalars, or mismatched dtypes or dims.
StatusOr<Tensor> ConcatAlongDim0(const std::vector<Tensor>& parts);
// Rows [begin, begin + rows) of `whole` (rank >= 1) as a new tensor. InvalidArgument
// for a scalar or rows out of range.
StatusOr<Tensor> SliceAlongDim0(const Tensor& whole, int64_t begin, int64_t rows);

}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_OPTIMIZERS_PARTITIONED_VARIABLE_H_

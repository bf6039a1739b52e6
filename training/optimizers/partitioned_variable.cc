#include "training/optimizers/partitioned_variable.h"

#include <cstring>
#include <map>
#include <set>
#include <utility>

#include "graph/ops.h"
#include "training/optimizers/variables.h"

namespace actorflow {
namespace {

// Bytes of one row along dimension 0 of `shape` (rank >= 1, fully defined).
size_t RowBytes(const Shape& shape, DType dtype) {
  int64_t elements = 1;
  for (int i = 1; i < shape.rank(); ++i) elements *= shape.dim(i);
  return static_cast<size_t>(elements) * DTypeSize(dtype);
}

Shape WithDim0(const Shape& shape, int64_t dim0) {
  Shape s = shape;
  s.set_dim(0, dim0);
  return s;
}

// Checks the parts of one partitioned variable and fills in dtype and shapes.
Status DescribeParts(const Graph& graph, VariablePartitioning* p) {
  const std::string what = "partitioned variable '" + p->name + "'";
  if (p->parts.empty()) {
    return InvalidArgument(what + ": collection '" + PartitionedVariablePartsKey(p->name) +
                           "' lists no parts");
  }
  int64_t rows = 0;
  for (const std::string& part : p->parts) {
    const Node* node = graph.FindNode(part);
    if (node == nullptr || node->op() != "Variable") {
      return InvalidArgument(what + ": its part '" + part + "' is not a Variable node");
    }
    const Shape& shape = node->output_shape(0);
    if (p->part_shapes.empty()) {
      p->dtype = node->output_dtype(0);
    } else {
      const Shape& first = p->part_shapes.front();
      bool same = node->output_dtype(0) == p->dtype && shape.rank() == first.rank();
      for (int i = 1; same && i < shape.rank(); ++i) same = shape.dim(i) == first.dim(i);
      if (!same) {
        return InvalidArgument(what + ": part '" + part + "' is " +
                               DTypeName(node->output_dtype(0)) + shape.ToString() + " but '" +
                               p->parts.front() + "' is " + DTypeName(p->dtype) +
                               first.ToString() + " (parts may differ only in dimension 0)");
      }
    }
    if (shape.rank() < 1) return InvalidArgument(what + ": part '" + part + "' is a scalar");
    p->part_shapes.push_back(shape);
    rows += shape.dim(0);
  }
  p->shape = WithDim0(p->part_shapes.front(), rows);
  return Status::OK();
}

// The slot "<whole>/<suffix>" of `p` when every part has a Variable "<part>/<suffix>"
// of its dtype and shape.
bool SlotOf(const Graph& graph, const VariablePartitioning& p, const std::string& suffix,
            VariablePartitioning* slot) {
  slot->name = p.name + "/" + suffix;
  slot->dtype = p.dtype;
  slot->shape = p.shape;
  slot->part_shapes = p.part_shapes;
  slot->parts.clear();
  for (size_t k = 0; k < p.parts.size(); ++k) {
    const Node* node = graph.FindNode(p.parts[k] + "/" + suffix);
    if (node == nullptr || node->op() != "Variable" || node->output_dtype(0) != p.dtype ||
        node->output_shape(0) != p.part_shapes[k]) {
      return false;
    }
    slot->parts.push_back(node->name());
  }
  return true;
}

}  // namespace

std::string PartitionedVariablePartsKey(const std::string& name) {
  return std::string(kPartitionedVariablesCollection) + "/" + name;
}

std::vector<int64_t> PartitionSizes(int64_t dim0, int num_shards) {
  std::vector<int64_t> sizes(static_cast<size_t>(num_shards), dim0 / num_shards);
  for (int64_t k = 0; k < dim0 % num_shards; ++k) ++sizes[static_cast<size_t>(k)];
  return sizes;
}

StatusOr<PartitionedVariable> CreatePartitionedVariable(const Scope& scope, const std::string& name,
                                                        const Shape& shape,
                                                        const Input& initial_value, int num_shards,
                                                        const ShardDeviceFn& device_for_shard,
                                                        bool trainable) {
  if (!scope.ok()) return scope.status();
  if (name.empty()) return InvalidArgument("CreatePartitionedVariable: the variable name is empty");
  const std::string what = "partitioned variable '" + name + "'";
  if (shape.unknown_rank() || !shape.IsFullyDefined() || shape.rank() < 1) {
    return InvalidArgument(what + " has shape " + shape.ToString() +
                           ": it needs a fully defined shape of rank >= 1 to split dimension 0");
  }
  if (num_shards < 1) {
    return InvalidArgument(what + ": num_shards is " + std::to_string(num_shards) +
                           "; it must be >= 1");
  }
  if (num_shards > shape.dim(0)) {
    return InvalidArgument(what + " " + shape.ToString() + ": cannot split dimension 0 (size " +
                           std::to_string(shape.dim(0)) + ") into " + std::to_string(num_shards) +
                           " shards; use at most " + std::to_string(shape.dim(0)) +
                           " (every shard needs at least one row)");
  }
  const std::optional<Tensor>& literal = initial_value.literal();
  Output initial;
  if (literal) {
    if (literal->shape() != shape) {
      return InvalidArgument(what + ": the initial value is " + literal->DebugString() +
                             ", expected shape " + shape.ToString());
    }
  } else {
    initial = initial_value.output();
    if (!initial.valid()) {
      return InvalidArgument(what + ": the initial value is an invalid Output (from an op that "
                             "failed?)");
    }
    if (initial.shape() != shape) {
      return InvalidArgument(what + ": the initial value '" + initial.name() + "' has shape " +
                             initial.shape().ToString() + ", expected " + shape.ToString());
    }
  }

  PartitionedVariable result;
  result.shape = shape;
  const std::vector<int64_t> sizes = PartitionSizes(shape.dim(0), num_shards);
  std::vector<Input> concat_inputs;
  int64_t offset = 0;
  for (int k = 0; k < num_shards; ++k) {
    const std::string part_name = name + "/part_" + std::to_string(k);
    const int64_t rows = sizes[static_cast<size_t>(k)];
    Scope part_scope = scope;
    if (device_for_shard) {
      const std::string device = device_for_shard(k);
      if (!device.empty()) part_scope = scope.WithDevice(device);
    }
    Input part_initial = Output();
    if (literal) {
      AF_ASSIGN_OR_RETURN(Tensor rows_value, SliceAlongDim0(*literal, offset, rows));
      part_initial = rows_value;
    } else {
      // The slice runs beside the initial value, so that only its rows travel to the
      // shard.
      std::vector<int64_t> begin(static_cast<size_t>(shape.rank()), 0);
      std::vector<int64_t> size(static_cast<size_t>(shape.rank()), -1);
      begin[0] = offset;
      size[0] = rows;
      part_initial =
          Slice(scope.NewSubScope(part_name).WithOpName("initial_value"), initial, begin, size);
      if (!scope.ok()) return scope.status().WithContext(what);
    }
    StatusOr<Output> part = CreateVariable(part_scope, part_name, part_initial, trainable);
    if (!part.ok()) return part.status().WithContext(what);
    result.parts.push_back(*part);
    concat_inputs.push_back(*part);
    offset += rows;
  }
  result.value = ConcatV2(scope.WithOpName(name), concat_inputs, 0);
  if (!scope.ok()) return scope.status().WithContext(what);
  result.name = result.value.node->name();

  Graph* graph = scope.graph();
  graph->AddToCollection(kPartitionedVariablesCollection, result.name);
  for (const Output& part : result.parts) {
    graph->AddToCollection(PartitionedVariablePartsKey(result.name), part.node->name());
  }
  return result;
}

StatusOr<std::vector<VariablePartitioning>> GetVariablePartitionings(const Graph& graph) {
  std::vector<VariablePartitioning> result;
  std::set<std::string> names;
  for (const std::string& name : graph.GetCollection(kPartitionedVariablesCollection)) {
    VariablePartitioning p;
    p.name = name;
    p.parts = graph.GetCollection(PartitionedVariablePartsKey(name));
    AF_RETURN_IF_ERROR(DescribeParts(graph, &p));
    names.insert(name);
    result.push_back(std::move(p));
  }
  // Optimizer slots: "<first part>/<suffix>" names the candidates.
  const size_t explicit_count = result.size();
  for (size_t i = 0; i < explicit_count; ++i) {
    const std::string prefix = result[i].parts.front() + "/";
    for (const std::string& var : graph.GetCollection(kVariablesCollection)) {
      if (var.size() <= prefix.size() || var.compare(0, prefix.size(), prefix) != 0) continue;
      VariablePartitioning slot;
      if (SlotOf(graph, result[i], var.substr(prefix.size()), &slot) &&
          names.insert(slot.name).second) {
        result.push_back(std::move(slot));
      }
    }
  }
  return result;
}

StatusOr<Tensor> ConcatAlongDim0(const std::vector<Tensor>& parts) {
  if (parts.empty()) return InvalidArgument("ConcatAlongDim0: no tensors");
  const Tensor& first = parts.front();
  if (first.rank() < 1) return InvalidArgument("ConcatAlongDim0: " + first.DebugString() + " is a scalar");
  int64_t rows = 0;
  for (const Tensor& t : parts) {
    bool same = t.dtype() == first.dtype() && t.rank() == first.rank();
    for (int i = 1; same && i < t.rank(); ++i) same = t.dim(i) == first.dim(i);
    if (!same) {
      return InvalidArgument("ConcatAlongDim0: " + t.DebugString() + " does not fit " +
                             first.DebugString() + " (only dimension 0 may differ)");
    }
    rows += t.dim(0);
  }
  Tensor whole(first.dtype(), WithDim0(first.shape(), rows));
  char* out = static_cast<char*>(whole.raw_data());
  for (const Tensor& t : parts) {
    if (t.TotalBytes() > 0) std::memcpy(out, t.raw_data(), t.TotalBytes());
    out += t.TotalBytes();
  }
  return whole;
}

StatusOr<Tensor> SliceAlongDim0(const Tensor& whole, int64_t begin, int64_t rows) {
  if (whole.rank() < 1) return InvalidArgument("SliceAlongDim0: " + whole.DebugString() + " is a scalar");
  if (begin < 0 || rows < 0 || begin + rows > whole.dim(0)) {
    return InvalidArgument("SliceAlongDim0: rows [" + std::to_string(begin) + ", " +
                           std::to_string(begin + rows) + ") are outside " + whole.DebugString());
  }
  Tensor part(whole.dtype(), WithDim0(whole.shape(), rows));
  const size_t row_bytes = RowBytes(whole.shape(), whole.dtype());
  if (part.TotalBytes() > 0) {
    std::memcpy(part.raw_data(), static_cast<const char*>(whole.raw_data()) + begin * row_bytes,
                part.TotalBytes());
  }
  return part;
}

}  // namespace actorflow

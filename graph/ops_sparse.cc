// The op set's sparse family: row gathers and segment sums (Gather, Unique,
// UnsortedSegmentSum, DynamicStitch, PartitionRowIds), in-place row writes into variables (ScatterAdd, ScatterSub,
// ScatterUpdate) and the optimizer updates that touch only given rows
// (SparseApplyGradientDescent, SparseApplyAdagrad, SparseApplyAdam). graph/sparse_ops.h
// documents what each op promises.
//
// Row ids are int32 or int64. A row id's range is only known at run time, so the
// kernels, not inference, reject ids outside [0, rows).
#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "graph/op_registry.h"
#include "graph/op_set_internal.h"

namespace actorflow {
namespace op_set_internal {
namespace {

// indices.shape + x.shape[1:] (x of rank >= 1): the shape of the rows of x that
// `indices` name; unknown rank when either rank is.
Shape RowsShape(const Shape& indices, const Shape& x) {
  if (indices.unknown_rank() || x.unknown_rank()) return Shape::UnknownRank();
  std::vector<int64_t> dims = indices.dims();
  dims.insert(dims.end(), x.dims().begin() + 1, x.dims().end());
  return Shape(std::move(dims));
}

// params [N, ...] (any dtype), indices (int) -> params' dtype [indices..., params[1:]].
Status InferGather(InferenceContext& ctx) {
  AF_RETURN_IF_ERROR(CheckRank("params (input 0)", ctx.input_shape(0), 1, -1));
  AF_RETURN_IF_ERROR(CheckDType("indices (input 1)", ctx.input_dtype(1), Allowed::kIndex));
  ctx.set_output(0, ctx.input_dtype(0), RowsShape(ctx.input_shape(1), ctx.input_shape(0)));
  return Status::OK();
}

// x (int [n]) -> y (x's dtype [?]), idx (out_idx [n]).
Status InferUnique(InferenceContext& ctx) {
  AF_RETURN_IF_ERROR(CheckDType("x (input 0)", ctx.input_dtype(0), Allowed::kIndex));
  AF_RETURN_IF_ERROR(CheckRank("x (input 0)", ctx.input_shape(0), 1, 1));
  const DType out_idx = ctx.attr<DType>("out_idx");
  AF_RETURN_IF_ERROR(CheckDType("attr 'out_idx'", out_idx, Allowed::kIndex));
  ctx.set_output(0, ctx.input_dtype(0), Shape{Shape::kUnknownDim});
  const Shape& x = ctx.input_shape(0);
  ctx.set_output(1, out_idx, Shape{x.unknown_rank() ? Shape::kUnknownDim : x.dim(0)});
  return Status::OK();
}

// data [ids..., rest...] (numeric), segment_ids (int, a prefix of data's shape),
// num_segments (int scalar) -> data's dtype [num_segments, rest...].
Status InferUnsortedSegmentSum(InferenceContext& ctx) {
  AF_RETURN_IF_ERROR(CheckDType("data (input 0)", ctx.input_dtype(0), Allowed::kNumeric));
  AF_RETURN_IF_ERROR(CheckDType("segment_ids (input 1)", ctx.input_dtype(1), Allowed::kIndex));
  AF_RETURN_IF_ERROR(CheckDType("num_segments (input 2)", ctx.input_dtype(2), Allowed::kIndex));
  AF_RETURN_IF_ERROR(CheckRank("num_segments (input 2)", ctx.input_shape(2), 0, 0));
  const Shape& data = ctx.input_shape(0);
  const Shape& ids = ctx.input_shape(1);
  int64_t segments = Shape::kUnknownDim;
  if (const Tensor* n = ctx.input_constant(2)) {
    segments = n->dtype() == DType::kInt32 ? n->data<int32_t>()[0] : n->data<int64_t>()[0];
    if (segments < 0) {
      return InvalidArgument("num_segments (input 2) is " + std::to_string(segments) +
                             ": it must be >= 0");
    }
  }
  if (data.unknown_rank() || ids.unknown_rank()) {
    ctx.set_output(0, ctx.input_dtype(0), Shape::UnknownRank());
    return Status::OK();
  }
  if (ids.rank() > data.rank()) {
    return InvalidArgument("segment_ids (input 1) " + ids.ToString() + " must be a prefix of "
                           "data's shape " + data.ToString());
  }
  for (int i = 0; i < ids.rank(); ++i) {
    if (ids.dim(i) >= 0 && data.dim(i) >= 0 && ids.dim(i) != data.dim(i)) {
      return InvalidArgument("segment_ids (input 1) " + ids.ToString() + " must be a prefix "
                             "of data's shape " + data.ToString());
    }
  }
  std::vector<int64_t> dims = {segments};
  dims.insert(dims.end(), data.dims().begin() + ids.rank(), data.dims().end());
  ctx.set_output(0, ctx.input_dtype(0), Shape(std::move(dims)));
  return Status::OK();
}

// indices_0..N-1 (int), data_0..N-1 (one dtype, data_i [indices_i..., d...]) ->
// [?, d...].
Status InferDynamicStitch(InferenceContext& ctx) {
  const int n = ctx.num_inputs() / 2;
  if (ctx.num_inputs() % 2 != 0 || n < 1) {
    return InvalidArgument("DynamicStitch takes N index tensors then N data tensors, got " +
                           std::to_string(ctx.num_inputs()) + " inputs");
  }
  Shape rows = Shape::UnknownRank();
  for (int i = 0; i < n; ++i) {
    AF_RETURN_IF_ERROR(CheckDType("indices (input " + std::to_string(i) + ")",
                                  ctx.input_dtype(i), Allowed::kIndex));
    if (ctx.input_dtype(n + i) != ctx.input_dtype(n)) {
      return InvalidArgument("data (input " + std::to_string(n + i) + ") has dtype " +
                             DTypeName(ctx.input_dtype(n + i)) + " but data (input " +
                             std::to_string(n) + ") has " + DTypeName(ctx.input_dtype(n)));
    }
    const Shape& ids = ctx.input_shape(i);
    const Shape& data = ctx.input_shape(n + i);
    if (ids.unknown_rank() || data.unknown_rank()) continue;
    if (ids.rank() > data.rank()) {
      return InvalidArgument("data (input " + std::to_string(n + i) + ") " + data.ToString() +
                             " must start with the shape of its indices " + ids.ToString());
    }
    std::vector<int64_t> dims = {Shape::kUnknownDim};
    dims.insert(dims.end(), data.dims().begin() + ids.rank(), data.dims().end());
    const Shape candidate(dims);
    if (!rows.IsCompatibleWith(candidate)) {
      return InvalidArgument("data (input " + std::to_string(n + i) + ") has rows of shape " +
                             candidate.ToString() + ", unlike the others' " + rows.ToString());
    }
    rows = rows.MergeWith(candidate);
  }
  ctx.set_output(0, ctx.input_dtype(n), rows);
  return Status::OK();
}

constexpr int64_t kMaxParts = 65536;

// ids (int, any shape) -> for each part p: local ids (ids' dtype [?]) and positions
// (int32 [?]) of the ids that part p holds.
Status InferPartitionRowIds(InferenceContext& ctx) {
  AF_RETURN_IF_ERROR(CheckDType("ids (input 0)", ctx.input_dtype(0), Allowed::kIndex));
  const int64_t rows = ctx.attr<int64_t>("num_rows");
  const int64_t parts = ctx.attr<int64_t>("num_parts");
  const std::string& strategy = ctx.attr<std::string>("strategy");
  if (parts < 1 || rows < parts || parts > kMaxParts) {
    return InvalidArgument("num_parts " + std::to_string(parts) + " for num_rows " +
                           std::to_string(rows) + ": use 1 <= num_parts <= num_rows and "
                           "at most " + std::to_string(kMaxParts) + " parts");
  }
  if (strategy != "mod" && strategy != "div") {
    return InvalidArgument("strategy '" + strategy + "': use \"mod\" or \"div\"");
  }
  for (int64_t p = 0; p < parts; ++p) {
    ctx.set_output(static_cast<int>(2 * p), ctx.input_dtype(0), Shape{Shape::kUnknownDim});
    ctx.set_output(static_cast<int>(2 * p + 1), DType::kInt32, Shape{Shape::kUnknownDim});
  }
  return Status::OK();
}

// true_classes (int64 [batch, num_true]) -> sampled (int64 [num_sampled]),
// true_expected_count (float32 [batch, num_true]), sampled_expected_count (float32
// [num_sampled]).
Status InferLogUniformCandidateSampler(InferenceContext& ctx) {
  if (ctx.input_dtype(0) != DType::kInt64) {
    return InvalidArgument(std::string("true_classes (input 0) must be int64, got ") +
                           DTypeName(ctx.input_dtype(0)));
  }
  AF_RETURN_IF_ERROR(CheckRank("true_classes (input 0)", ctx.input_shape(0), 2, 2));
  const int64_t num_true = ctx.attr<int64_t>("num_true");
  const int64_t num_sampled = ctx.attr<int64_t>("num_sampled");
  const int64_t range_max = ctx.attr<int64_t>("range_max");
  if (num_true < 1 || num_sampled < 1 || range_max < 1) {
    return InvalidArgument("num_true, num_sampled and range_max must be >= 1, got " +
                           std::to_string(num_true) + ", " + std::to_string(num_sampled) +
                           ", " + std::to_string(range_max));
  }
  if (ctx.attr<bool>("unique") && num_sampled > range_max) {
    return InvalidArgument("num_sampled " + std::to_string(num_sampled) +
                           " unique candidates from range_max " + std::to_string(range_max) +
                           ": there are not that many");
  }
  Shape true_shape = ctx.input_shape(0);
  if (!true_shape.unknown_rank() && true_shape.dim(1) >= 0 && true_shape.dim(1) != num_true) {
    return InvalidArgument("true_classes (input 0) " + true_shape.ToString() + " has not " +
                           std::to_string(num_true) + " columns (num_true)");
  }
  ctx.set_output(0, DType::kInt64, Shape{num_sampled});
  ctx.set_output(1, DType::kFloat32, true_shape);
  ctx.set_output(2, DType::kFloat32, Shape{num_sampled});
  return Status::OK();
}

// ref (a Variable [N, ...]), indices (int), updates [indices..., ref[1:]] of ref's
// dtype -> ref's new value.
Status InferScatter(InferenceContext& ctx) {
  AF_RETURN_IF_ERROR(CheckRank("ref (input 0)", ctx.input_shape(0), 1, -1));
  AF_RETURN_IF_ERROR(CheckDType("indices (input 1)", ctx.input_dtype(1), Allowed::kIndex));
  if (ctx.input_dtype(2) != ctx.input_dtype(0)) {
    return InvalidArgument(std::string("updates (input 2) has dtype ") +
                           DTypeName(ctx.input_dtype(2)) + " but ref has dtype " +
                           DTypeName(ctx.input_dtype(0)));
  }
  const Shape want = RowsShape(ctx.input_shape(1), ctx.input_shape(0));
  if (!want.IsCompatibleWith(ctx.input_shape(2))) {
    return InvalidArgument("updates (input 2) has shape " + ctx.input_shape(2).ToString() +
                           " but indices " + ctx.input_shape(1).ToString() + " of ref " +
                           ctx.input_shape(0).ToString() + " need " + want.ToString());
  }
  ctx.set_output(0, ctx.input_dtype(0), ctx.input_shape(0));
  return Status::OK();
}

OpDef ScatterOp(std::string name) {
  OpDef def = Stateful(MakeOp(std::move(name), 3, 1, {}, InferScatter));
  def.ref_inputs = {0};
  return def;
}

// Where the inputs of a SparseApply op sit: refs first (the variable, then its
// slots), then scalar hyper-parameters, the gradient rows and their 1-D indices
// (last, unless indices_input says where).
struct SparseApplyLayout {
  std::vector<std::string> input_names;  // one per input, for error messages
  int num_refs = 1;
  int grad_input = 0;
  int indices_input = -1;  // -1: the last input
};

// Every input but the indices has the variable's float dtype; the slots have its
// shape; grad is [n, var[1:]] for indices [n]; hyper-parameters are scalars.
InferenceFn InferSparseApply(SparseApplyLayout layout) {
  return [layout](InferenceContext& ctx) -> Status {
    const int indices_input =
        layout.indices_input >= 0 ? layout.indices_input : ctx.num_inputs() - 1;
    auto named = [&](int i) { return layout.input_names[i] + " (input " + std::to_string(i) + ")"; };
    AF_RETURN_IF_ERROR(CheckDType(named(0), ctx.input_dtype(0), Allowed::kFloating));
    AF_RETURN_IF_ERROR(CheckRank(named(0), ctx.input_shape(0), 1, -1));
    AF_RETURN_IF_ERROR(CheckDType(named(indices_input), ctx.input_dtype(indices_input),
                                  Allowed::kIndex));
    AF_RETURN_IF_ERROR(CheckRank(named(indices_input), ctx.input_shape(indices_input), 1, 1));
    Shape var_shape = ctx.input_shape(0);
    for (int i = 1; i < ctx.num_inputs(); ++i) {
      if (i == indices_input) continue;
      if (ctx.input_dtype(i) != ctx.input_dtype(0)) {
        return InvalidArgument(named(i) + " has dtype " + DTypeName(ctx.input_dtype(i)) +
                               " but var has dtype " + DTypeName(ctx.input_dtype(0)) +
                               ": every input but the indices must have the variable's dtype");
      }
      if (i < layout.num_refs) {
        if (!var_shape.IsCompatibleWith(ctx.input_shape(i))) {
          return InvalidArgument(named(i) + " has shape " + ctx.input_shape(i).ToString() +
                                 " but var has shape " + var_shape.ToString());
        }
        var_shape = var_shape.MergeWith(ctx.input_shape(i));
      } else if (i != layout.grad_input) {
        AF_RETURN_IF_ERROR(CheckRank(named(i), ctx.input_shape(i), 0, 0));
      }
    }
    const Shape want = RowsShape(ctx.input_shape(indices_input), var_shape);
    if (!want.IsCompatibleWith(ctx.input_shape(layout.grad_input))) {
      return InvalidArgument(named(layout.grad_input) + " has shape " +
                             ctx.input_shape(layout.grad_input).ToString() + " but indices " +
                             ctx.input_shape(indices_input).ToString() + " of var " +
                             var_shape.ToString() + " need " + want.ToString());
    }
    ctx.set_output(0, ctx.input_dtype(0), var_shape);
    return Status::OK();
  };
}

OpDef SparseApplyOp(std::string name, SparseApplyLayout layout) {
  const int num_inputs = static_cast<int>(layout.input_names.size());
  std::vector<int> refs;
  for (int i = 0; i < layout.num_refs; ++i) refs.push_back(i);
  OpDef def = Stateful(MakeOp(std::move(name), num_inputs, 1, {},
                              InferSparseApply(std::move(layout))));
  def.ref_inputs = std::move(refs);
  return def;
}

std::vector<OpDef> SparseOpSet() {
  using T = AttrType;
  std::vector<OpDef> ops;
  ops.push_back(MakeOp("Gather", 2, 1, {}, InferGather));
  ops.push_back(
      MakeOp("Unique", 1, 2, {Default("out_idx", T::kType, DType::kInt32)}, InferUnique));
  ops.push_back(MakeOp("UnsortedSegmentSum", 3, 1, {}, InferUnsortedSegmentSum));
  OpDef stitch = MakeOp("DynamicStitch", -1, 1, {}, InferDynamicStitch);
  stitch.min_inputs = 2;
  ops.push_back(std::move(stitch));
  OpDef partition = MakeOp("PartitionRowIds", 1, 0,
                           {Required("num_rows", T::kInt), Required("num_parts", T::kInt),
                            Required("strategy", T::kString)},
                           InferPartitionRowIds);
  partition.num_outputs_fn = [](const AttrMap& attrs) {
    auto it = attrs.find("num_parts");
    if (it == attrs.end() || !it->second.Is<int64_t>()) return 0;
    return static_cast<int>(2 * std::min(it->second.Get<int64_t>(), kMaxParts));
  };
  ops.push_back(std::move(partition));
  ops.push_back(Stateful(MakeOp("LogUniformCandidateSampler", 1, 3,
                                {Required("num_true", T::kInt), Required("num_sampled", T::kInt),
                                 Required("unique", T::kBool), Required("range_max", T::kInt),
                                 Default("seed", T::kInt, int64_t{0})},
                                InferLogUniformCandidateSampler)));
  for (const char* name : {"ScatterAdd", "ScatterSub", "ScatterUpdate"}) {
    ops.push_back(ScatterOp(name));
  }
  ops.push_back(SparseApplyOp("SparseApplyGradientDescent",
                              {{"var", "alpha", "grad", "indices"}, 1, 2}));
  ops.push_back(SparseApplyOp("SparseApplyAdagrad",
                              {{"var", "accum", "lr", "grad", "indices"}, 2, 3}));
  ops.push_back(SparseApplyOp("SparseApplyAdam",
                              {{"var", "m", "v", "beta1_power", "beta2_power", "lr", "beta1",
                                "beta2", "epsilon", "grad", "indices"},
                               3,
                               9}));
  // TensorFlow's order: the indices follow the gradient.
  ops.push_back(SparseApplyOp("SparseApplyFtrl",
                              {{"var", "accum", "linear", "grad", "indices", "lr", "l1", "l2",
                                "lr_power"},
                               3,
                               3,
                               4}));
  return ops;
}

[[maybe_unused]] const bool kSparseOpsRegistered = [] {
  for (OpDef& def : SparseOpSet()) OpRegistration registration(std::move(def));
  return true;
}();

}  // namespace
}  // namespace op_set_internal
}  // namespace actorflow

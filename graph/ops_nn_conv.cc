// Convolution and pooling ops over NHWC images (TensorFlow semantics): Conv2D with an
// HWIO filter, MaxPool, AvgPool, and the ops their backward rules are built from
// (Conv2DBackpropInput, Conv2DBackpropFilter, MaxPoolGrad, AvgPoolGrad), each with
// shape inference and a graph/ops.h builder.
//
// Geometry (per spatial axis, input size `in`, window `k`, stride `s`):
//   VALID: out = (in - k) / s + 1, requires k <= in;
//   SAME:  out = ceil(in / s), padded by max((out - 1) * s + k - in, 0) in total, the
//          smaller half before.
// `strides` and `ksize` are [1, h, w, 1]: no striding or pooling over batch or
// channels, as TensorFlow's CPU kernels. Kernels: kernels/cpu/conv_kernels.cc and
// kernels/cpu/pool_kernels.cc; reference: kernels/reference/reference_conv.cc.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "graph/op_registry.h"
#include "graph/op_set_internal.h"
#include "graph/ops.h"
#include "graph/shape_inference.h"

namespace actorflow {
namespace op_set_internal {
namespace {

// Windows and strides wider than this are refused (TensorFlow's are int32), so that
// the geometry's arithmetic on them cannot overflow.
constexpr int64_t kMaxWindowAttr = int64_t{1} << 31;

// Checks a [1, h, w, 1] attr with 1 <= h, w <= kMaxWindowAttr.
Status CheckWindowAttr(const InferenceContext& ctx, const std::string& name) {
  const auto& v = ctx.attr<std::vector<int64_t>>(name);
  if (v.size() != 4 || v[0] != 1 || v[3] != 1 || v[1] < 1 || v[2] < 1 ||
      v[1] > kMaxWindowAttr || v[2] > kMaxWindowAttr) {
    return InvalidArgument("attr '" + name + "' must be [1, h, w, 1] with 1 <= h, w <= " +
                           std::to_string(kMaxWindowAttr) + ", got " + IntListToString(v));
  }
  return Status::OK();
}

Status CheckPaddingAttr(const InferenceContext& ctx) {
  const auto& p = ctx.attr<std::string>("padding");
  if (p != "SAME" && p != "VALID") {
    return InvalidArgument("attr 'padding' must be \"SAME\" or \"VALID\", got \"" + p + "\"");
  }
  return Status::OK();
}

// One spatial output dim; -1 when `in` or `k` is unknown.
StatusOr<int64_t> OutputDim(const std::string& axis, int64_t in, int64_t k, int64_t stride,
                            bool same) {
  if (in < 0 || k < 0) return int64_t{-1};
  if (same) return in / stride + (in % stride != 0 ? 1 : 0);  // ceil, without overflow
  if (k > in) {
    return InvalidArgument("the " + axis + " window " + std::to_string(k) +
                           " is larger than the input " + axis + " " + std::to_string(in) +
                           " with VALID padding");
  }
  return (in - k) / stride + 1;
}

// [N, OH, OW, channels] for an NHWC `input` and a window of kh x kw (-1: unknown).
StatusOr<Shape> WindowedShape(const InferenceContext& ctx, const Shape& input, int64_t kh,
                              int64_t kw, int64_t channels) {
  const auto& strides = ctx.attr<std::vector<int64_t>>("strides");
  const bool same = ctx.attr<std::string>("padding") == "SAME";
  if (input.unknown_rank()) return Shape{-1, -1, -1, channels};
  AF_ASSIGN_OR_RETURN(int64_t oh, OutputDim("height", input.dim(1), kh, strides[1], same));
  AF_ASSIGN_OR_RETURN(int64_t ow, OutputDim("width", input.dim(2), kw, strides[2], same));
  return Shape{input.dim(0), oh, ow, channels};
}

Status CheckCommonAttrs(const InferenceContext& ctx, bool pooling) {
  AF_RETURN_IF_ERROR(CheckWindowAttr(ctx, "strides"));
  if (pooling) AF_RETURN_IF_ERROR(CheckWindowAttr(ctx, "ksize"));
  return CheckPaddingAttr(ctx);
}

// A 1-D size input of 4 elements (input_sizes, filter_sizes, orig_input_shape): its
// value when it is a Const, else [?,?,?,?] refined by `known` dims (-1: unknown).
StatusOr<Shape> SizesInput(const InferenceContext& ctx, int i, const std::string& what,
                           const std::vector<int64_t>& known) {
  AF_RETURN_IF_ERROR(CheckInput(ctx, i, Allowed::kIndex));
  AF_RETURN_IF_ERROR(CheckRank(what, ctx.input_shape(i), 1, 1));
  if (const Tensor* t = ctx.input_constant(i)) {
    if (t->NumElements() != 4) {
      return InvalidArgument(what + " must have 4 elements, got " + t->shape().ToString());
    }
    std::vector<int64_t> dims(4);
    for (int d = 0; d < 4; ++d) {
      dims[d] = t->dtype() == DType::kInt32 ? t->data<int32_t>()[d] : t->data<int64_t>()[d];
      if (dims[d] < 0) {
        return InvalidArgument(what + " " + IntListToString(dims) + " has a negative dim");
      }
      if (known[d] >= 0 && known[d] != dims[d]) {
        return InvalidArgument(what + " " + IntListToString(dims) +
                               " conflicts with the other inputs at dim " + std::to_string(d));
      }
    }
    return Shape(dims);
  }
  return Shape(known);
}

// Conv2D(input [N,H,W,C], filter [KH,KW,C,O]) -> [N,OH,OW,O].
Status InferConv2D(InferenceContext& ctx) {
  AF_RETURN_IF_ERROR(CheckSameDTypes(ctx));
  AF_RETURN_IF_ERROR(CheckInput(ctx, 0, Allowed::kFloating));
  AF_RETURN_IF_ERROR(CheckCommonAttrs(ctx, false));
  const Shape& input = ctx.input_shape(0);
  const Shape& filter = ctx.input_shape(1);
  AF_RETURN_IF_ERROR(CheckRank("input", input, 4, 4));
  AF_RETURN_IF_ERROR(CheckRank("filter", filter, 4, 4));
  const bool known = !input.unknown_rank() && !filter.unknown_rank();
  if (known && input.dim(3) >= 0 && filter.dim(2) >= 0 && input.dim(3) != filter.dim(2)) {
    return InvalidArgument("input " + input.ToString() + " has " +
                           std::to_string(input.dim(3)) + " channels but filter " +
                           filter.ToString() + " expects " + std::to_string(filter.dim(2)));
  }
  const int64_t kh = filter.unknown_rank() ? -1 : filter.dim(0);
  const int64_t kw = filter.unknown_rank() ? -1 : filter.dim(1);
  const int64_t out_channels = filter.unknown_rank() ? -1 : filter.dim(3);
  AF_ASSIGN_OR_RETURN(Shape out, WindowedShape(ctx, input, kh, kw, out_channels));
  ctx.set_output(0, ctx.input_dtype(0), std::move(out));
  return Status::OK();
}

// Conv2DBackpropInput(input_sizes [4], filter [KH,KW,C,O], out_backprop [N,OH,OW,O])
// -> input_sizes.
Status InferConv2DBackpropInput(InferenceContext& ctx) {
  AF_RETURN_IF_ERROR(CheckCommonAttrs(ctx, false));
  AF_RETURN_IF_ERROR(CheckInput(ctx, 1, Allowed::kFloating));
  if (ctx.input_dtype(2) != ctx.input_dtype(1)) {
    return InvalidArgument("filter and out_backprop differ in dtype");
  }
  AF_RETURN_IF_ERROR(CheckRank("filter", ctx.input_shape(1), 4, 4));
  AF_RETURN_IF_ERROR(CheckRank("out_backprop", ctx.input_shape(2), 4, 4));
  const Shape& filter = ctx.input_shape(1);
  const Shape& dy = ctx.input_shape(2);
  AF_ASSIGN_OR_RETURN(
      Shape out, SizesInput(ctx, 0, "input_sizes",
                            {dy.unknown_rank() ? -1 : dy.dim(0), -1, -1,
                             filter.unknown_rank() ? -1 : filter.dim(2)}));
  ctx.set_output(0, ctx.input_dtype(1), std::move(out));
  return Status::OK();
}

// Conv2DBackpropFilter(input [N,H,W,C], filter_sizes [4], out_backprop [N,OH,OW,O])
// -> filter_sizes.
Status InferConv2DBackpropFilter(InferenceContext& ctx) {
  AF_RETURN_IF_ERROR(CheckCommonAttrs(ctx, false));
  AF_RETURN_IF_ERROR(CheckInput(ctx, 0, Allowed::kFloating));
  if (ctx.input_dtype(2) != ctx.input_dtype(0)) {
    return InvalidArgument("input and out_backprop differ in dtype");
  }
  AF_RETURN_IF_ERROR(CheckRank("input", ctx.input_shape(0), 4, 4));
  AF_RETURN_IF_ERROR(CheckRank("out_backprop", ctx.input_shape(2), 4, 4));
  const Shape& x = ctx.input_shape(0);
  const Shape& dy = ctx.input_shape(2);
  AF_ASSIGN_OR_RETURN(Shape out, SizesInput(ctx, 1, "filter_sizes",
                                            {-1, -1, x.unknown_rank() ? -1 : x.dim(3),
                                             dy.unknown_rank() ? -1 : dy.dim(3)}));
  ctx.set_output(0, ctx.input_dtype(0), std::move(out));
  return Status::OK();
}

// MaxPool / AvgPool(value [N,H,W,C]) -> [N,OH,OW,C].
Status InferPool(InferenceContext& ctx) {
  AF_RETURN_IF_ERROR(CheckInput(ctx, 0, Allowed::kFloating));
  AF_RETURN_IF_ERROR(CheckCommonAttrs(ctx, true));
  const Shape& input = ctx.input_shape(0);
  AF_RETURN_IF_ERROR(CheckRank("value", input, 4, 4));
  const auto& ksize = ctx.attr<std::vector<int64_t>>("ksize");
  AF_ASSIGN_OR_RETURN(Shape out, WindowedShape(ctx, input, ksize[1], ksize[2],
                                               input.unknown_rank() ? -1 : input.dim(3)));
  ctx.set_output(0, ctx.input_dtype(0), std::move(out));
  return Status::OK();
}

// MaxPoolGrad(orig_input, orig_output, grad) -> orig_input's shape.
Status InferMaxPoolGrad(InferenceContext& ctx) {
  AF_RETURN_IF_ERROR(CheckSameDTypes(ctx));
  AF_RETURN_IF_ERROR(CheckInput(ctx, 0, Allowed::kFloating));
  AF_RETURN_IF_ERROR(CheckCommonAttrs(ctx, true));
  AF_RETURN_IF_ERROR(CheckRank("orig_input", ctx.input_shape(0), 4, 4));
  AF_RETURN_IF_ERROR(CheckRank("orig_output", ctx.input_shape(1), 4, 4));
  AF_RETURN_IF_ERROR(CheckRank("grad", ctx.input_shape(2), 4, 4));
  ctx.set_output(0, ctx.input_dtype(0), ctx.input_shape(0));
  return Status::OK();
}

// AvgPoolGrad(orig_input_shape [4], grad [N,OH,OW,C]) -> orig_input_shape.
Status InferAvgPoolGrad(InferenceContext& ctx) {
  AF_RETURN_IF_ERROR(CheckInput(ctx, 1, Allowed::kFloating));
  AF_RETURN_IF_ERROR(CheckCommonAttrs(ctx, true));
  AF_RETURN_IF_ERROR(CheckRank("grad", ctx.input_shape(1), 4, 4));
  const Shape& g = ctx.input_shape(1);
  AF_ASSIGN_OR_RETURN(Shape out,
                      SizesInput(ctx, 0, "orig_input_shape",
                                 {g.unknown_rank() ? -1 : g.dim(0), -1, -1,
                                  g.unknown_rank() ? -1 : g.dim(3)}));
  ctx.set_output(0, ctx.input_dtype(1), std::move(out));
  return Status::OK();
}

std::vector<OpDef> ConvOpSet() {
  using T = AttrType;
  const std::vector<AttrDef> conv_attrs = {Required("strides", T::kIntList),
                                           Required("padding", T::kString)};
  const std::vector<AttrDef> pool_attrs = {Required("ksize", T::kIntList),
                                           Required("strides", T::kIntList),
                                           Required("padding", T::kString)};
  std::vector<OpDef> ops;
  ops.push_back(MakeOp("Conv2D", 2, 1, conv_attrs, InferConv2D));
  ops.push_back(MakeOp("Conv2DBackpropInput", 3, 1, conv_attrs, InferConv2DBackpropInput));
  ops.push_back(MakeOp("Conv2DBackpropFilter", 3, 1, conv_attrs, InferConv2DBackpropFilter));
  ops.push_back(MakeOp("MaxPool", 1, 1, pool_attrs, InferPool));
  ops.push_back(MakeOp("AvgPool", 1, 1, pool_attrs, InferPool));
  ops.push_back(MakeOp("MaxPoolGrad", 3, 1, pool_attrs, InferMaxPoolGrad));
  ops.push_back(MakeOp("AvgPoolGrad", 2, 1, pool_attrs, InferAvgPoolGrad));
  return ops;
}

[[maybe_unused]] const bool kConvOpsRegistered = [] {
  for (OpDef& def : ConvOpSet()) OpRegistration registration(std::move(def));
  return true;
}();

}  // namespace
}  // namespace op_set_internal

// --- Builders (graph/ops.h) -------------------------------------------------------

namespace {

AttrMap ConvAttrs(const std::vector<int64_t>& strides, const std::string& padding) {
  return {{"strides", strides}, {"padding", padding}};
}
AttrMap PoolAttrs(const std::vector<int64_t>& ksize, const std::vector<int64_t>& strides,
                  const std::string& padding) {
  return {{"ksize", ksize}, {"strides", strides}, {"padding", padding}};
}
Output Node0(const Scope& scope, const std::string& op, const std::vector<Input>& inputs,
             AttrMap attrs) {
  return Output(scope.AddNode(op, inputs, std::move(attrs)), 0);
}

}  // namespace

Output Conv2D(const Scope& scope, const Input& input, const Input& filter,
              const std::vector<int64_t>& strides, const std::string& padding) {
  return Node0(scope, "Conv2D", {input, filter}, ConvAttrs(strides, padding));
}
Output Conv2DBackpropInput(const Scope& scope, const Input& input_sizes, const Input& filter,
                           const Input& out_backprop, const std::vector<int64_t>& strides,
                           const std::string& padding) {
  return Node0(scope, "Conv2DBackpropInput", {input_sizes, filter, out_backprop},
               ConvAttrs(strides, padding));
}
Output Conv2DBackpropFilter(const Scope& scope, const Input& input, const Input& filter_sizes,
                            const Input& out_backprop, const std::vector<int64_t>& strides,
                            const std::string& padding) {
  return Node0(scope, "Conv2DBackpropFilter", {input, filter_sizes, out_backprop},
               ConvAttrs(strides, padding));
}
Output MaxPool(const Scope& scope, const Input& value, const std::vector<int64_t>& ksize,
               const std::vector<int64_t>& strides, const std::string& padding) {
  return Node0(scope, "MaxPool", {value}, PoolAttrs(ksize, strides, padding));
}
Output AvgPool(const Scope& scope, const Input& value, const std::vector<int64_t>& ksize,
               const std::vector<int64_t>& strides, const std::string& padding) {
  return Node0(scope, "AvgPool", {value}, PoolAttrs(ksize, strides, padding));
}
Output MaxPoolGrad(const Scope& scope, const Input& orig_input, const Input& orig_output,
                   const Input& grad, const std::vector<int64_t>& ksize,
                   const std::vector<int64_t>& strides, const std::string& padding) {
  return Node0(scope, "MaxPoolGrad", {orig_input, orig_output, grad},
               PoolAttrs(ksize, strides, padding));
}
Output AvgPoolGrad(const Scope& scope, const Input& orig_input_shape, const Input& grad,
                   const std::vector<int64_t>& ksize, const std::vector<int64_t>& strides,
                   const std::string& padding) {
  return Node0(scope, "AvgPoolGrad", {orig_input_shape, grad},
               PoolAttrs(ksize, strides, padding));
}

}  // namespace actorflow

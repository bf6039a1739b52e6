// The backward rules of the shape ops (graph/shape_ops.h). Each moves the incoming
// gradient back to where its input's elements came from, so none does arithmetic but
// Tile's (a sum over the tiles). Shapes may be unknown when the graph is built: the
// rules then read them at run time (ShapeOf), so they hold for any runtime shape.
// OneHot has no rule (its input is integer); Select gives its cond none.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "graph/gradient_rules_internal.h"
#include "graph/ops.h"
#include "graph/shape_ops.h"

namespace actorflow {
namespace gradient_rules_internal {
namespace {

using Grads = std::vector<Output>;

// g reshaped to x's shape: a Const shape when x's is known (inference keeps it), else
// x's runtime shape.
Output ReshapeLike(const Scope& s, const Output& g, const Output& x) {
  if (x.shape().IsFullyDefined()) {
    return Reshape(s, g, Const(s, Tensor::FromVector(x.shape().dims().ToVector())));
  }
  return Reshape(s, g, ShapeOf(s, x, DType::kInt64));
}

// The gradient of each of op's outputs, zeros of its shape where none flows (the
// parts of a Split or an Unpack that the ys do not use).
std::vector<Output> OutputGrads(const Scope& s, const Node& op, const Grads& dy) {
  std::vector<Output> grads;
  for (int k = 0; k < op.num_outputs(); ++k) {
    grads.push_back(dy[k].valid() ? dy[k] : ZerosLike(s, Out(op, k)));
  }
  return grads;
}

// ExpandDims and Squeeze only relabel dims: dx = g in x's shape.
Status ReshapeBackGrad(const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
  (*dx)[0] = ReshapeLike(s, dy[0], In(op, 0));
  return Status::OK();
}

// out[..., i, ...] = values[i]: d values[i] = g's slice i along axis.
Status PackGrad(const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
  const std::vector<Output> parts = Unpack(s, dy[0], op.num_inputs(), op.attr<int64_t>("axis"));
  if (!s.ok()) return s.status();
  for (int i = 0; i < op.num_inputs(); ++i) (*dx)[i] = parts[i];
  return Status::OK();
}

// The inverse of Pack: dx = the outputs' gradients packed back along axis.
Status UnpackGrad(const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
  (*dx)[0] = Pack(s, OutputGrads(s, op, dy), op.attr<int64_t>("axis"));
  return Status::OK();
}

// dx = the parts' gradients concatenated along axis.
Status SplitGrad(const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
  const std::vector<Output> grads = OutputGrads(s, op, dy);
  (*dx)[0] = ConcatV2(s, std::vector<Input>(grads.begin(), grads.end()), op.attr<int64_t>("axis"));
  return Status::OK();
}

// out = x repeated m_i times along axis i, so out viewed as [m_0, d_0, m_1, d_1, ...]
// holds x at every (m_0, m_1, ...): dx = g in that view summed over the m axes.
Status TileGrad(const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
  const Output x = In(op, 0);
  const auto& multiples = op.attr<std::vector<int64_t>>("multiples");
  const int rank = static_cast<int>(multiples.size());
  if (rank == 0) {
    (*dx)[0] = dy[0];
    return Status::OK();
  }
  std::vector<int64_t> tile_axes;
  for (int i = 0; i < rank; ++i) tile_axes.push_back(2 * i);
  Output view;
  if (x.shape().IsFullyDefined()) {
    std::vector<int64_t> dims;
    for (int i = 0; i < rank; ++i) {
      dims.push_back(multiples[i]);
      dims.push_back(x.shape().dim(i));
    }
    view = Const(s, Tensor::FromVector(dims));
  } else {
    // [rank, 2] rows (m_i, d_i), flattened to [2 * rank].
    const Output m = Const(s, Tensor::FromVector(multiples));
    const Output pairs = Pack(s, {m, ShapeOf(s, x, DType::kInt64)}, 1);
    view = Reshape(s, pairs, Const(s, Tensor::FromVector<int64_t>({2 * rank})));
  }
  (*dx)[0] = Sum(s, Reshape(s, dy[0], view), tile_axes);
  return Status::OK();
}

// out = t where cond, else e: dt = g where cond, de = g elsewhere; cond gets none.
Status SelectGrad(const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
  const Output cond = In(op, 0);
  const Output zeros = ZerosLike(s, dy[0]);
  (*dx)[1] = Select(s, cond, dy[0], zeros);
  (*dx)[2] = Select(s, cond, zeros, dy[0]);
  return Status::OK();
}

std::vector<int64_t> IntList(const Node& op, const char* name) {
  return op.attr<std::vector<int64_t>>(name);
}

// dx = zeros of x's shape with g where the slice read.
Status StridedSliceGradRule(const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
  (*dx)[0] = StridedSliceGrad(s, In(op, 0), dy[0], IntList(op, "begin"), IntList(op, "end"),
                              IntList(op, "strides"), op.attr<int64_t>("begin_mask"),
                              op.attr<int64_t>("end_mask"), op.attr<int64_t>("shrink_axis_mask"));
  return Status::OK();
}

// StridedSliceGrad is linear in dy, its adjoint the slice itself: d dy = the slice
// of g; `like` gives only its shape, so it gets none.
Status StridedSliceGradGrad(const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
  (*dx)[1] = StridedSlice(s, dy[0], IntList(op, "begin"), IntList(op, "end"),
                          IntList(op, "strides"), op.attr<int64_t>("begin_mask"),
                          op.attr<int64_t>("end_mask"), op.attr<int64_t>("shrink_axis_mask"));
  return Status::OK();
}

// A mask is its own adjoint: dx = the band of g.
Status MatrixBandPartGrad(const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
  (*dx)[0] = MatrixBandPart(s, dy[0], op.attr<int64_t>("num_lower"), op.attr<int64_t>("num_upper"));
  return Status::OK();
}

}  // namespace

void AddShapeGradientRules(std::map<std::string, GradientFn>* table) {
  (*table)["ExpandDims"] = ReshapeBackGrad;
  (*table)["Squeeze"] = ReshapeBackGrad;
  (*table)["Pack"] = PackGrad;
  (*table)["Unpack"] = UnpackGrad;
  (*table)["Split"] = SplitGrad;
  (*table)["Tile"] = TileGrad;
  (*table)["Select"] = SelectGrad;
  (*table)["StridedSlice"] = StridedSliceGradRule;
  (*table)["StridedSliceGrad"] = StridedSliceGradGrad;
  (*table)["MatrixBandPart"] = MatrixBandPartGrad;
}

}  // namespace gradient_rules_internal
}  // namespace actorflow

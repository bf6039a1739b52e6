// The spatial geometry shared by the convolution and pooling kernels of the CPU and
// of the GPU (plain host C++: kernels/cuda includes it): from an NHWC input, a
// kh x kw window, [1, sh, sw, 1] strides and SAME/VALID padding to the output size
// and the padding before each axis (TensorFlow's rules, see graph/ops_nn_conv.cc).
// Also the parsing of the size inputs of the backward ops, and the registration of
// the kernels whose first input is such a size vector.
//
// Thread safety: plain values and pure functions.
#ifndef ACTORFLOW_KERNELS_CPU_WINDOW_GEOMETRY_H_
#define ACTORFLOW_KERNELS_CPU_WINDOW_GEOMETRY_H_

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "graph/shape.h"
#include "graph/status.h"
#include "graph/tensor.h"
#include "graph/types.h"
#include "kernels/kernel.h"

namespace actorflow {
namespace cpu {

struct WindowGeometry {
  int64_t batch = 0, in_h = 0, in_w = 0, channels = 0;
  int64_t k_h = 0, k_w = 0, stride_h = 1, stride_w = 1;
  int64_t out_h = 0, out_w = 0;
  int64_t pad_top = 0, pad_left = 0;  // the padding before row 0 / column 0
};

// Window attrs as the node holds them (validated by shape inference already).
struct WindowAttrs {
  int64_t k_h = 1, k_w = 1, stride_h = 1, stride_w = 1;
  bool same = false;
};

// Computes the geometry of `input_shape` [N,H,W,C]; InvalidArgument (without the node's
// name: the caller adds it) when the shape is not rank 4 or a VALID window does not fit.
inline StatusOr<WindowGeometry> ComputeWindowGeometry(const Shape& input_shape,
                                                      const WindowAttrs& a) {
  if (input_shape.rank() != 4) {
    return InvalidArgument("needs an NHWC input of rank 4, got " + input_shape.ToString());
  }
  WindowGeometry g;
  g.batch = input_shape.dim(0);
  g.in_h = input_shape.dim(1);
  g.in_w = input_shape.dim(2);
  g.channels = input_shape.dim(3);
  g.k_h = a.k_h;
  g.k_w = a.k_w;
  g.stride_h = a.stride_h;
  g.stride_w = a.stride_w;
  if (a.same) {
    // ceil(in / stride) without overflow for dims near the int64 limit.
    g.out_h = g.in_h / g.stride_h + (g.in_h % g.stride_h != 0 ? 1 : 0);
    g.out_w = g.in_w / g.stride_w + (g.in_w % g.stride_w != 0 ? 1 : 0);
    g.pad_top = std::max<int64_t>((g.out_h - 1) * g.stride_h + g.k_h - g.in_h, 0) / 2;
    g.pad_left = std::max<int64_t>((g.out_w - 1) * g.stride_w + g.k_w - g.in_w, 0) / 2;
  } else {
    if (g.k_h > g.in_h || g.k_w > g.in_w) {
      return InvalidArgument("the window " + std::to_string(g.k_h) + "x" +
                             std::to_string(g.k_w) + " is larger than the input " +
                             input_shape.ToString() + " with VALID padding");
    }
    g.out_h = (g.in_h - g.k_h) / g.stride_h + 1;
    g.out_w = (g.in_w - g.k_w) / g.stride_w + 1;
  }
  return g;
}

// The window of a Conv2D (or backprop) node with a kh x kw filter, and of a pooling
// node (its ksize), from the nodes' strides and padding attrs.
inline WindowAttrs ConvAttrsOf(const Node& node, int64_t k_h, int64_t k_w) {
  const auto& strides = node.attr<std::vector<int64_t>>("strides");
  WindowAttrs a;
  a.k_h = k_h;
  a.k_w = k_w;
  a.stride_h = strides[1];
  a.stride_w = strides[2];
  a.same = node.attr<std::string>("padding") == "SAME";
  return a;
}

inline WindowAttrs PoolAttrsOf(const Node& node) {
  const auto& ksize = node.attr<std::vector<int64_t>>("ksize");
  return ConvAttrsOf(node, ksize[1], ksize[2]);
}

// Validates input [N,H,W,C] against filter [KH,KW,C,O] (and out_backprop when given)
// and computes the convolution's geometry; InvalidArgument saying what disagrees.
inline StatusOr<WindowGeometry> ConvGeometry(const Node& node, const Shape& input,
                                             const Shape& filter, const Tensor* out_backprop) {
  if (filter.rank() != 4 || input.rank() != 4) {
    return InvalidArgument("needs input [N,H,W,C] and filter [KH,KW,C,O], got " +
                           input.ToString() + " and " + filter.ToString());
  }
  if (input.dim(3) != filter.dim(2)) {
    return InvalidArgument("input " + input.ToString() + " has " +
                           std::to_string(input.dim(3)) + " channels but filter " +
                           filter.ToString() + " expects " + std::to_string(filter.dim(2)));
  }
  AF_ASSIGN_OR_RETURN(WindowGeometry g, ComputeWindowGeometry(
                                            input, ConvAttrsOf(node, filter.dim(0), filter.dim(1))));
  const Shape expected{g.batch, g.out_h, g.out_w, filter.dim(3)};
  if (out_backprop != nullptr && out_backprop->shape() != expected) {
    return InvalidArgument("out_backprop " + out_backprop->shape().ToString() +
                           " is not the convolution's output shape " + expected.ToString());
  }
  return g;
}

// A 1x1 window at stride 1 (never padded): an image is its own patch matrix.
inline bool IsPointwise(const WindowGeometry& g) {
  return g.k_h == 1 && g.k_w == 1 && g.stride_h == 1 && g.stride_w == 1;
}

// The 4 non-negative dims held by a size input (int32 or int64, shape [4]).
inline StatusOr<Shape> SizesFromTensor(const Tensor& t, const std::string& what) {
  if (t.rank() != 1 || t.NumElements() != 4 ||
      (t.dtype() != DType::kInt32 && t.dtype() != DType::kInt64)) {
    return InvalidArgument(what + " must be an int32 or int64 vector of 4 elements, got " +
                           t.shape().ToString());
  }
  std::vector<int64_t> dims(4);
  for (int i = 0; i < 4; ++i) {
    dims[i] = t.dtype() == DType::kInt32 ? t.data<int32_t>()[i] : t.data<int64_t>()[i];
    if (dims[i] < 0) return InvalidArgument(what + " has a negative dim");
  }
  // Sizes come from a tensor's values: refuse ones no tensor can have.
  StatusOr<int64_t> elements = Shape(dims).CheckedNumElements();
  if (!elements.ok()) return elements.status().WithContext(what);
  return Shape(dims);
}

// Registers K<float> and K<double> on `device` (the CPU by default; the GPU kernels
// use it too) for an op whose first input is a size vector (Conv2DBackpropInput,
// AvgPoolGrad): the executor keys kernels by the first input's dtype (int32 or int64
// there), so the value dtype is taken from the node's output.
template <template <typename> class K>
struct SizesFirstKernelRegistrations {
  explicit SizesFirstKernelRegistrations(const char* op, const char* device = kDeviceCpu) {
    const std::string device_name = device;
    const KernelFactory factory = [op, device_name](const Node& node)
        -> StatusOr<std::unique_ptr<Kernel>> {
      switch (node.output_dtype(0)) {
        case DType::kFloat32:
          return std::unique_ptr<Kernel>(new K<float>(node));
        case DType::kFloat64:
          return std::unique_ptr<Kernel>(new K<double>(node));
        default:
          return InvalidArgument(node.Describe() + ": " + op + " has no " + device_name +
                                 " kernel for " + DTypeName(node.output_dtype(0)));
      }
    };
    for (DType sizes : {DType::kInt32, DType::kInt64}) {
      KernelRegistry::Global().Register(op, device, sizes, factory);
    }
  }
};

}  // namespace cpu
}  // namespace actorflow

#endif  // ACTORFLOW_KERNELS_CPU_WINDOW_GEOMETRY_H_

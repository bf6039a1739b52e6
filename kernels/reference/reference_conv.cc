// Reference convolution and pooling ops (NHWC input, HWIO filter): Conv2D,
// Conv2DBackpropInput, Conv2DBackpropFilter, MaxPool, AvgPool, MaxPoolGrad,
// AvgPoolGrad. Each is the defining sum written as plain loops over output pixels and
// window offsets in double: input row iy = oy * stride - pad_top + ky, skipped when it
// falls outside the image. The backward ops scatter each output's gradient along the
// same loops, which is their definition as adjoints of the forward ops.
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/reference/reference_util.h"

namespace actorflow {
namespace reference {
namespace {

const std::vector<DType> kFloating = {DType::kFloat32, DType::kFloat64};

struct Geometry {
  int64_t n, h, w, c;          // input
  int64_t kh, kw, sh, sw;      // window and strides
  int64_t oh, ow, top, left;   // output and padding before
};

// Output size and padding of one axis, TensorFlow's formulas.
Status AxisGeometry(const RefCall& call, int64_t in, int64_t k, int64_t s, bool same,
                    int64_t* out, int64_t* pad) {
  if (same) {
    *out = (in + s - 1) / s;
    const int64_t total = (*out - 1) * s + k - in;
    *pad = total > 0 ? total / 2 : 0;
    return Status::OK();
  }
  if (k > in) return InvalidArgument(call.op + ": window larger than the input (VALID)");
  *out = (in - k) / s + 1;
  *pad = 0;
  return Status::OK();
}

// `input` is the NHWC input shape; the window is kh x kw (from ksize or the filter).
StatusOr<Geometry> MakeGeometry(const RefCall& call, const Shape& input, int64_t kh,
                                int64_t kw) {
  if (input.rank() != 4) return InvalidArgument(call.op + ": input must have rank 4");
  AF_ASSIGN_OR_RETURN(auto strides, GetAttr<std::vector<int64_t>>(call, "strides"));
  AF_ASSIGN_OR_RETURN(auto padding, GetAttr<std::string>(call, "padding"));
  if (strides.size() != 4 || strides[1] < 1 || strides[2] < 1) {
    return InvalidArgument(call.op + ": bad strides");
  }
  if (padding != "SAME" && padding != "VALID") return InvalidArgument(call.op + ": bad padding");
  Geometry g{input.dim(0), input.dim(1), input.dim(2), input.dim(3), kh, kw, strides[1],
             strides[2], 0, 0, 0, 0};
  AF_RETURN_IF_ERROR(AxisGeometry(call, g.h, kh, g.sh, padding == "SAME", &g.oh, &g.top));
  AF_RETURN_IF_ERROR(AxisGeometry(call, g.w, kw, g.sw, padding == "SAME", &g.ow, &g.left));
  return g;
}

StatusOr<Geometry> PoolGeometry(const RefCall& call, const Shape& input) {
  AF_ASSIGN_OR_RETURN(auto ksize, GetAttr<std::vector<int64_t>>(call, "ksize"));
  if (ksize.size() != 4 || ksize[1] < 1 || ksize[2] < 1) {
    return InvalidArgument(call.op + ": bad ksize");
  }
  return MakeGeometry(call, input, ksize[1], ksize[2]);
}

int64_t At(const Geometry& g, int64_t n, int64_t y, int64_t x, int64_t c) {
  return ((n * g.h + y) * g.w + x) * g.c + c;
}

StatusOr<Shape> SizesOf(const RefCall& call, const Tensor& t) {
  if (t.rank() != 1 || t.NumElements() != 4 || IsFloating(t.dtype())) {
    return InvalidArgument(call.op + ": a size input must be an integer vector of 4");
  }
  std::vector<int64_t> dims(4);
  for (int i = 0; i < 4; ++i) dims[i] = GetInt(t, i);
  return Shape(dims);
}

// Calls visit(n, oy, ox, iy, ix, ky, kx) for every in-image position of every window.
template <typename F>
void ForEachTap(const Geometry& g, F visit) {
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t oy = 0; oy < g.oh; ++oy)
      for (int64_t ox = 0; ox < g.ow; ++ox)
        for (int64_t ky = 0; ky < g.kh; ++ky)
          for (int64_t kx = 0; kx < g.kw; ++kx) {
            const int64_t iy = oy * g.sh - g.top + ky;
            const int64_t ix = ox * g.sw - g.left + kx;
            if (iy >= 0 && iy < g.h && ix >= 0 && ix < g.w) visit(n, oy, ox, iy, ix, ky, kx);
          }
}

// Shared by Conv2D and its two gradients: every product x * w * dy of the convolution.
// The callback gets flat indices into input, filter and output.
template <typename F>
void ForEachProduct(const Geometry& g, int64_t out_c, F visit) {
  ForEachTap(g, [&](int64_t n, int64_t oy, int64_t ox, int64_t iy, int64_t ix, int64_t ky,
                    int64_t kx) {
    for (int64_t c = 0; c < g.c; ++c) {
      for (int64_t o = 0; o < out_c; ++o) {
        visit(At(g, n, iy, ix, c), ((ky * g.kw + kx) * g.c + c) * out_c + o,
              ((n * g.oh + oy) * g.ow + ox) * out_c + o);
      }
    }
  });
}

Status CheckFilter(const RefCall& call, const Shape& input, const Shape& filter) {
  if (filter.rank() != 4 || input.rank() != 4 || filter.dim(2) != input.dim(3)) {
    return InvalidArgument(call.op + ": input " + input.ToString() + " and filter " +
                           filter.ToString() + " do not match");
  }
  return Status::OK();
}

Status CheckOutput(const RefCall& call, const Geometry& g, int64_t out_c, const Tensor& dy) {
  if (dy.shape() != Shape{g.n, g.oh, g.ow, out_c}) {
    return InvalidArgument(call.op + ": out_backprop/grad has the wrong shape " +
                           dy.shape().ToString());
  }
  return Status::OK();
}

StatusOr<std::vector<Tensor>> Conv2D(const RefCall& call) {
  AF_RETURN_IF_ERROR(CheckNumInputs(call, 2));
  const Tensor& x = call.inputs[0];
  const Tensor& f = call.inputs[1];
  AF_RETURN_IF_ERROR(CheckDType(call, x, kFloating, "input"));
  AF_RETURN_IF_ERROR(CheckFilter(call, x.shape(), f.shape()));
  AF_ASSIGN_OR_RETURN(Geometry g, MakeGeometry(call, x.shape(), f.dim(0), f.dim(1)));
  const int64_t out_c = f.dim(3);
  std::vector<double> acc(g.n * g.oh * g.ow * out_c, 0.0);
  ForEachProduct(g, out_c, [&](int64_t xi, int64_t fi, int64_t yi) {
    acc[yi] += GetDouble(x, xi) * GetDouble(f, fi);
  });
  Tensor y(x.dtype(), Shape{g.n, g.oh, g.ow, out_c});
  for (size_t i = 0; i < acc.size(); ++i) SetDouble(&y, i, acc[i]);
  return std::vector<Tensor>{y};
}

StatusOr<std::vector<Tensor>> Conv2DBackpropInput(const RefCall& call) {
  AF_RETURN_IF_ERROR(CheckNumInputs(call, 3));
  AF_ASSIGN_OR_RETURN(Shape input, SizesOf(call, call.inputs[0]));
  const Tensor& f = call.inputs[1];
  const Tensor& dy = call.inputs[2];
  AF_RETURN_IF_ERROR(CheckDType(call, f, kFloating, "filter"));
  AF_RETURN_IF_ERROR(CheckFilter(call, input, f.shape()));
  AF_ASSIGN_OR_RETURN(Geometry g, MakeGeometry(call, input, f.dim(0), f.dim(1)));
  AF_RETURN_IF_ERROR(CheckOutput(call, g, f.dim(3), dy));
  std::vector<double> acc(input.num_elements(), 0.0);
  ForEachProduct(g, f.dim(3), [&](int64_t xi, int64_t fi, int64_t yi) {
    acc[xi] += GetDouble(f, fi) * GetDouble(dy, yi);
  });
  Tensor dx(f.dtype(), input);
  for (size_t i = 0; i < acc.size(); ++i) SetDouble(&dx, i, acc[i]);
  return std::vector<Tensor>{dx};
}

StatusOr<std::vector<Tensor>> Conv2DBackpropFilter(const RefCall& call) {
  AF_RETURN_IF_ERROR(CheckNumInputs(call, 3));
  const Tensor& x = call.inputs[0];
  AF_ASSIGN_OR_RETURN(Shape filter, SizesOf(call, call.inputs[1]));
  const Tensor& dy = call.inputs[2];
  AF_RETURN_IF_ERROR(CheckDType(call, x, kFloating, "input"));
  AF_RETURN_IF_ERROR(CheckFilter(call, x.shape(), filter));
  AF_ASSIGN_OR_RETURN(Geometry g, MakeGeometry(call, x.shape(), filter.dim(0), filter.dim(1)));
  AF_RETURN_IF_ERROR(CheckOutput(call, g, filter.dim(3), dy));
  std::vector<double> acc(filter.num_elements(), 0.0);
  ForEachProduct(g, filter.dim(3), [&](int64_t xi, int64_t fi, int64_t yi) {
    acc[fi] += GetDouble(x, xi) * GetDouble(dy, yi);
  });
  Tensor df(x.dtype(), filter);
  for (size_t i = 0; i < acc.size(); ++i) SetDouble(&df, i, acc[i]);
  return std::vector<Tensor>{df};
}

int64_t OutAt(const Geometry& g, int64_t n, int64_t oy, int64_t ox, int64_t c) {
  return ((n * g.oh + oy) * g.ow + ox) * g.c + c;
}

// For every output element: the flat input index of the first maximum of its window
// (row-major window order) and the number of in-image window elements.
struct PoolTaps {
  std::vector<int64_t> argmax;
  std::vector<int64_t> count;
};
PoolTaps ComputePoolTaps(const Geometry& g, const Tensor& x) {
  PoolTaps t{std::vector<int64_t>(g.n * g.oh * g.ow * g.c, -1),
             std::vector<int64_t>(g.n * g.oh * g.ow * g.c, 0)};
  ForEachTap(g, [&](int64_t n, int64_t oy, int64_t ox, int64_t iy, int64_t ix, int64_t,
                    int64_t) {
    for (int64_t c = 0; c < g.c; ++c) {
      const int64_t o = OutAt(g, n, oy, ox, c);
      const int64_t i = At(g, n, iy, ix, c);
      ++t.count[o];
      if (t.argmax[o] < 0 || GetDouble(x, i) > GetDouble(x, t.argmax[o])) t.argmax[o] = i;
    }
  });
  return t;
}

StatusOr<std::vector<Tensor>> Pool(const RefCall& call) {
  AF_RETURN_IF_ERROR(CheckNumInputs(call, 1));
  const Tensor& x = call.inputs[0];
  AF_RETURN_IF_ERROR(CheckDType(call, x, kFloating, "value"));
  AF_ASSIGN_OR_RETURN(Geometry g, PoolGeometry(call, x.shape()));
  Tensor y(x.dtype(), Shape{g.n, g.oh, g.ow, g.c});
  if (call.op == "MaxPool") {
    const PoolTaps taps = ComputePoolTaps(g, x);
    for (size_t o = 0; o < taps.argmax.size(); ++o) {
      SetDouble(&y, o, GetDouble(x, taps.argmax[o]));
    }
    return std::vector<Tensor>{y};
  }
  std::vector<double> sum(y.NumElements(), 0.0);
  std::vector<int64_t> count(y.NumElements(), 0);
  ForEachTap(g, [&](int64_t n, int64_t oy, int64_t ox, int64_t iy, int64_t ix, int64_t,
                    int64_t) {
    for (int64_t c = 0; c < g.c; ++c) {
      sum[OutAt(g, n, oy, ox, c)] += GetDouble(x, At(g, n, iy, ix, c));
      ++count[OutAt(g, n, oy, ox, c)];
    }
  });
  for (size_t o = 0; o < sum.size(); ++o) SetDouble(&y, o, sum[o] / count[o]);
  return std::vector<Tensor>{y};
}

StatusOr<std::vector<Tensor>> MaxPoolGrad(const RefCall& call) {
  AF_RETURN_IF_ERROR(CheckNumInputs(call, 3));
  const Tensor& x = call.inputs[0];
  const Tensor& grad = call.inputs[2];
  AF_RETURN_IF_ERROR(CheckDType(call, x, kFloating, "orig_input"));
  AF_ASSIGN_OR_RETURN(Geometry g, PoolGeometry(call, x.shape()));
  AF_RETURN_IF_ERROR(CheckOutput(call, g, g.c, grad));
  const PoolTaps taps = ComputePoolTaps(g, x);
  std::vector<double> acc(x.NumElements(), 0.0);
  for (size_t o = 0; o < taps.argmax.size(); ++o) acc[taps.argmax[o]] += GetDouble(grad, o);
  Tensor dx(x.dtype(), x.shape());
  for (size_t i = 0; i < acc.size(); ++i) SetDouble(&dx, i, acc[i]);
  return std::vector<Tensor>{dx};
}

StatusOr<std::vector<Tensor>> AvgPoolGrad(const RefCall& call) {
  AF_RETURN_IF_ERROR(CheckNumInputs(call, 2));
  AF_ASSIGN_OR_RETURN(Shape input, SizesOf(call, call.inputs[0]));
  const Tensor& grad = call.inputs[1];
  AF_RETURN_IF_ERROR(CheckDType(call, grad, kFloating, "grad"));
  AF_ASSIGN_OR_RETURN(Geometry g, PoolGeometry(call, input));
  AF_RETURN_IF_ERROR(CheckOutput(call, g, g.c, grad));
  std::vector<int64_t> count(grad.NumElements(), 0);
  ForEachTap(g, [&](int64_t n, int64_t oy, int64_t ox, int64_t, int64_t, int64_t, int64_t) {
    for (int64_t c = 0; c < g.c; ++c) ++count[OutAt(g, n, oy, ox, c)];
  });
  std::vector<double> acc(input.num_elements(), 0.0);
  ForEachTap(g, [&](int64_t n, int64_t oy, int64_t ox, int64_t iy, int64_t ix, int64_t,
                    int64_t) {
    for (int64_t c = 0; c < g.c; ++c) {
      const int64_t o = OutAt(g, n, oy, ox, c);
      acc[At(g, n, iy, ix, c)] += GetDouble(grad, o) / count[o];
    }
  });
  Tensor dx(grad.dtype(), input);
  for (size_t i = 0; i < acc.size(); ++i) SetDouble(&dx, i, acc[i]);
  return std::vector<Tensor>{dx};
}

}  // namespace

void AddConvOps(RefTable* table) {
  (*table)["Conv2D"] = Conv2D;
  (*table)["Conv2DBackpropInput"] = Conv2DBackpropInput;
  (*table)["Conv2DBackpropFilter"] = Conv2DBackpropFilter;
  (*table)["MaxPool"] = Pool;
  (*table)["AvgPool"] = Pool;
  (*table)["MaxPoolGrad"] = MaxPoolGrad;
  (*table)["AvgPoolGrad"] = AvgPoolGrad;
}

}  // namespace reference
}  // namespace actorflow

// Reference kernels of the fused recurrent cells (graph/rnn_ops.h): LSTMBlockCell,
// LSTMBlockCellGrad, GRUBlockCell and GRUBlockCellGrad, element by element in double,
// with the matrix products as explicit sums over [x, h_prev] (no blocks, no BLAS).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/reference/reference_util.h"

namespace actorflow {
namespace reference {
namespace {

// A matrix input read as doubles.
struct Mat {
  const Tensor& t;
  double operator()(int64_t r, int64_t c) const { return GetDouble(t, r * t.dim(1) + c); }
};

double Sigmoid(double v) { return 1.0 / (1.0 + std::exp(-v)); }

// B, I and H from x [B, I] and h_prev [B, H]; InvalidArgument unless every input
// (named by `names`, in order) is a float of x's dtype and has the shape wanted[k]
// ("B,I", "IH,4H", ... as dims over B, I, H and I + H).
struct Dims {
  int64_t b = 0, i = 0, h = 0;
};

StatusOr<Dims> CheckCell(const RefCall& call, const std::vector<std::string>& names,
                         const std::vector<std::vector<std::string>>& wanted, int h_input) {
  AF_RETURN_IF_ERROR(CheckNumInputs(call, static_cast<int>(names.size())));
  const Tensor& x = call.inputs[0];
  const Tensor& h_prev = call.inputs[h_input];
  for (size_t k = 0; k < names.size(); ++k) {
    const DType dtype = call.inputs[k].dtype();
    if ((dtype != DType::kFloat32 && dtype != DType::kFloat64) || dtype != x.dtype()) {
      return InvalidArgument(call.op + ": " + names[k] + " is " + DTypeName(dtype) +
                             ": every input must be float32 or float64, as x");
    }
  }
  if (x.rank() != 2 || h_prev.rank() != 2) {
    return InvalidArgument(call.op + ": x " + x.shape().ToString() + " and h_prev " +
                           h_prev.shape().ToString() + " must be matrices");
  }
  const Dims d = {x.dim(0), x.dim(1), h_prev.dim(1)};
  for (size_t k = 0; k < names.size(); ++k) {
    std::vector<int64_t> dims;
    for (const std::string& w : wanted[k]) {
      if (w == "B") dims.push_back(d.b);
      if (w == "I") dims.push_back(d.i);
      if (w == "H") dims.push_back(d.h);
      if (w == "2H") dims.push_back(2 * d.h);
      if (w == "4H") dims.push_back(4 * d.h);
      if (w == "IH") dims.push_back(d.i + d.h);
    }
    if (call.inputs[k].shape() != Shape(dims)) {
      return InvalidArgument(call.op + ": " + names[k] + " has shape " +
                             call.inputs[k].shape().ToString() + ", not " +
                             Shape(dims).ToString());
    }
  }
  return d;
}

const std::vector<std::string> kLstmNames = {"x", "cs_prev", "h_prev", "w", "b"};
const std::vector<std::vector<std::string>> kLstmShapes = {
    {"B", "I"}, {"B", "H"}, {"B", "H"}, {"IH", "4H"}, {"4H"}};
const std::vector<std::string> kGruNames = {"x", "h_prev", "w_ru", "w_c", "b_ru", "b_c"};
const std::vector<std::vector<std::string>> kGruShapes = {
    {"B", "I"}, {"B", "H"}, {"IH", "2H"}, {"IH", "H"}, {"2H"}, {"H"}};

// names/shapes followed by [B, H] inputs named `states`.
void AddStates(const std::vector<std::string>& states, std::vector<std::string>* names,
               std::vector<std::vector<std::string>>* shapes) {
  for (const std::string& s : states) {
    names->push_back(s);
    shapes->push_back({"B", "H"});
  }
}

// The clip bound as the tensors hold it: a float32 cs clipped to float32(clip) is
// compared against that, not against the double.
double ClipIn(DType dtype, double clip) {
  return dtype == DType::kFloat32 ? static_cast<double>(static_cast<float>(clip)) : clip;
}

StatusOr<std::vector<Tensor>> LstmBlockCell(const RefCall& call) {
  AF_ASSIGN_OR_RETURN(const Dims d, CheckCell(call, kLstmNames, kLstmShapes, 2));
  AF_ASSIGN_OR_RETURN(const double forget_bias, GetAttr<double>(call, "forget_bias"));
  AF_ASSIGN_OR_RETURN(const double clip, GetAttr<double>(call, "cell_clip"));
  const Mat x{call.inputs[0]}, cs_prev{call.inputs[1]}, h_prev{call.inputs[2]},
      w{call.inputs[3]};
  const Tensor& bias = call.inputs[4];
  std::vector<Tensor> out;
  for (int k = 0; k < 7; ++k) out.emplace_back(call.inputs[0].dtype(), Shape{d.b, d.h});
  for (int64_t r = 0; r < d.b; ++r) {
    for (int64_t j = 0; j < d.h; ++j) {
      double z[4];
      for (int gate = 0; gate < 4; ++gate) {
        const int64_t col = gate * d.h + j;
        z[gate] = GetDouble(bias, col);
        for (int64_t k = 0; k < d.i; ++k) z[gate] += x(r, k) * w(k, col);
        for (int64_t k = 0; k < d.h; ++k) z[gate] += h_prev(r, k) * w(d.i + k, col);
      }
      const double i = Sigmoid(z[0]), ci = std::tanh(z[1]), f = Sigmoid(z[2] + forget_bias),
                   o = Sigmoid(z[3]);
      double cs = ci * i + cs_prev(r, j) * f;
      if (clip > 0) cs = std::min(std::max(cs, -clip), clip);
      const double co = std::tanh(cs);
      const double values[7] = {i, cs, f, o, ci, co, co * o};
      for (int k = 0; k < 7; ++k) SetDouble(&out[k], r * d.h + j, values[k]);
    }
  }
  return out;
}

StatusOr<std::vector<Tensor>> LstmBlockCellGrad(const RefCall& call) {
  std::vector<std::string> names = kLstmNames;
  std::vector<std::vector<std::string>> shapes = kLstmShapes;
  AddStates({"i", "cs", "f", "o", "ci", "co", "cs_grad", "h_grad"}, &names, &shapes);
  AF_ASSIGN_OR_RETURN(const Dims d, CheckCell(call, names, shapes, 2));
  AF_ASSIGN_OR_RETURN(const double attr_clip, GetAttr<double>(call, "cell_clip"));
  const DType dtype = call.inputs[0].dtype();
  const double clip = ClipIn(dtype, attr_clip);
  Tensor cs_prev_grad(dtype, Shape{d.b, d.h});
  Tensor dgates(dtype, Shape{d.b, 4 * d.h});
  for (int64_t r = 0; r < d.b; ++r) {
    for (int64_t j = 0; j < d.h; ++j) {
      auto at = [&](int k) { return GetDouble(call.inputs[k], r * d.h + j); };
      const double cs_prev = at(1), i = at(5), cs = at(6), f = at(7), o = at(8), ci = at(9),
                   co = at(10), cs_grad = at(11), h_grad = at(12);
      double dcs = cs_grad + h_grad * o * (1 - co * co);
      if (attr_clip > 0 && std::abs(cs) >= clip) dcs = 0;
      SetDouble(&cs_prev_grad, r * d.h + j, dcs * f);
      const double grads[4] = {dcs * ci * i * (1 - i), dcs * i * (1 - ci * ci),
                               dcs * cs_prev * f * (1 - f), h_grad * co * o * (1 - o)};
      for (int gate = 0; gate < 4; ++gate) {
        SetDouble(&dgates, r * 4 * d.h + gate * d.h + j, grads[gate]);
      }
    }
  }
  return std::vector<Tensor>{cs_prev_grad, dgates};
}

StatusOr<std::vector<Tensor>> GruBlockCell(const RefCall& call) {
  AF_ASSIGN_OR_RETURN(const Dims d, CheckCell(call, kGruNames, kGruShapes, 1));
  const Mat x{call.inputs[0]}, h_prev{call.inputs[1]}, w_ru{call.inputs[2]},
      w_c{call.inputs[3]};
  const Tensor &b_ru = call.inputs[4], &b_c = call.inputs[5];
  const DType dtype = call.inputs[0].dtype();
  Tensor r(dtype, Shape{d.b, d.h}), u(dtype, Shape{d.b, d.h}), c(dtype, Shape{d.b, d.h}),
      h(dtype, Shape{d.b, d.h});
  for (int64_t row = 0; row < d.b; ++row) {
    // The whole row of r first: c's sum reads every r * h_prev of the row.
    std::vector<double> rv(d.h), uv(d.h);
    for (int64_t j = 0; j < d.h; ++j) {
      double zr = GetDouble(b_ru, j), zu = GetDouble(b_ru, d.h + j);
      for (int64_t k = 0; k < d.i + d.h; ++k) {
        const double xh = k < d.i ? x(row, k) : h_prev(row, k - d.i);
        zr += xh * w_ru(k, j);
        zu += xh * w_ru(k, d.h + j);
      }
      rv[j] = Sigmoid(zr);
      uv[j] = Sigmoid(zu);
    }
    for (int64_t j = 0; j < d.h; ++j) {
      double zc = GetDouble(b_c, j);
      for (int64_t k = 0; k < d.i + d.h; ++k) {
        const double xrh = k < d.i ? x(row, k) : rv[k - d.i] * h_prev(row, k - d.i);
        zc += xrh * w_c(k, j);
      }
      const double cv = std::tanh(zc);
      const int64_t e = row * d.h + j;
      SetDouble(&r, e, rv[j]);
      SetDouble(&u, e, uv[j]);
      SetDouble(&c, e, cv);
      SetDouble(&h, e, uv[j] * h_prev(row, j) + (1 - uv[j]) * cv);
    }
  }
  return std::vector<Tensor>{r, u, c, h};
}

StatusOr<std::vector<Tensor>> GruBlockCellGrad(const RefCall& call) {
  std::vector<std::string> names = kGruNames;
  std::vector<std::vector<std::string>> shapes = kGruShapes;
  const bool gate_grads = call.inputs.size() == 13;
  AddStates({"r", "u", "c", "d_h"}, &names, &shapes);
  if (gate_grads) AddStates({"d_r", "d_u", "d_c"}, &names, &shapes);
  AF_ASSIGN_OR_RETURN(const Dims d, CheckCell(call, names, shapes, 1));
  const Mat h_prev{call.inputs[1]}, w_ru{call.inputs[2]}, w_c{call.inputs[3]},
      r{call.inputs[6]}, u{call.inputs[7]}, c{call.inputs[8]}, d_h{call.inputs[9]};
  auto gate_grad = [&](int k, int64_t row, int64_t j) {
    return gate_grads ? GetDouble(call.inputs[k], row * d.h + j) : 0.0;
  };
  const DType dtype = call.inputs[0].dtype();
  Tensor d_x(dtype, Shape{d.b, d.i}), d_h_prev(dtype, Shape{d.b, d.h}),
      d_c_bar(dtype, Shape{d.b, d.h}), d_ru(dtype, Shape{d.b, 2 * d.h});
  for (int64_t row = 0; row < d.b; ++row) {
    std::vector<double> dc_bar(d.h), dru(2 * d.h);
    for (int64_t j = 0; j < d.h; ++j) {
      const double dc = d_h(row, j) * (1 - u(row, j)) + gate_grad(12, row, j);
      dc_bar[j] = dc * (1 - c(row, j) * c(row, j));
      const double du = d_h(row, j) * (h_prev(row, j) - c(row, j)) + gate_grad(11, row, j);
      dru[d.h + j] = du * u(row, j) * (1 - u(row, j));
    }
    // d[x, r h_prev] = d_c_bar w_c^T.
    std::vector<double> dxrh(d.i + d.h, 0.0);
    for (int64_t k = 0; k < d.i + d.h; ++k) {
      for (int64_t j = 0; j < d.h; ++j) dxrh[k] += dc_bar[j] * w_c(k, j);
    }
    for (int64_t j = 0; j < d.h; ++j) {
      const double dr = dxrh[d.i + j] * h_prev(row, j) + gate_grad(10, row, j);
      dru[j] = dr * r(row, j) * (1 - r(row, j));
    }
    // d[x, h_prev] through [r, u] = d_r_bar_u_bar w_ru^T.
    std::vector<double> dxh(d.i + d.h, 0.0);
    for (int64_t k = 0; k < d.i + d.h; ++k) {
      for (int64_t j = 0; j < 2 * d.h; ++j) dxh[k] += dru[j] * w_ru(k, j);
    }
    for (int64_t k = 0; k < d.i; ++k) SetDouble(&d_x, row * d.i + k, dxrh[k] + dxh[k]);
    for (int64_t j = 0; j < d.h; ++j) {
      SetDouble(&d_h_prev, row * d.h + j,
                dxrh[d.i + j] * r(row, j) + d_h(row, j) * u(row, j) + dxh[d.i + j]);
      SetDouble(&d_c_bar, row * d.h + j, dc_bar[j]);
    }
    for (int64_t j = 0; j < 2 * d.h; ++j) SetDouble(&d_ru, row * 2 * d.h + j, dru[j]);
  }
  return std::vector<Tensor>{d_x, d_h_prev, d_c_bar, d_ru};
}

}  // namespace

void AddRnnOps(RefTable* table) {
  (*table)["LSTMBlockCell"] = LstmBlockCell;
  (*table)["LSTMBlockCellGrad"] = LstmBlockCellGrad;
  (*table)["GRUBlockCell"] = GruBlockCell;
  (*table)["GRUBlockCellGrad"] = GruBlockCellGrad;
}

}  // namespace reference
}  // namespace actorflow

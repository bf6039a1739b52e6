#include "kernels/cpu/rnn_shapes.h"

#include <climits>
#include <string>

namespace actorflow {
namespace cpu {
namespace {

// A dim of an input: factor * B, I or H, or I + H.
enum class Sym { kB, kI, kH, kIH };
struct Dim {
  Sym sym;
  int64_t factor = 1;
};
struct InputSpec {
  const char* name;
  std::vector<Dim> dims;
};

int64_t SizeOf(const CellDims& d, const Dim& dim) {
  switch (dim.sym) {
    case Sym::kB: return dim.factor * d.b;
    case Sym::kI: return dim.factor * d.i;
    case Sym::kH: return dim.factor * d.h;
    case Sym::kIH: return d.i + d.h;
  }
  return 0;
}

const Dim kB{Sym::kB};
const Dim kI{Sym::kI};
const Dim kH{Sym::kH};
const Dim kIH{Sym::kIH};
Dim H(int64_t factor) { return {Sym::kH, factor}; }

std::vector<InputSpec> WithStates(std::vector<InputSpec> specs,
                                  const std::vector<const char*>& names) {
  for (const char* name : names) specs.push_back({name, {kB, kH}});
  return specs;
}

const std::vector<InputSpec>& LstmInputs() {
  static const auto* specs = new std::vector<InputSpec>{
      {"x", {kB, kI}}, {"cs_prev", {kB, kH}}, {"h_prev", {kB, kH}},
      {"w", {kIH, H(4)}}, {"b", {H(4)}}};
  return *specs;
}

const std::vector<InputSpec>& LstmGradInputs() {
  static const auto* specs = new std::vector<InputSpec>(WithStates(
      LstmInputs(), {"i", "cs", "f", "o", "ci", "co", "cs_grad", "h_grad"}));
  return *specs;
}

const std::vector<InputSpec>& GruInputs() {
  static const auto* specs = new std::vector<InputSpec>{
      {"x", {kB, kI}},    {"h_prev", {kB, kH}}, {"w_ru", {kIH, H(2)}},
      {"w_c", {kIH, kH}}, {"b_ru", {H(2)}},     {"b_c", {kH}}};
  return *specs;
}

// Every input that GRUBlockCellGrad may have (the last three are optional).
const std::vector<InputSpec>& GruGradInputs() {
  static const auto* specs = new std::vector<InputSpec>(
      WithStates(GruInputs(), {"r", "u", "c", "d_h", "d_r", "d_u", "d_c"}));
  return *specs;
}

// The check of the file comment for inputs [0, count) against specs[0, count);
// h_input is h_prev's index.
StatusOr<CellDims> CheckAgainst(const std::vector<InputSpec>& specs, size_t count,
                                const std::vector<Shape>& inputs, int h_input) {
  if (inputs.size() < count) {  // the op's definition fixes the count: never for a graph
    return InvalidArgument("the cell takes " + std::to_string(count) + " inputs, got " +
                           std::to_string(inputs.size()));
  }
  const Shape& x = inputs[0];
  const Shape& h_prev = inputs[h_input];
  const std::string sources = "x (input 0) " + x.ToString() + " and h_prev (input " +
                              std::to_string(h_input) + ") " + h_prev.ToString();
  if (x.rank() != 2 || h_prev.rank() != 2) {
    return InvalidArgument(sources + " must be matrices [B, I] and [B, H]");
  }
  const CellDims dims{x.dim(0), x.dim(1), h_prev.dim(1)};
  for (int64_t d : {dims.b, dims.i + dims.h, 4 * dims.h}) {
    if (d > INT_MAX) {
      return InvalidArgument(sources + ": dim " + std::to_string(d) +
                             " exceeds the BLAS limit of " + std::to_string(INT_MAX));
    }
  }
  for (size_t k = 0; k < count; ++k) {
    std::vector<int64_t> want;
    for (const Dim& d : specs[k].dims) want.push_back(SizeOf(dims, d));
    const Shape& got = inputs[k];
    if (got != Shape(want)) {
      return InvalidArgument(std::string(specs[k].name) + " (input " + std::to_string(k) +
                             ") has shape " + got.ToString() + " but " + sources + " need " +
                             Shape(want).ToString());
    }
  }
  return dims;
}

}  // namespace

StatusOr<CellDims> CheckCellInputs(CellOp op, const std::vector<Shape>& inputs) {
  switch (op) {
    case CellOp::kLstm: return CheckAgainst(LstmInputs(), LstmInputs().size(), inputs, 2);
    case CellOp::kLstmGrad:
      return CheckAgainst(LstmGradInputs(), LstmGradInputs().size(), inputs, 2);
    case CellOp::kGru: return CheckAgainst(GruInputs(), GruInputs().size(), inputs, 1);
    case CellOp::kGruGrad:
      if (inputs.size() != 10 && inputs.size() != 13) {
        return InvalidArgument("GRUBlockCellGrad takes 10 or 13 inputs, got " +
                               std::to_string(inputs.size()));
      }
      return CheckAgainst(GruGradInputs(), inputs.size(), inputs, 1);
  }
  return InvalidArgument("unknown recurrent cell");
}

}  // namespace cpu
}  // namespace actorflow

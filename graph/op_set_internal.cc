// The helpers shared by the files that register the op set (see op_set_internal.h).
#include "graph/op_set_internal.h"

#include <cmath>
#include <cstdint>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "graph/checked_size.h"

namespace actorflow {
namespace op_set_internal {

// ---------------------------------------------------------------------------
// Attr declarations.

AttrDef Required(std::string name, AttrType type) {
  return AttrDef{std::move(name), type, std::nullopt, true};
}
// Absent from the node's attrs when not written.
AttrDef Optional(std::string name, AttrType type) {
  return AttrDef{std::move(name), type, std::nullopt, false};
}
AttrDef Default(std::string name, AttrType type, AttrValue value) {
  return AttrDef{std::move(name), type, std::move(value), false};
}

OpDef MakeOp(std::string name, int num_inputs, int num_outputs, std::vector<AttrDef> attrs,
             InferenceFn infer) {
  OpDef def;
  def.name = std::move(name);
  def.num_inputs = num_inputs;
  def.num_outputs = num_outputs;
  def.attrs = std::move(attrs);
  def.infer = std::move(infer);
  return def;
}

OpDef Stateful(OpDef def) {
  def.stateful = true;
  return def;
}

// ---------------------------------------------------------------------------
// Dtype, rank and attr checks.

Status CheckDType(const std::string& what, DType dtype, Allowed allowed) {
  bool ok = true;
  const char* expected = "";
  switch (allowed) {
    case Allowed::kAny: break;
    case Allowed::kNumeric:
      ok = dtype != DType::kBool;
      expected = "a numeric dtype (float32, float64, int32 or int64)";
      break;
    case Allowed::kFloating:
      ok = IsFloating(dtype);
      expected = "float32 or float64";
      break;
    case Allowed::kIndex:
      ok = IsInteger(dtype);
      expected = "int32 or int64";
      break;
  }
  if (ok) return Status::OK();
  return InvalidArgument(what + " has dtype " + DTypeName(dtype) + ", expected " + expected);
}

Status CheckInput(const InferenceContext& ctx, int i, Allowed allowed) {
  return CheckDType("input " + std::to_string(i), ctx.input_dtype(i), allowed);
}

// Every input has input 0's dtype.
Status CheckSameDTypes(const InferenceContext& ctx) {
  for (int i = 1; i < ctx.num_inputs(); ++i) {
    if (ctx.input_dtype(i) != ctx.input_dtype(0)) {
      return InvalidArgument("input " + std::to_string(i) + " has dtype " +
                             DTypeName(ctx.input_dtype(i)) + " but input 0 has dtype " +
                             DTypeName(ctx.input_dtype(0)) +
                             ": the inputs must have the same dtype (use Cast)");
    }
  }
  return Status::OK();
}

// Known rank must lie in [min_rank, max_rank] (max_rank < 0: no upper bound).
Status CheckEpsilon(const InferenceContext& ctx) {
  const double epsilon = ctx.attr<double>("epsilon");
  if (epsilon >= 0 && std::isfinite(epsilon)) return Status::OK();
  std::ostringstream s;
  s << "attr 'epsilon' must be a finite number >= 0, got " << epsilon;
  return InvalidArgument(s.str());
}

Status CheckRank(const std::string& what, const Shape& shape, int min_rank, int max_rank) {
  if (shape.unknown_rank()) return Status::OK();
  if (shape.rank() >= min_rank && (max_rank < 0 || shape.rank() <= max_rank)) {
    return Status::OK();
  }
  std::string expected = min_rank == max_rank ? "rank " + std::to_string(min_rank)
                                               : "rank >= " + std::to_string(min_rank);
  return InvalidArgument(what + " has shape " + shape.ToString() + ", expected " + expected);
}

Status CheckFullyDefinedAttr(const InferenceContext& ctx, const std::string& attr) {
  const Shape& shape = ctx.attr<Shape>(attr);
  if (shape.IsFullyDefined()) return Status::OK();
  return InvalidArgument("attr '" + attr + "' must be a fully defined shape, got " +
                         shape.ToString());
}

// "axis" of a reduction: an int, a list, or absent (every axis).
std::optional<std::vector<int64_t>> AxesAttr(const InferenceContext& ctx) {
  if (!ctx.has_attr("axis")) return std::nullopt;
  const AttrValue& v = ctx.attr_value("axis");
  if (v.Is<int64_t>()) return std::vector<int64_t>{v.Get<int64_t>()};
  return v.Get<std::vector<int64_t>>();
}

// ---------------------------------------------------------------------------
// Shapes written as strings.

StatusOr<Shape> ParseShapeString(const std::string& text) {
  if (text == "<unknown>") return Shape::UnknownRank();
  const auto bad = [&text] {
    return InvalidArgument("'" + text +
                           "' is not a shape: write \"[2,?]\", \"[]\" or \"<unknown>\"");
  };
  if (text.size() < 2 || text.front() != '[' || text.back() != ']') return bad();
  std::vector<int64_t> dims;
  const std::string body = text.substr(1, text.size() - 2);
  if (body.empty()) return Shape(dims);
  size_t start = 0;
  while (true) {
    const size_t comma = body.find(',', start);
    const std::string dim = body.substr(start, comma == std::string::npos ? std::string::npos
                                                                         : comma - start);
    if (dim == "?" || dim == "-1") {
      dims.push_back(Shape::kUnknownDim);
    } else {
      if (dim.empty() || dim.find_first_not_of("0123456789") != std::string::npos ||
          dim.size() > 18) {
        return bad();
      }
      dims.push_back(std::stoll(dim));
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  Shape shape(std::move(dims));
  Status representable = CheckRepresentableShape(shape, DType::kBool);  // elements only
  if (!representable.ok()) return representable.WithContext("'" + text + "'");
  return shape;
}

}  // namespace op_set_internal
}  // namespace actorflow

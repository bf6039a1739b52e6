// Reference shape ops: ExpandDims, Squeeze, Pack, Unpack, Split, Tile, OneHot,
// Select, StridedSlice, StridedSliceGrad and MatrixBandPart, element by element:
// each output multi-index is mapped to the input multi-index it reads. StridedSlice
// walks each axis's positions one by one (begin, begin + stride, ... while short of
// end) instead of computing sizes with a formula, as the CPU kernels do.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kernels/reference/reference_util.h"

namespace actorflow {
namespace reference {
namespace {

const std::vector<DType> kAll = {DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kInt64,
                                 DType::kBool};

std::string Str(int64_t v) { return std::to_string(v); }

// out[j] = x[map(j)] for every element of `shape`.
Tensor Gathered(const Tensor& x, const Shape& shape,
                const std::function<std::vector<int64_t>(const std::vector<int64_t>&)>& map) {
  Tensor out(x.dtype(), shape);
  ForEachIndex(shape, [&](const std::vector<int64_t>& j, int64_t flat) {
    CopyElement(x, Ravel(map(j), x.shape()), &out, flat);
  });
  return out;
}

std::vector<int64_t> Without(std::vector<int64_t> v, int at) {
  v.erase(v.begin() + at);
  return v;
}

std::vector<int64_t> With(std::vector<int64_t> v, int at, int64_t value) {
  v.insert(v.begin() + at, value);
  return v;
}

StatusOr<std::vector<Tensor>> ExpandDims(const RefCall& call) {
  AF_RETURN_IF_ERROR(CheckNumInputs(call, 1));
  const Tensor& x = call.inputs[0];
  AF_RETURN_IF_ERROR(CheckDType(call, x, kAll, "x"));
  AF_ASSIGN_OR_RETURN(int64_t axis_attr, GetAttr<int64_t>(call, "axis"));
  AF_ASSIGN_OR_RETURN(int axis, NormalizeAxis(call, axis_attr, x.rank() + 1));
  const Shape shape(With(x.shape().dims(), axis, 1));
  return std::vector<Tensor>{
      Gathered(x, shape, [&](const std::vector<int64_t>& j) { return Without(j, axis); })};
}

StatusOr<std::vector<Tensor>> Squeeze(const RefCall& call) {
  AF_RETURN_IF_ERROR(CheckNumInputs(call, 1));
  const Tensor& x = call.inputs[0];
  AF_RETURN_IF_ERROR(CheckDType(call, x, kAll, "x"));
  std::vector<int64_t> listed;
  if (HasAttr(call, "squeeze_dims")) {
    AF_ASSIGN_OR_RETURN(listed, GetAttr<std::vector<int64_t>>(call, "squeeze_dims"));
  }
  std::vector<bool> drop(x.rank(), false);
  for (int i = 0; i < x.rank(); ++i) drop[i] = listed.empty() && x.dim(i) == 1;
  for (int64_t d : listed) {
    AF_ASSIGN_OR_RETURN(int axis, NormalizeAxis(call, d, x.rank()));
    if (x.dim(axis) != 1) {
      return InvalidArgument("Squeeze: dimension " + Str(d) + " of " + x.shape().ToString() +
                             " has size " + Str(x.dim(axis)) + ", not 1");
    }
    drop[axis] = true;
  }
  std::vector<int64_t> dims;
  for (int i = 0; i < x.rank(); ++i) {
    if (!drop[i]) dims.push_back(x.dim(i));
  }
  // Same elements in the same order: only the shape changes.
  Tensor out(x.dtype(), Shape(dims));
  for (int64_t i = 0; i < x.NumElements(); ++i) CopyElement(x, i, &out, i);
  return std::vector<Tensor>{out};
}

StatusOr<std::vector<Tensor>> Pack(const RefCall& call) {
  AF_RETURN_IF_ERROR(CheckMinInputs(call, 1));
  const Tensor& first = call.inputs[0];
  for (size_t i = 0; i < call.inputs.size(); ++i) {
    AF_RETURN_IF_ERROR(CheckDType(call, call.inputs[i], {first.dtype()}, "values"));
    if (call.inputs[i].shape() != first.shape()) {
      return InvalidArgument("Pack: value " + Str(i) + " " + call.inputs[i].shape().ToString() +
                             " differs from value 0 " + first.shape().ToString());
    }
  }
  AF_RETURN_IF_ERROR(CheckDType(call, first, kAll, "values"));
  AF_ASSIGN_OR_RETURN(int64_t axis_attr, GetAttr<int64_t>(call, "axis"));
  AF_ASSIGN_OR_RETURN(int axis, NormalizeAxis(call, axis_attr, first.rank() + 1));
  const int64_t n = static_cast<int64_t>(call.inputs.size());
  Tensor out(first.dtype(), Shape(With(first.shape().dims(), axis, n)));
  ForEachIndex(out.shape(), [&](const std::vector<int64_t>& j, int64_t flat) {
    const Tensor& from = call.inputs[j[axis]];
    CopyElement(from, Ravel(Without(j, axis), from.shape()), &out, flat);
  });
  return std::vector<Tensor>{out};
}

// Part p of `parts` along axis: elements p * size .. (p + 1) * size - 1 there; Unpack
// (size 1) drops the axis.
StatusOr<std::vector<Tensor>> Parts(const RefCall& call, const std::string& count_attr,
                                    bool keep_axis) {
  AF_RETURN_IF_ERROR(CheckNumInputs(call, 1));
  const Tensor& x = call.inputs[0];
  AF_RETURN_IF_ERROR(CheckDType(call, x, kAll, "value"));
  AF_ASSIGN_OR_RETURN(int64_t parts, GetAttr<int64_t>(call, count_attr));
  AF_ASSIGN_OR_RETURN(int64_t axis_attr, GetAttr<int64_t>(call, "axis"));
  if (x.rank() < 1) return InvalidArgument(call.op + ": value must have rank >= 1");
  AF_ASSIGN_OR_RETURN(int axis, NormalizeAxis(call, axis_attr, x.rank()));
  const int64_t dim = x.dim(axis);
  if (keep_axis ? (parts < 1 || dim % parts != 0) : dim != parts) {
    return InvalidArgument(call.op + ": dimension " + Str(dim) + " of " + x.shape().ToString() +
                           " does not make " + Str(parts) + " parts");
  }
  const int64_t size = keep_axis ? dim / parts : 1;
  std::vector<int64_t> dims = x.shape().dims();
  dims[axis] = size;
  if (!keep_axis) dims.erase(dims.begin() + axis);
  std::vector<Tensor> out;
  for (int64_t p = 0; p < parts; ++p) {
    out.push_back(Gathered(x, Shape(dims), [&](const std::vector<int64_t>& j) {
      std::vector<int64_t> from = j;
      if (keep_axis) {
        from[axis] += p * size;
      } else {
        from.insert(from.begin() + axis, p);
      }
      return from;
    }));
  }
  return out;
}

StatusOr<std::vector<Tensor>> Tile(const RefCall& call) {
  AF_RETURN_IF_ERROR(CheckNumInputs(call, 1));
  const Tensor& x = call.inputs[0];
  AF_RETURN_IF_ERROR(CheckDType(call, x, kAll, "x"));
  AF_ASSIGN_OR_RETURN(std::vector<int64_t> multiples,
                      GetAttr<std::vector<int64_t>>(call, "multiples"));
  if (static_cast<int>(multiples.size()) != x.rank()) {
    return InvalidArgument("Tile: multiples needs one entry per axis");
  }
  std::vector<int64_t> dims = x.shape().dims();
  for (int i = 0; i < x.rank(); ++i) {
    if (multiples[i] < 0) return InvalidArgument("Tile: negative multiple");
    dims[i] *= multiples[i];
  }
  return std::vector<Tensor>{Gathered(x, Shape(dims), [&](const std::vector<int64_t>& j) {
    std::vector<int64_t> from = j;
    for (int i = 0; i < x.rank(); ++i) from[i] %= x.dim(i);
    return from;
  })};
}

StatusOr<std::vector<Tensor>> OneHot(const RefCall& call) {
  AF_RETURN_IF_ERROR(CheckNumInputs(call, 1));
  const Tensor& ids = call.inputs[0];
  AF_RETURN_IF_ERROR(CheckDType(call, ids, {DType::kInt32, DType::kInt64}, "indices"));
  AF_ASSIGN_OR_RETURN(int64_t depth, GetAttr<int64_t>(call, "depth"));
  AF_ASSIGN_OR_RETURN(int64_t axis_attr, GetAttr<int64_t>(call, "axis"));
  AF_ASSIGN_OR_RETURN(double on, GetAttr<double>(call, "on_value"));
  AF_ASSIGN_OR_RETURN(double off, GetAttr<double>(call, "off_value"));
  AF_ASSIGN_OR_RETURN(DType dtype, GetAttr<DType>(call, "T"));
  if (dtype != DType::kFloat32 && dtype != DType::kFloat64) {
    return Unimplemented("OneHot: T must be float32 or float64");
  }
  if (depth < 0) return InvalidArgument("OneHot: depth must be >= 0");
  if (axis_attr < -1 || axis_attr > ids.rank()) return InvalidArgument("OneHot: bad axis");
  const int axis = axis_attr == -1 ? ids.rank() : static_cast<int>(axis_attr);
  Tensor out(dtype, Shape(With(ids.shape().dims(), axis, depth)));
  ForEachIndex(out.shape(), [&](const std::vector<int64_t>& j, int64_t flat) {
    const int64_t id = GetInt(ids, Ravel(Without(j, axis), ids.shape()));
    SetDouble(&out, flat, id == j[axis] ? on : off);
  });
  return std::vector<Tensor>{out};
}

StatusOr<std::vector<Tensor>> Select(const RefCall& call) {
  AF_RETURN_IF_ERROR(CheckNumInputs(call, 3));
  const Tensor& cond = call.inputs[0];
  const Tensor& t = call.inputs[1];
  const Tensor& e = call.inputs[2];
  AF_RETURN_IF_ERROR(CheckDType(call, cond, {DType::kBool}, "cond"));
  AF_RETURN_IF_ERROR(CheckDType(call, t, kAll, "t"));
  AF_RETURN_IF_ERROR(CheckDType(call, e, {t.dtype()}, "e"));
  if (t.shape() != e.shape()) return InvalidArgument("Select: t and e differ in shape");
  const bool rows = cond.rank() == 1 && t.rank() >= 1 && cond.dim(0) == t.dim(0);
  if (cond.shape() != t.shape() && !rows) {
    return InvalidArgument("Select: cond " + cond.shape().ToString() + " fits neither t " +
                           t.shape().ToString() + " nor its rows");
  }
  Tensor out(t.dtype(), t.shape());
  ForEachIndex(t.shape(), [&](const std::vector<int64_t>& j, int64_t flat) {
    const int64_t c = cond.shape() == t.shape() ? flat : j[0];
    CopyElement(GetInt(cond, c) != 0 ? t : e, flat, &out, flat);
  });
  return std::vector<Tensor>{out};
}

// The positions StridedSlice reads along each axis of `shape` (the list for a shrunk
// axis holds its one index); *kept says which axes stay in the output.
StatusOr<std::vector<std::vector<int64_t>>> SlicePositions(const RefCall& call, const Shape& shape,
                                                           std::vector<bool>* kept) {
  AF_ASSIGN_OR_RETURN(auto begin, GetAttr<std::vector<int64_t>>(call, "begin"));
  AF_ASSIGN_OR_RETURN(auto end, GetAttr<std::vector<int64_t>>(call, "end"));
  AF_ASSIGN_OR_RETURN(auto strides, GetAttr<std::vector<int64_t>>(call, "strides"));
  AF_ASSIGN_OR_RETURN(int64_t begin_mask, GetAttr<int64_t>(call, "begin_mask"));
  AF_ASSIGN_OR_RETURN(int64_t end_mask, GetAttr<int64_t>(call, "end_mask"));
  AF_ASSIGN_OR_RETURN(int64_t shrink_mask, GetAttr<int64_t>(call, "shrink_axis_mask"));
  const size_t spec = begin.size();
  if (end.size() != spec || strides.size() != spec || spec > static_cast<size_t>(shape.rank())) {
    return InvalidArgument(call.op + ": begin, end and strides must have equal lengths <= rank");
  }
  std::vector<std::vector<int64_t>> positions(shape.rank());
  kept->assign(shape.rank(), true);
  for (int i = 0; i < shape.rank(); ++i) {
    const int64_t n = shape.dim(i);
    std::vector<int64_t>& at = positions[i];
    if (static_cast<size_t>(i) >= spec) {
      for (int64_t k = 0; k < n; ++k) at.push_back(k);
      continue;
    }
    const int64_t s = strides[i];
    if (s == 0) return InvalidArgument(call.op + ": stride " + Str(i) + " is 0");
    if ((shrink_mask >> i) & 1) {
      const int64_t k = begin[i] < 0 ? begin[i] + n : begin[i];
      if (k < 0 || k >= n) return InvalidArgument(call.op + ": shrunk index out of range");
      at.push_back(k);
      (*kept)[i] = false;
      continue;
    }
    // Negative bounds count from the end; then clamp into the walkable range.
    int64_t b = begin[i] < 0 ? begin[i] + n : begin[i];
    int64_t e = end[i] < 0 ? end[i] + n : end[i];
    if (s > 0) {
      b = (begin_mask >> i) & 1 ? 0 : std::min(std::max<int64_t>(b, 0), n);
      e = (end_mask >> i) & 1 ? n : std::min(std::max<int64_t>(e, 0), n);
      for (int64_t k = b; k < e; k += s) at.push_back(k);
    } else {
      b = (begin_mask >> i) & 1 ? n - 1 : std::min(std::max<int64_t>(b, -1), n - 1);
      e = (end_mask >> i) & 1 ? -1 : std::min(std::max<int64_t>(e, -1), n - 1);
      for (int64_t k = b; k > e; k += s) at.push_back(k);
    }
  }
  return positions;
}

// The input multi-index that output index j of the slice reads.
std::vector<int64_t> SliceSource(const std::vector<std::vector<int64_t>>& positions,
                                 const std::vector<bool>& kept, const std::vector<int64_t>& j) {
  std::vector<int64_t> from;
  size_t k = 0;
  for (size_t i = 0; i < positions.size(); ++i) {
    from.push_back(kept[i] ? positions[i][j[k++]] : positions[i][0]);
  }
  return from;
}

Shape SliceShape(const std::vector<std::vector<int64_t>>& positions,
                 const std::vector<bool>& kept) {
  std::vector<int64_t> dims;
  for (size_t i = 0; i < positions.size(); ++i) {
    if (kept[i]) dims.push_back(static_cast<int64_t>(positions[i].size()));
  }
  return Shape(dims);
}

StatusOr<std::vector<Tensor>> StridedSlice(const RefCall& call) {
  AF_RETURN_IF_ERROR(CheckNumInputs(call, 1));
  const Tensor& x = call.inputs[0];
  AF_RETURN_IF_ERROR(CheckDType(call, x, kAll, "x"));
  std::vector<bool> kept;
  AF_ASSIGN_OR_RETURN(auto positions, SlicePositions(call, x.shape(), &kept));
  return std::vector<Tensor>{
      Gathered(x, SliceShape(positions, kept),
               [&](const std::vector<int64_t>& j) { return SliceSource(positions, kept, j); })};
}

StatusOr<std::vector<Tensor>> StridedSliceGrad(const RefCall& call) {
  AF_RETURN_IF_ERROR(CheckNumInputs(call, 2));
  const Tensor& like = call.inputs[0];
  const Tensor& dy = call.inputs[1];
  AF_RETURN_IF_ERROR(CheckDType(call, like, kAll, "like"));
  AF_RETURN_IF_ERROR(CheckDType(call, dy, {like.dtype()}, "dy"));
  std::vector<bool> kept;
  AF_ASSIGN_OR_RETURN(auto positions, SlicePositions(call, like.shape(), &kept));
  if (dy.shape() != SliceShape(positions, kept)) {
    return InvalidArgument("StridedSliceGrad: dy is not the slice's shape");
  }
  Tensor out(like.dtype(), like.shape());
  for (int64_t i = 0; i < out.NumElements(); ++i) SetInt(&out, i, 0);
  ForEachIndex(dy.shape(), [&](const std::vector<int64_t>& j, int64_t flat) {
    CopyElement(dy, flat, &out, Ravel(SliceSource(positions, kept, j), like.shape()));
  });
  return std::vector<Tensor>{out};
}

StatusOr<std::vector<Tensor>> MatrixBandPart(const RefCall& call) {
  AF_RETURN_IF_ERROR(CheckNumInputs(call, 1));
  const Tensor& x = call.inputs[0];
  AF_RETURN_IF_ERROR(CheckDType(call, x, kAll, "x"));
  AF_ASSIGN_OR_RETURN(int64_t lower, GetAttr<int64_t>(call, "num_lower"));
  AF_ASSIGN_OR_RETURN(int64_t upper, GetAttr<int64_t>(call, "num_upper"));
  if (x.rank() < 2) return InvalidArgument("MatrixBandPart: input must have rank >= 2");
  Tensor out(x.dtype(), x.shape());
  const int r = x.rank();
  ForEachIndex(x.shape(), [&](const std::vector<int64_t>& j, int64_t flat) {
    const int64_t m = j[r - 2], n = j[r - 1];
    const bool in_band = (lower < 0 || m - n <= lower) && (upper < 0 || n - m <= upper);
    if (in_band) {
      CopyElement(x, flat, &out, flat);
    } else {
      SetInt(&out, flat, 0);
    }
  });
  return std::vector<Tensor>{out};
}

}  // namespace

void AddShapeOps(RefTable* table) {
  (*table)["ExpandDims"] = ExpandDims;
  (*table)["Squeeze"] = Squeeze;
  (*table)["Pack"] = Pack;
  (*table)["Unpack"] = [](const RefCall& call) { return Parts(call, "num", false); };
  (*table)["Split"] = [](const RefCall& call) { return Parts(call, "num_split", true); };
  (*table)["Tile"] = Tile;
  (*table)["OneHot"] = OneHot;
  (*table)["Select"] = Select;
  (*table)["StridedSlice"] = StridedSlice;
  (*table)["StridedSliceGrad"] = StridedSliceGrad;
  (*table)["MatrixBandPart"] = MatrixBandPart;
}

}  // namespace reference
}  // namespace actorflow

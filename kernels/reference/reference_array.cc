// Reference array ops: ops that move or create elements without arithmetic. Each
// computes, for every output multi-index, the input element it copies.
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/reference/reference_util.h"

namespace actorflow {
namespace reference {
namespace {

// x -> a copy of x.
StatusOr<std::vector<Tensor>> Identity(const RefCall& call) {
  AF_RETURN_IF_ERROR(CheckNumInputs(call, 1));
  return std::vector<Tensor>{call.inputs[0].DeepCopy()};
}

// x -> zeros (ZerosLike) or ones (OnesLike; true for bool) of x's dtype and shape.
StatusOr<std::vector<Tensor>> ConstantLike(const RefCall& call) {
  AF_RETURN_IF_ERROR(CheckNumInputs(call, 1));
  const Tensor& x = call.inputs[0];
  Tensor y(x.dtype(), x.shape());
  const int64_t value = call.op == "OnesLike" ? 1 : 0;
  for (int64_t i = 0; i < y.NumElements(); ++i) SetInt(&y, i, value);
  return std::vector<Tensor>{y};
}

// () -> attr `shape` filled with the scalar attr `value` (the output has its dtype).
StatusOr<std::vector<Tensor>> Fill(const RefCall& call) {
  AF_RETURN_IF_ERROR(CheckNumInputs(call, 0));
  AF_ASSIGN_OR_RETURN(Shape shape, GetAttr<Shape>(call, "shape"));
  AF_ASSIGN_OR_RETURN(Tensor value, GetAttr<Tensor>(call, "value"));
  if (!shape.IsFullyDefined()) {
    return InvalidArgument("Fill: shape " + shape.ToString() + " is not fully defined");
  }
  if (value.NumElements() != 1) {
    return InvalidArgument("Fill: value must be a scalar, got " + value.DebugString());
  }
  Tensor y(value.dtype(), shape);
  for (int64_t i = 0; i < y.NumElements(); ++i) CopyElement(value, 0, &y, i);
  return std::vector<Tensor>{y};
}

// x [d0..dn-1] -> [n] of dtype attr `out_type`: the dims.
StatusOr<std::vector<Tensor>> ShapeOp(const RefCall& call) {
  AF_RETURN_IF_ERROR(CheckNumInputs(call, 1));
  DType out_type = DType::kInt32;
  if (HasAttr(call, "out_type")) {
    AF_ASSIGN_OR_RETURN(out_type, GetAttr<DType>(call, "out_type"));
  }
  if (out_type != DType::kInt32 && out_type != DType::kInt64) {
    return InvalidArgument("Shape: out_type must be int32 or int64");
  }
  const Tensor& x = call.inputs[0];
  Tensor y(out_type, Shape{x.rank()});
  for (int i = 0; i < x.rank(); ++i) SetInt(&y, i, x.dim(i));
  return std::vector<Tensor>{y};
}

// x, shape [k] int32/int64 -> x's elements in row-major order with that shape; one
// entry may be -1 and takes what is left.
StatusOr<std::vector<Tensor>> Reshape(const RefCall& call) {
  AF_RETURN_IF_ERROR(CheckNumInputs(call, 2));
  const Tensor& x = call.inputs[0];
  const Tensor& shape = call.inputs[1];
  AF_RETURN_IF_ERROR(CheckDType(call, shape, {DType::kInt32, DType::kInt64}, "input shape"));
  if (shape.rank() != 1) {
    return InvalidArgument("Reshape: shape must be 1-D, got " + shape.DebugString());
  }
  std::vector<int64_t> dims;
  int unknown = -1;
  int64_t known = 1;
  for (int64_t i = 0; i < shape.NumElements(); ++i) {
    const int64_t d = GetInt(shape, i);
    if (d == -1) {
      if (unknown >= 0) return InvalidArgument("Reshape: more than one -1 in the shape");
      unknown = static_cast<int>(i);
    } else if (d < 0) {
      return InvalidArgument("Reshape: negative dimension " + std::to_string(d));
    } else {
      known *= d;
    }
    dims.push_back(d);
  }
  if (unknown >= 0) {
    if (known == 0 || x.NumElements() % known != 0) {
      return InvalidArgument("Reshape: cannot infer the -1 dimension for " +
                             std::to_string(x.NumElements()) + " elements");
    }
    dims[unknown] = x.NumElements() / known;
  } else if (known != x.NumElements()) {
    return InvalidArgument("Reshape: cannot reshape " + std::to_string(x.NumElements()) +
                           " elements to " + Shape(dims).ToString());
  }
  Tensor y(x.dtype(), Shape(dims));
  for (int64_t i = 0; i < y.NumElements(); ++i) CopyElement(x, i, &y, i);
  return std::vector<Tensor>{y};
}

// x [d0..dn-1] -> y with y.dim(i) = x.dim(perm[i]) and y[j] = x[k] where
// k[perm[i]] = j[i]. perm absent = reversed axes.
StatusOr<std::vector<Tensor>> Transpose(const RefCall& call) {
  AF_RETURN_IF_ERROR(CheckNumInputs(call, 1));
  const Tensor& x = call.inputs[0];
  const int rank = x.rank();
  std::vector<int64_t> perm;
  if (HasAttr(call, "perm")) {
    AF_ASSIGN_OR_RETURN(perm, GetAttr<std::vector<int64_t>>(call, "perm"));
  } else {
    for (int i = rank - 1; i >= 0; --i) perm.push_back(i);
  }
  if (static_cast<int>(perm.size()) != rank) {
    return InvalidArgument("Transpose: perm has " + std::to_string(perm.size()) +
                           " entries for rank " + std::to_string(rank));
  }
  std::vector<bool> seen(rank, false);
  for (int64_t p : perm) {
    if (p < 0 || p >= rank || seen[p]) {
      return InvalidArgument("Transpose: perm is not a permutation of 0..rank-1");
    }
    seen[p] = true;
  }
  std::vector<int64_t> out_dims(rank);
  for (int i = 0; i < rank; ++i) out_dims[i] = x.dim(static_cast<int>(perm[i]));
  Tensor y(x.dtype(), Shape(out_dims));
  ForEachIndex(y.shape(), [&](const std::vector<int64_t>& j, int64_t flat) {
    std::vector<int64_t> k(rank);
    for (int i = 0; i < rank; ++i) k[perm[i]] = j[i];
    CopyElement(x, Ravel(k, x.shape()), &y, flat);
  });
  return std::vector<Tensor>{y};
}

// x0, x1, ... (same dtype and rank; equal dims except `axis`) -> their concatenation
// along `axis`.
StatusOr<std::vector<Tensor>> ConcatV2(const RefCall& call) {
  AF_RETURN_IF_ERROR(CheckMinInputs(call, 1));
  AF_ASSIGN_OR_RETURN(int64_t axis_attr, GetAttr<int64_t>(call, "axis"));
  const Tensor& first = call.inputs[0];
  const int rank = first.rank();
  if (rank == 0) return InvalidArgument("ConcatV2: cannot concatenate scalars");
  AF_ASSIGN_OR_RETURN(int axis, NormalizeAxis(call, axis_attr, rank));
  std::vector<int64_t> out_dims = first.shape().dims();
  out_dims[axis] = 0;
  // offsets[t] = where input t starts along `axis` in the output.
  std::vector<int64_t> offsets;
  for (const Tensor& t : call.inputs) {
    if (t.dtype() != first.dtype() || t.rank() != rank) {
      return InvalidArgument("ConcatV2: inputs differ in dtype or rank");
    }
    for (int i = 0; i < rank; ++i) {
      if (i != axis && t.dim(i) != first.dim(i)) {
        return InvalidArgument("ConcatV2: dim " + std::to_string(i) + " differs: " +
                               first.shape().ToString() + " vs " + t.shape().ToString());
      }
    }
    offsets.push_back(out_dims[axis]);
    out_dims[axis] += t.dim(axis);
  }
  Tensor y(first.dtype(), Shape(out_dims));
  ForEachIndex(y.shape(), [&](const std::vector<int64_t>& j, int64_t flat) {
    // The last input whose offset is <= j[axis] and that is not empty along axis.
    size_t t = 0;
    for (size_t s = 0; s < offsets.size(); ++s) {
      if (offsets[s] <= j[axis] && call.inputs[s].dim(axis) > 0) t = s;
    }
    std::vector<int64_t> k(j);
    k[axis] -= offsets[t];
    CopyElement(call.inputs[t], Ravel(k, call.inputs[t].shape()), &y, flat);
  });
  return std::vector<Tensor>{y};
}

// x [d0..dn-1] -> x[begin[i] : begin[i] + size[i]] per dim; size -1 = to the end.
StatusOr<std::vector<Tensor>> Slice(const RefCall& call) {
  AF_RETURN_IF_ERROR(CheckNumInputs(call, 1));
  const Tensor& x = call.inputs[0];
  AF_ASSIGN_OR_RETURN(std::vector<int64_t> begin, GetAttr<std::vector<int64_t>>(call, "begin"));
  AF_ASSIGN_OR_RETURN(std::vector<int64_t> size, GetAttr<std::vector<int64_t>>(call, "size"));
  const int rank = x.rank();
  if (static_cast<int>(begin.size()) != rank || static_cast<int>(size.size()) != rank) {
    return InvalidArgument("Slice: begin and size must have one entry per dim of " +
                           x.shape().ToString());
  }
  std::vector<int64_t> out_dims(rank);
  for (int i = 0; i < rank; ++i) {
    const int64_t s = size[i] == -1 ? x.dim(i) - begin[i] : size[i];
    if (begin[i] < 0 || begin[i] > x.dim(i) || s < 0 || begin[i] + s > x.dim(i)) {
      return InvalidArgument("Slice: begin " + std::to_string(begin[i]) + " size " +
                             std::to_string(size[i]) + " is out of bounds for dim " +
                             std::to_string(i) + " of " + x.shape().ToString());
    }
    out_dims[i] = s;
  }
  Tensor y(x.dtype(), Shape(out_dims));
  ForEachIndex(y.shape(), [&](const std::vector<int64_t>& j, int64_t flat) {
    std::vector<int64_t> k(rank);
    for (int i = 0; i < rank; ++i) k[i] = begin[i] + j[i];
    CopyElement(x, Ravel(k, x.shape()), &y, flat);
  });
  return std::vector<Tensor>{y};
}

}  // namespace

void AddArrayOps(RefTable* table) {
  (*table)["Identity"] = Identity;
  (*table)["ZerosLike"] = ConstantLike;
  (*table)["OnesLike"] = ConstantLike;
  (*table)["Fill"] = Fill;
  (*table)["Shape"] = ShapeOp;
  (*table)["Reshape"] = Reshape;
  (*table)["Transpose"] = Transpose;
  (*table)["ConcatV2"] = ConcatV2;
  (*table)["Slice"] = Slice;
}

}  // namespace reference
}  // namespace actorflow

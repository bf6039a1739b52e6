#include "kernels/reference/reference_util.h"

#include <algorithm>

namespace actorflow {
namespace reference {

std::vector<int64_t> Strides(const Shape& shape) {
  std::vector<int64_t> strides(shape.rank(), 1);
  for (int i = shape.rank() - 2; i >= 0; --i) strides[i] = strides[i + 1] * shape.dim(i + 1);
  return strides;
}

std::vector<int64_t> Unravel(int64_t flat, const Shape& shape) {
  std::vector<int64_t> index(shape.rank(), 0);
  for (int i = shape.rank() - 1; i >= 0; --i) {
    index[i] = flat % shape.dim(i);
    flat /= shape.dim(i);
  }
  return index;
}

int64_t Ravel(const std::vector<int64_t>& index, const Shape& shape) {
  int64_t flat = 0;
  for (int i = 0; i < shape.rank(); ++i) flat = flat * shape.dim(i) + index[i];
  return flat;
}

void ForEachIndex(const Shape& shape,
                  const std::function<void(const std::vector<int64_t>&, int64_t)>& fn) {
  const int64_t n = shape.num_elements();
  for (int64_t flat = 0; flat < n; ++flat) fn(Unravel(flat, shape), flat);
}

StatusOr<Shape> BroadcastShape(const std::string& op, const Shape& a, const Shape& b) {
  const int rank = std::max(a.rank(), b.rank());
  std::vector<int64_t> dims(rank);
  for (int i = 0; i < rank; ++i) {
    // Position i counted from the end in both.
    int ai = a.rank() - rank + i;
    int bi = b.rank() - rank + i;
    int64_t da = ai >= 0 ? a.dim(ai) : 1;
    int64_t db = bi >= 0 ? b.dim(bi) : 1;
    if (da == db || db == 1) {
      dims[i] = da;
    } else if (da == 1) {
      dims[i] = db;
    } else {
      return InvalidArgument(op + ": shapes " + a.ToString() + " and " + b.ToString() +
                             " do not broadcast");
    }
  }
  return Shape(dims);
}

int64_t BroadcastSource(const std::vector<int64_t>& out_index, const Shape& in) {
  const int offset = static_cast<int>(out_index.size()) - in.rank();
  std::vector<int64_t> in_index(in.rank());
  for (int i = 0; i < in.rank(); ++i) {
    in_index[i] = in.dim(i) == 1 ? 0 : out_index[offset + i];
  }
  return Ravel(in_index, in);
}

double GetDouble(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::kFloat32: return static_cast<double>(t.data<float>()[i]);
    case DType::kFloat64: return t.data<double>()[i];
    case DType::kInt32: return static_cast<double>(t.data<int32_t>()[i]);
    case DType::kInt64: return static_cast<double>(t.data<int64_t>()[i]);
    case DType::kBool: return t.data<bool>()[i] ? 1.0 : 0.0;
  }
  return 0.0;
}

int64_t GetInt(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::kFloat32: return static_cast<int64_t>(t.data<float>()[i]);
    case DType::kFloat64: return static_cast<int64_t>(t.data<double>()[i]);
    case DType::kInt32: return t.data<int32_t>()[i];
    case DType::kInt64: return t.data<int64_t>()[i];
    case DType::kBool: return t.data<bool>()[i] ? 1 : 0;
  }
  return 0;
}

void SetDouble(Tensor* t, int64_t i, double v) {
  switch (t->dtype()) {
    case DType::kFloat32: t->data<float>()[i] = static_cast<float>(v); return;
    case DType::kFloat64: t->data<double>()[i] = v; return;
    case DType::kInt32: t->data<int32_t>()[i] = static_cast<int32_t>(static_cast<int64_t>(v)); return;
    case DType::kInt64: t->data<int64_t>()[i] = static_cast<int64_t>(v); return;
    case DType::kBool: t->data<bool>()[i] = v != 0.0; return;
  }
}

void SetInt(Tensor* t, int64_t i, int64_t v) {
  switch (t->dtype()) {
    case DType::kFloat32: t->data<float>()[i] = static_cast<float>(v); return;
    case DType::kFloat64: t->data<double>()[i] = static_cast<double>(v); return;
    case DType::kInt32:
      t->data<int32_t>()[i] = static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(v)));
      return;
    case DType::kInt64: t->data<int64_t>()[i] = v; return;
    case DType::kBool: t->data<bool>()[i] = v != 0; return;
  }
}

void CopyElement(const Tensor& src, int64_t src_i, Tensor* dst, int64_t dst_i) {
  if (IsFloating(src.dtype())) {
    SetDouble(dst, dst_i, GetDouble(src, src_i));
  } else {
    SetInt(dst, dst_i, GetInt(src, src_i));
  }
}

int64_t WrapAdd(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
int64_t WrapSub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
int64_t WrapMul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}

Status CheckNumInputs(const RefCall& call, int n) {
  if (static_cast<int>(call.inputs.size()) != n) {
    return InvalidArgument(call.op + ": expected " + std::to_string(n) + " input(s), got " +
                           std::to_string(call.inputs.size()));
  }
  return Status::OK();
}

Status CheckMinInputs(const RefCall& call, int n) {
  if (static_cast<int>(call.inputs.size()) < n) {
    return InvalidArgument(call.op + ": expected at least " + std::to_string(n) +
                           " input(s), got " + std::to_string(call.inputs.size()));
  }
  return Status::OK();
}

Status CheckDType(const RefCall& call, const Tensor& t, const std::vector<DType>& dtypes,
                  const std::string& what) {
  for (DType d : dtypes) {
    if (t.dtype() == d) return Status::OK();
  }
  return Unimplemented(call.op + ": " + what + " of dtype " + DTypeName(t.dtype()) +
                       " is not supported");
}

StatusOr<int> NormalizeAxis(const RefCall& call, int64_t axis, int rank) {
  if (axis < -rank || axis >= rank) {
    return InvalidArgument(call.op + ": axis " + std::to_string(axis) +
                           " is out of range for rank " + std::to_string(rank));
  }
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

bool HasAttr(const RefCall& call, const std::string& name) {
  return call.attrs.count(name) > 0;
}

}  // namespace reference
}  // namespace actorflow

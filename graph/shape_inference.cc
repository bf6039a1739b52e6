#include "graph/shape_inference.h"

#include <algorithm>
#include <string>

#include "graph/checked_size.h"

namespace actorflow {

namespace {

constexpr int64_t kUnknown = Shape::kUnknownDim;

bool Known(int64_t d) { return d >= 0; }

}  // namespace

std::string IntListToString(const std::vector<int64_t>& values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += ",";
    out += std::to_string(values[i]);
  }
  return out + "]";
}

StatusOr<Shape> BroadcastShapes(const Shape& x, const Shape& y) {
  if (x.unknown_rank() || y.unknown_rank()) return Shape::UnknownRank();
  const int rank = std::max(x.rank(), y.rank());
  std::vector<int64_t> out(rank);
  for (int i = 0; i < rank; ++i) {
    // Walk from the trailing dim; a missing leading dim behaves as 1.
    const int xi = x.rank() - 1 - i;
    const int yi = y.rank() - 1 - i;
    const int64_t a = xi >= 0 ? x.dim(xi) : 1;
    const int64_t b = yi >= 0 ? y.dim(yi) : 1;
    int64_t d;
    if (a == 1) {
      d = b;
    } else if (b == 1) {
      d = a;
    } else if (!Known(a)) {
      d = b;  // a is 1 or b: either way the result is b (unknown if b is)
    } else if (!Known(b)) {
      d = a;
    } else if (a == b) {
      d = a;
    } else {
      return InvalidArgument("incompatible shapes for broadcasting: " + x.ToString() + " and " +
                             y.ToString() + " (dimension " + std::to_string(a) + " vs " +
                             std::to_string(b) + ")");
    }
    out[rank - 1 - i] = d;
  }
  return Shape(std::move(out));
}

StatusOr<int> NormalizeAxis(int64_t axis, int rank) {
  if (axis < -rank || axis >= rank) {
    return InvalidArgument("axis " + std::to_string(axis) + " is out of range for rank " +
                           std::to_string(rank) + " (expected " + std::to_string(-rank) +
                           ".." + std::to_string(rank - 1) + ")");
  }
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

StatusOr<Shape> ReducedShape(const Shape& input,
                             const std::optional<std::vector<int64_t>>& axes, bool keep_dims) {
  if (input.unknown_rank()) {
    if (axes) {
      // Literal duplicates are wrong whatever the rank turns out to be.
      std::vector<int64_t> sorted = *axes;
      std::sort(sorted.begin(), sorted.end());
      if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
        return InvalidArgument("duplicate axis in " + IntListToString(*axes));
      }
      if (axes->empty()) return input;
    }
    if (!axes && !keep_dims) return Shape{};
    return Shape::UnknownRank();
  }
  const int rank = input.rank();
  std::vector<bool> reduced(rank, !axes.has_value());
  if (axes) {
    for (int64_t a : *axes) {
      AF_ASSIGN_OR_RETURN(int axis, NormalizeAxis(a, rank));
      if (reduced[axis]) {
        return InvalidArgument("duplicate axis " + std::to_string(a) + " in " +
                               IntListToString(*axes) + " for rank " + std::to_string(rank));
      }
      reduced[axis] = true;
    }
  }
  std::vector<int64_t> out;
  for (int i = 0; i < rank; ++i) {
    if (!reduced[i]) {
      out.push_back(input.dim(i));
    } else if (keep_dims) {
      out.push_back(1);
    }
  }
  return Shape(std::move(out));
}

StatusOr<Shape> MatMulShape(const Shape& a, const Shape& b, bool transpose_a,
                            bool transpose_b) {
  auto describe = [&]() {
    return "a is " + a.ToString() + (transpose_a ? " (transposed)" : "") + ", b is " +
           b.ToString() + (transpose_b ? " (transposed)" : "");
  };
  if ((!a.unknown_rank() && a.rank() != 2) || (!b.unknown_rank() && b.rank() != 2)) {
    return InvalidArgument("MatMul shape mismatch: both inputs must have rank 2; " + describe());
  }
  const int64_t a0 = a.unknown_rank() ? kUnknown : a.dim(0);
  const int64_t a1 = a.unknown_rank() ? kUnknown : a.dim(1);
  const int64_t b0 = b.unknown_rank() ? kUnknown : b.dim(0);
  const int64_t b1 = b.unknown_rank() ? kUnknown : b.dim(1);
  const int64_t m = transpose_a ? a1 : a0;
  const int64_t k_a = transpose_a ? a0 : a1;
  const int64_t k_b = transpose_b ? b1 : b0;
  const int64_t n = transpose_b ? b0 : b1;
  if (Known(k_a) && Known(k_b) && k_a != k_b) {
    return InvalidArgument("MatMul shape mismatch: inner dimensions " + std::to_string(k_a) +
                           " and " + std::to_string(k_b) + " differ; " + describe());
  }
  return Shape{m, n};
}

StatusOr<Shape> ReshapedShape(const Shape& input, const std::vector<int64_t>& requested) {
  int unknown_index = -1;
  int64_t known_product = 1;
  for (size_t i = 0; i < requested.size(); ++i) {
    const int64_t d = requested[i];
    if (d == -1) {
      if (unknown_index >= 0) {
        return InvalidArgument("requested shape " + IntListToString(requested) +
                               " has more than one -1");
      }
      unknown_index = static_cast<int>(i);
    } else if (d < -1) {
      return InvalidArgument("requested shape " + IntListToString(requested) +
                             " has a negative dimension " + std::to_string(d));
    } else if (!CheckedMul(known_product, d, &known_product)) {
      // Overflow must not wrap around to the input's count and pass the check below.
      bool has_zero = false;
      for (int64_t e : requested) has_zero = has_zero || e == 0;
      if (!has_zero) {
        return InvalidArgument("requested shape " + IntListToString(requested) +
                               " has more elements than an int64 can count");
      }
      known_product = 0;
      break;
    }
  }
  if (known_product == 0) {  // the dims after a 0 were not checked for -1s yet
    int unknowns = 0;
    for (size_t i = 0; i < requested.size(); ++i) {
      if (requested[i] < -1) {
        return InvalidArgument("requested shape " + IntListToString(requested) +
                               " has a negative dimension " + std::to_string(requested[i]));
      }
      if (requested[i] == -1 && unknowns++ == 0) unknown_index = static_cast<int>(i);
    }
    if (unknowns > 1) {
      return InvalidArgument("requested shape " + IntListToString(requested) +
                             " has more than one -1");
    }
  }
  Shape out(requested);
  const int64_t count = input.num_elements();  // -1 unless fully defined
  if (count < 0) return out;
  if (unknown_index < 0) {
    if (known_product != count) {
      return InvalidArgument("cannot reshape " + input.ToString() + " (" +
                             std::to_string(count) + " elements) to " +
                             IntListToString(requested) + " (" +
                             std::to_string(known_product) + " elements)");
    }
    return out;
  }
  if (known_product == 0) {
    if (count != 0) {
      return InvalidArgument("cannot reshape " + input.ToString() + " (" +
                             std::to_string(count) + " elements) to " +
                             IntListToString(requested) + " (0 elements)");
    }
    return out;  // the -1 of an empty tensor cannot be resolved
  }
  if (count % known_product != 0) {
    return InvalidArgument("cannot reshape " + input.ToString() + " (" +
                           std::to_string(count) + " elements) to " +
                           IntListToString(requested) + ": " + std::to_string(count) +
                           " is not a multiple of " + std::to_string(known_product));
  }
  out.set_dim(unknown_index, count / known_product);
  return out;
}

StatusOr<Shape> TransposedShape(const Shape& input,
                                const std::optional<std::vector<int64_t>>& perm) {
  if (!perm) {
    if (input.unknown_rank()) return input;
    std::vector<int64_t> dims = input.dims();
    std::reverse(dims.begin(), dims.end());
    return Shape(std::move(dims));
  }
  const int n = static_cast<int>(perm->size());
  if (!input.unknown_rank() && input.rank() != n) {
    return InvalidArgument("perm " + IntListToString(*perm) + " has " + std::to_string(n) +
                           " entries but the input " + input.ToString() + " has rank " +
                           std::to_string(input.rank()));
  }
  std::vector<bool> seen(n, false);
  std::vector<int64_t> out(n);
  for (int i = 0; i < n; ++i) {
    const int64_t p = (*perm)[i];
    if (p < 0 || p >= n || seen[p]) {
      return InvalidArgument("perm " + IntListToString(*perm) + " is not a permutation of 0.." +
                             std::to_string(n - 1));
    }
    seen[p] = true;
    out[i] = input.unknown_rank() ? kUnknown : input.dim(static_cast<int>(p));
  }
  return Shape(std::move(out));
}

StatusOr<Shape> ConcatShape(const std::vector<Shape>& inputs, int64_t axis) {
  const Shape* first_known = nullptr;
  for (const Shape& s : inputs) {
    if (!s.unknown_rank()) {
      first_known = &s;
      break;
    }
  }
  if (first_known == nullptr) return Shape::UnknownRank();
  const int rank = first_known->rank();
  if (rank == 0) return InvalidArgument("cannot concatenate scalars (rank 0)");
  AF_ASSIGN_OR_RETURN(int a, NormalizeAxis(axis, rank));
  std::vector<int64_t> out(rank, kUnknown);
  int64_t axis_sum = 0;  // -1 once an input's axis dim is unknown
  for (size_t k = 0; k < inputs.size(); ++k) {
    const Shape& s = inputs[k];
    if (s.unknown_rank()) {
      axis_sum = kUnknown;
      continue;
    }
    if (s.rank() != rank) {
      return InvalidArgument("input " + std::to_string(k) + " has shape " + s.ToString() +
                             " but input 0 of known rank has " + first_known->ToString() +
                             ": all inputs must have the same rank");
    }
    for (int i = 0; i < rank; ++i) {
      const int64_t d = s.dim(i);
      if (i == a) {
        if (axis_sum < 0 || !Known(d)) {
          axis_sum = kUnknown;
        } else if (!CheckedAdd(axis_sum, d, &axis_sum)) {
          return InvalidArgument("the inputs' dimensions " + std::to_string(a) +
                                 " add up to more than an int64 can count");
        }
      } else if (Known(d)) {
        if (Known(out[i]) && out[i] != d) {
          return InvalidArgument("input " + std::to_string(k) + " has shape " + s.ToString() +
                                 ", which differs from an earlier input in dimension " +
                                 std::to_string(i) + " (" + std::to_string(out[i]) + " vs " +
                                 std::to_string(d) + "); only axis " + std::to_string(a) +
                                 " may differ");
        }
        out[i] = d;
      }
    }
  }
  out[a] = axis_sum;
  return Shape(std::move(out));
}

StatusOr<Shape> SlicedShape(const Shape& input, const std::vector<int64_t>& begin,
                            const std::vector<int64_t>& size) {
  if (begin.size() != size.size()) {
    return InvalidArgument("begin " + IntListToString(begin) + " and size " +
                           IntListToString(size) + " have different lengths");
  }
  const int n = static_cast<int>(begin.size());
  if (!input.unknown_rank() && input.rank() != n) {
    return InvalidArgument("begin " + IntListToString(begin) + " has " + std::to_string(n) +
                           " entries but the input " + input.ToString() + " has rank " +
                           std::to_string(input.rank()));
  }
  std::vector<int64_t> out(n);
  for (int i = 0; i < n; ++i) {
    const int64_t b = begin[i];
    const int64_t s = size[i];
    if (b < 0 || s < -1) {
      return InvalidArgument("slice begin " + IntListToString(begin) + " size " +
                             IntListToString(size) + ": begin must be >= 0 and size >= -1");
    }
    const int64_t dim = input.unknown_rank() ? kUnknown : input.dim(i);
    if (!Known(dim)) {
      out[i] = s;  // -1 stays unknown
      continue;
    }
    // b <= dim is checked first, so that b + s cannot overflow past the check.
    if (b > dim || (s != -1 && s > dim - b)) {
      return InvalidArgument("slice begin " + IntListToString(begin) + " size " +
                             IntListToString(size) + " is out of bounds for " +
                             input.ToString() + " in dimension " + std::to_string(i));
    }
    out[i] = s == -1 ? dim - b : s;
  }
  return Shape(std::move(out));
}

}  // namespace actorflow

// CPU kernel of Transpose: out.dim(i) = x.dim(perm[i]).
//
// The permutation is first simplified: input dimensions of size 1 are dropped and
// input dimensions that stay neighbours in the output merge. An identity permutation
// then shares the input buffer. Otherwise, when the input's last (contiguous)
// dimension stays last the kernel copies contiguous rows; when it moves, the plane of
// the two output dimensions involved is transposed tile by tile through a small
// buffer, so that reads and writes both proceed in contiguous runs.
//
// Elements are moved as unsigned integers of the dtype's size, so one instantiation
// per element size serves every dtype.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/cpu/kernel_util.h"
#include "kernels/kernel.h"

namespace actorflow {
namespace cpu {
namespace {

// Calls fn(in_offset, out_offset) for every combination of the dimensions `dims`
// (sizes), with the given input/output element strides per dimension.
template <typename Fn>
void ForEachIndex(const std::vector<int64_t>& dims, const std::vector<int64_t>& in_strides,
                  const std::vector<int64_t>& out_strides, Fn&& fn) {
  const int rank = static_cast<int>(dims.size());
  std::vector<int64_t> index(rank, 0);
  int64_t in_offset = 0;
  int64_t out_offset = 0;
  while (true) {
    fn(in_offset, out_offset);
    int d = rank - 1;
    for (; d >= 0; --d) {
      in_offset += in_strides[d];
      out_offset += out_strides[d];
      if (++index[d] < dims[d]) break;
      in_offset -= in_strides[d] * dims[d];
      out_offset -= out_strides[d] * dims[d];
      index[d] = 0;
    }
    if (d < 0) return;
  }
}

// in: coalesced dims `in_dims` (row-major); out dimension k is input dimension
// perm[k]. Precondition: no dimension is 0 or 1, rank >= 2, perm is not the identity.
template <typename E>
void TransposeLoop(const E* in, const std::vector<int64_t>& in_dims,
                   const std::vector<int>& perm, E* out) {
  const int rank = static_cast<int>(in_dims.size());
  std::vector<int64_t> in_strides(rank);
  int64_t s = 1;
  for (int i = rank - 1; i >= 0; --i) {
    in_strides[i] = s;
    s *= in_dims[i];
  }
  std::vector<int64_t> out_dims(rank);
  std::vector<int64_t> out_strides(rank);
  std::vector<int64_t> src_strides(rank);  // input stride of each output dimension
  s = 1;
  for (int k = rank - 1; k >= 0; --k) {
    out_dims[k] = in_dims[perm[k]];
    src_strides[k] = in_strides[perm[k]];
    out_strides[k] = s;
    s *= out_dims[k];
  }
  const int last = rank - 1;
  if (perm[last] == last) {
    // Contiguous rows of the input's last dimension: copy row by row.
    const int64_t row = out_dims[last];
    std::vector<int64_t> dims(out_dims.begin(), out_dims.end() - 1);
    std::vector<int64_t> ins(src_strides.begin(), src_strides.end() - 1);
    std::vector<int64_t> outs(out_strides.begin(), out_strides.end() - 1);
    ForEachIndex(dims, ins, outs, [&](int64_t i, int64_t o) {
      std::memcpy(out + o, in + i, static_cast<size_t>(row) * sizeof(E));
    });
    return;
  }
  // The input's last dimension lands at output position q < last: tile the plane of
  // output dimensions (q, last); the rest is walked by an odometer.
  int q = 0;
  while (perm[q] != last) ++q;
  const int64_t rows = out_dims[q];   // read contiguously from the input
  const int64_t cols = out_dims[last];  // written contiguously to the output
  const int64_t row_out_stride = out_strides[q];
  const int64_t col_in_stride = src_strides[last];
  std::vector<int64_t> dims;
  std::vector<int64_t> ins;
  std::vector<int64_t> outs;
  for (int k = 0; k < last; ++k) {
    if (k == q) continue;
    dims.push_back(out_dims[k]);
    ins.push_back(src_strides[k]);
    outs.push_back(out_strides[k]);
  }
  // One tile: read kTile input runs (contiguous over i) into a buffer that stays in
  // L1, then write kTile output runs (contiguous over j). Going through the buffer
  // avoids touching kTile lines of both tensors at once, which with power-of-two row
  // lengths all map to the same cache set.
  constexpr int64_t kTile = 128 / sizeof(E);  // one run = 128 bytes = two cache lines
  auto plane = [&](int64_t in_base, int64_t out_base) {
    E buf[kTile * kTile];
    for (int64_t i0 = 0; i0 < rows; i0 += kTile) {
      const int64_t ni = i0 + kTile < rows ? kTile : rows - i0;
      for (int64_t j0 = 0; j0 < cols; j0 += kTile) {
        const int64_t nj = j0 + kTile < cols ? kTile : cols - j0;
        for (int64_t j = 0; j < nj; ++j) {
          const E* __restrict src = in + in_base + (j0 + j) * col_in_stride + i0;
          E* __restrict b = buf + j * kTile;
          for (int64_t i = 0; i < ni; ++i) b[i] = src[i];
        }
        for (int64_t i = 0; i < ni; ++i) {
          E* __restrict dst = out + out_base + (i0 + i) * row_out_stride + j0;
          const E* __restrict b = buf + i;
          for (int64_t j = 0; j < nj; ++j) dst[j] = b[j * kTile];
        }
      }
    }
  };
  if (dims.empty()) {
    plane(0, 0);
  } else {
    ForEachIndex(dims, ins, outs, plane);
  }
}

// Input: x [d0, ..., dn-1]. Output: [d_perm[0], ..., d_perm[n-1]], x's dtype.
template <typename T>
class TransposeKernel : public Kernel {
 public:
  explicit TransposeKernel(const Node& node) : Kernel(node) {
    auto it = node.attrs().find("perm");
    if (it != node.attrs().end() && it->second.Is<std::vector<int64_t>>()) {
      has_perm_ = true;
      perm_ = it->second.Get<std::vector<int64_t>>();
    }
  }

  void Compute(KernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const int rank = x.rank();
    std::vector<int> perm(rank);
    if (!has_perm_) {
      for (int i = 0; i < rank; ++i) perm[i] = rank - 1 - i;
    } else {
      bool valid = static_cast<int>(perm_.size()) == rank;
      std::vector<bool> seen(rank, false);
      for (int i = 0; valid && i < rank; ++i) {
        valid = perm_[i] >= 0 && perm_[i] < rank && !seen[perm_[i]];
        if (valid) {
          seen[perm_[i]] = true;
          perm[i] = static_cast<int>(perm_[i]);
        }
      }
      if (!valid) {
        ctx->Fail(Code::kInvalidArgument, "perm " + IntListToString(perm_) +
                                              " is not a permutation of the axes of " +
                                              x.shape().ToString());
        return;
      }
    }
    std::vector<int64_t> out_dims(rank);
    for (int i = 0; i < rank; ++i) out_dims[i] = x.dim(perm[i]);
    const Shape out_shape(out_dims);

    // Coalesce: keep input dims of size > 1, in output order, merging runs of
    // consecutive input dims.
    std::vector<int> kept_perm;  // input dims of size > 1, in output order
    for (int k = 0; k < rank; ++k) {
      if (x.dim(perm[k]) != 1) kept_perm.push_back(perm[k]);
    }
    std::vector<std::vector<int>> groups;  // each: consecutive input dims
    for (int d : kept_perm) {
      if (!groups.empty() && IsNextKept(x, groups.back().back(), d)) {
        groups.back().push_back(d);
      } else {
        groups.push_back({d});
      }
    }
    if (x.NumElements() == 0) {
      ctx->allocate_output(0, out_shape);
      return;
    }
    if (groups.size() <= 1) {  // same element order: share the buffer
      auto reshaped = x.Reshaped(out_shape);
      if (reshaped.ok()) {
        ctx->set_output(0, std::move(reshaped).value());
      } else {
        ctx->SetStatus(reshaped.status());
      }
      return;
    }
    // Groups are in output order; sorting them by input dim gives the coalesced input.
    std::vector<int> order(groups.size());
    for (size_t g = 0; g < groups.size(); ++g) order[g] = static_cast<int>(g);
    std::sort(order.begin(), order.end(),
              [&](int a, int b) { return groups[a].front() < groups[b].front(); });
    std::vector<int64_t> in_dims(groups.size());
    std::vector<int> cperm(groups.size());  // output position -> coalesced input dim
    for (size_t r = 0; r < order.size(); ++r) {
      int64_t size = 1;
      for (int d : groups[order[r]]) size *= x.dim(d);
      in_dims[r] = size;
      cperm[order[r]] = static_cast<int>(r);
    }

    Tensor& out = ctx->allocate_output(0, out_shape);
    switch (DTypeSize(x.dtype())) {
      case 1:
        TransposeLoop(static_cast<const uint8_t*>(x.raw_data()), in_dims, cperm,
                      static_cast<uint8_t*>(out.raw_data()));
        break;
      case 4:
        TransposeLoop(static_cast<const uint32_t*>(x.raw_data()), in_dims, cperm,
                      static_cast<uint32_t*>(out.raw_data()));
        break;
      default:
        TransposeLoop(static_cast<const uint64_t*>(x.raw_data()), in_dims, cperm,
                      static_cast<uint64_t*>(out.raw_data()));
        break;
    }
  }

 private:
  // True when every input dim strictly between a and b has size 1 (and a < b).
  static bool IsNextKept(const Tensor& x, int a, int b) {
    if (b <= a) return false;
    for (int d = a + 1; d < b; ++d) {
      if (x.dim(d) != 1) return false;
    }
    return true;
  }

  bool has_perm_ = false;
  std::vector<int64_t> perm_;
};

const CpuKernelRegistrations<TransposeKernel, float, double, int32_t, int64_t, bool>
    reg_transpose("Transpose");

}  // namespace
}  // namespace cpu
}  // namespace actorflow

// CPU kernels of PackMatMulOperand and PackedMatMul (graph/math_ops.h) on the packed
// GEMM of kernels/cpu/packed_gemm.h. float32 only.
#include <climits>
#include <cstdint>
#include <string>

#include "kernels/cpu/kernel_util.h"
#include "kernels/cpu/packed_gemm.h"
#include "kernels/kernel.h"

namespace actorflow {
namespace cpu {
namespace {

// Input: b [K, N] ([N, K] with transpose). Output: [ceil(N / 32), K, 32].
template <typename T>
class PackMatMulOperandKernel : public Kernel {
 public:
  explicit PackMatMulOperandKernel(const Node& node)
      : Kernel(node), transpose_(node.attr<bool>("transpose")) {}

  void Compute(KernelContext* ctx) override {
    const Tensor& b = ctx->input(0);
    if (b.rank() != 2) {
      ctx->Fail(Code::kInvalidArgument,
                "PackMatMulOperand needs a rank-2 b, got " + b.shape().ToString());
      return;
    }
    const int64_t k = transpose_ ? b.dim(1) : b.dim(0);
    const int64_t n = transpose_ ? b.dim(0) : b.dim(1);
    // Every element is written: the panels' columns past N are zeroed.
    Tensor* packed = AllocateCheckedOutput(
        ctx, 0, Shape{PackedPanels(n), k, kPackedPanelColumns}, /*overwrite=*/true);
    if (packed == nullptr || packed->NumElements() == 0) return;
    PackRightOperand(b.data<float>(), k, n, transpose_, packed->data<float>());
  }

 private:
  const bool transpose_;
};

// Inputs: a [M, K], packed [ceil(n / 32), K, 32]. Output: [M, n].
template <typename T>
class PackedMatMulKernel : public Kernel {
 public:
  explicit PackedMatMulKernel(const Node& node)
      : Kernel(node), n_(node.attr<int64_t>("n")) {}

  void Compute(KernelContext* ctx) override {
    const Tensor& a = ctx->input(0);
    const Tensor& packed = ctx->input(1);
    if (a.rank() != 2 || packed.rank() != 3 || packed.dim(0) != PackedPanels(n_) ||
        packed.dim(2) != kPackedPanelColumns || packed.dim(1) != a.dim(1)) {
      ctx->Fail(Code::kInvalidArgument,
                "PackedMatMul needs a [M, K] and the packed operand of " + std::to_string(n_) +
                    " columns [" + std::to_string(PackedPanels(n_)) +
                    ", K, 32], got a " + a.shape().ToString() + " and packed " +
                    packed.shape().ToString());
      return;
    }
    Tensor* c = AllocateCheckedOutput(ctx, 0, Shape{a.dim(0), n_}, /*overwrite=*/true);
    if (c == nullptr) return;
    PackedGemm(a.data<float>(), a.dim(0), a.dim(1), a.dim(1), packed.data<float>(), n_,
               c->data<float>());
  }

 private:
  const int64_t n_;
};

const CpuKernelRegistrations<PackMatMulOperandKernel, float> reg_pack_matmul_operand(
    "PackMatMulOperand");
const CpuKernelRegistrations<PackedMatMulKernel, float> reg_packed_matmul("PackedMatMul");

}  // namespace
}  // namespace cpu
}  // namespace actorflow

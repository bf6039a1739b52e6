// Row-major GEMM through CBLAS, the form the CPU kernels' products take.
#ifndef ACTORFLOW_KERNELS_CPU_ROW_MAJOR_GEMM_H_
#define ACTORFLOW_KERNELS_CPU_ROW_MAJOR_GEMM_H_

#include <cblas.h>

namespace actorflow {
namespace cpu {

// Row-major C[M,N] = op(A) op(B) with beta = 0; lda/ldb are the stored row lengths.
inline void Gemm(bool ta, bool tb, int m, int n, int k, const float* a, int lda, const float* b,
                 int ldb, float* c) {
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n,
              k, 1.0f, a, lda, b, ldb, 0.0f, c, n);
}
inline void Gemm(bool ta, bool tb, int m, int n, int k, const double* a, int lda, const double* b,
                 int ldb, double* c) {
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n,
              k, 1.0, a, lda, b, ldb, 0.0, c, n);
}

// Row-major C[M,N] = op(A) op(B) + beta C.
inline void Gemm(bool ta, bool tb, int m, int n, int k, const float* a, int lda, const float* b,
                 int ldb, float beta, float* c) {
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n,
              k, 1.0f, a, lda, b, ldb, beta, c, n);
}
inline void Gemm(bool ta, bool tb, int m, int n, int k, const double* a, int lda, const double* b,
                 int ldb, double beta, double* c) {
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n,
              k, 1.0, a, lda, b, ldb, beta, c, n);
}

}  // namespace cpu
}  // namespace actorflow

#endif  // ACTORFLOW_KERNELS_CPU_ROW_MAJOR_GEMM_H_

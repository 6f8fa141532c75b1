// Helpers of the linalg family: the GEMM kernels (OpenBLAS or Eigen for float and double, a plain loop for
// the other types) and the numpy matmul shape rules shared by MatMul and MatMulInteger.
#pragma once

#include <cstdint>
#include <type_traits>
#include <vector>

#include "refeval/tensor.h"

namespace refeval::ops {

// c (M x N, row-major) = op(a) * op(b), or c += op(a) * op(b) when `accumulate`. op(a) is
// M x K, op(b) is K x N; a transposed operand is stored K x M (resp. N x K). float and double
// go through OpenBLAS (gemm_kernels.cc).
void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float* a, const float* b, float* c,
          bool accumulate);
void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const double* a, const double* b, double* c,
          bool accumulate);

// c (M x N) = a (M x K) b (K x N), or c += a b, on the small-M AVX-512 kernel
// (gemm_small_m.cc); false, doing nothing, when the CPU or the shape does not suit it.
bool gemm_small_m(int64_t M, int64_t N, int64_t K, const float* a, const float* b, float* c, bool accumulate);

// The same contract on CPUs with AVX2 and FMA but without AVX-512, every element one in-order
// chain of fused multiply-adds (gemm_in_order_avx2.cc: OpenBLAS's kernels for these CPUs are not
// position-invariant); false, doing nothing, on other CPUs.
bool gemm_in_order_avx2(int64_t M, int64_t N, int64_t K, const float* a, const float* b, float* c, bool accumulate);

// Number of calls that reached the OpenBLAS / Eigen kernels, so a test can tell the fast path ran.
uint64_t blas_gemm_calls();

// The same contract for integer types, with two's-complement wrap-around (as numpy does).
template <class T>
void gemm_loop(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const T* a, const T* b, T* c,
               bool accumulate) {
  using W = std::conditional_t<std::is_signed_v<T>, std::make_unsigned_t<T>, T>;
  using Acc = std::conditional_t<(sizeof(W) < sizeof(unsigned)), unsigned, W>;
  if (!accumulate)
    for (int64_t i = 0; i < M * N; ++i) c[i] = T(0);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t k = 0; k < K; ++k) {
      const Acc av = Acc(W(trans_a ? a[k * M + i] : a[i * K + k]));
      if (av == 0) continue;
      T* row = c + i * N;
      for (int64_t j = 0; j < N; ++j) {
        const Acc bv = Acc(W(trans_b ? b[j * K + k] : b[k * N + j]));
        row[j] = T(W(Acc(W(row[j])) + av * bv));
      }
    }
}

// numpy matmul shapes: 1-D operands are promoted (and the added dimension removed from the
// result), batch dimensions broadcast. a_batch[i] / b_batch[i] index the matrix of each operand
// used by output matrix i.
struct MatMulShape {
  Shape out;
  int64_t M = 0, K = 0, N = 0;
  std::vector<int64_t> a_batch, b_batch;
  bool b_shared = false;  // every output matrix uses the same (single) b matrix
};
MatMulShape matmul_shape(const Shape& a, const Shape& b);

}  // namespace refeval::ops

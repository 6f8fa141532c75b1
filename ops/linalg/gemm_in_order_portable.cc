// The portable path's float product (refeval/isa.h: --isa generic, and CPUs without AVX2): each
// element of C is the chain fma(a[i][K-1], b[K-1][j], ... fma(a[i][0], b[0][j], c0)) in k order,
// exactly as the AVX2 and AVX-512 kernels compute it, so the three paths give the same bits and
// equal rows of A give equal rows of C (OpenBLAS's Haswell kernels sum an element by where it sits:
// light_squeezenet's 1000 equal channels came out unequal there). The j loop is left to the
// compiler to vectorise; without hardware FMA, std::fma is slow but still exact.
#include <algorithm>
#include <cmath>
#include <vector>

#include "linalg_common.h"
#include "refeval/threads.h"

namespace refeval::ops {

void gemm_in_order_portable(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float* a, const float* b, float* c, bool accumulate) {
  std::vector<float> bt;
  if (tb) {  // rows of B, contiguous
    bt.resize(size_t(K * N));
    for (int64_t n = 0; n < N; ++n)
      for (int64_t k = 0; k < K; ++k) bt[size_t(k * N + n)] = b[n * K + k];
    b = bt.data();
  }
  parallel_for(M, std::max<int64_t>(1, (int64_t(1) << 16) / std::max<int64_t>(1, N * K)), [&](int64_t first, int64_t last) {
    for (int64_t i = first; i < last; ++i) {
      float* row = c + i * N;
      if (!accumulate) std::fill(row, row + N, 0.f);
      for (int64_t k = 0; k < K; ++k) {
        const float aik = ta ? a[k * M + i] : a[i * K + k];
        const float* brow = b + k * N;
        for (int64_t j = 0; j < N; ++j) row[j] = std::fma(aik, brow[j], row[j]);
      }
    }
  });
}

}  // namespace refeval::ops

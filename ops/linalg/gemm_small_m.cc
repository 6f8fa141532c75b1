// The float GEMM of transformer inference on few tokens, C (M x N) = A (M x K) B (K x N) with M
// small and B a large weight (GPT-2 small at 32 tokens: 32 x 768 x 50257 for the LM head).
// OpenBLAS packs B on every call, which costs about as much as computing with it at such M: it
// reaches 55-75 GFLOP/s here against ONNX Runtime's 90 with weights packed once at load, and
// packing once would double the weights' memory. This kernel reads B where it lies instead,
// 48 columns at a time, holds an 8 x 48 tile of C in 24 AVX-512 registers (3 loads of B and 8
// broadcasts of A per 24 multiply-adds) and prefetches the next block of B while the first rows
// of C use this one. The LM head above took 19.1 ms with 4 x 64 tiles, 17.4 with 6 x 64, 16.2
// with these; a Llama-style decoder's prefill 68 -> 56 ms and decode step 21.2 -> 19.3.
//
// Every element of C is one chain of fused multiply-adds over k = 0 .. K-1 (starting from C
// when accumulating), whatever its row, column or thread: equal rows of A give equal rows of C,
// and the result does not depend on the thread count, which splits the blocks of 48 columns.
#include <algorithm>

#include "linalg_common.h"
#include "refeval/threads.h"
#include "tile_avx512.h"

namespace refeval::ops {
namespace {

using avx512::kTileRows;
using avx512::kTileVectors;
constexpr int64_t kBlockCols = 16 * kTileVectors;  // columns of B per block
constexpr int64_t kDepth = 256;                    // rows of B per pass over a block (48 KB)
constexpr int64_t kMaxA = int64_t(1) << 17;        // A's elements (512 KB): A and a block of B stay in L2

// Columns [n0, n0 + 48) (fewer in the last block) of C, every row, 256 values of k at a time:
// a tile goes on from the partial sums it stored, so each element stays one chain over k. B's
// block is read where it lies in B (rows N apart) or in `blocks` (rows 48 apart, one stream).
void column_block(int64_t M, int64_t N, int64_t K, const float* a, const float* b, const float* blocks, float* c,
                  bool accumulate, int64_t n0) {
  const int64_t width = std::min(kBlockCols, N - n0);
  const int vectors = int((width + 15) / 16);
  const int tail = int(width - 16 * (vectors - 1));
  const __mmask16 last = __mmask16((1u << tail) - 1);
  const float* block = blocks ? blocks + n0 * K : b + n0;
  const int64_t ldb = blocks ? kBlockCols : N;
  const float* next = n0 + kBlockCols >= N ? nullptr : blocks ? block + kBlockCols * K : block + kBlockCols;
  for (int64_t k0 = 0; k0 < K; k0 += kDepth) {
    const int64_t depth = std::min(kDepth, K - k0);
    for (int64_t m0 = 0; m0 < M; m0 += kTileRows) {
      const int rows = int(std::min<int64_t>(kTileRows, M - m0));
      avx512::tile_for(rows, vectors)(depth, a + m0 * K + k0, K, block + k0 * ldb, ldb, 16, c + m0 * N + n0, N, last,
                                      accumulate || k0 > 0, m0 == 0 && next ? next + k0 * ldb : nullptr);
    }
  }
}

}  // namespace

bool gemm_small_m_suits(int64_t M, int64_t N, int64_t K) {
  return in_order_avx512_suits() && M * K <= kMaxA && N >= kBlockCols;
}

bool gemm_small_m(int64_t M, int64_t N, int64_t K, const float* a, const float* b, float* c, bool accumulate,
                  const float* blocks) {
  if (!gemm_small_m_suits(M, N, K)) return false;
  parallel_for((N + kBlockCols - 1) / kBlockCols, 1, [&](int64_t first, int64_t last) {
    for (int64_t block = first; block < last; ++block) column_block(M, N, K, a, b, blocks, c, accumulate, block * kBlockCols);
  });
  return true;
}

AlignedVector<float> pack_small_m(bool trans_b, int64_t K, int64_t N, const float* b) {
  return pack_column_blocks(trans_b, K, N, b, kBlockCols);
}

}  // namespace refeval::ops

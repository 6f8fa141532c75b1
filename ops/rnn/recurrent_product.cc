// The recurrent projection of every step, out = h R^T (h: batch x K, R: N x K), on R packed once
// per run or, for an initializer, once per session (the input projection X W^T of every step at
// once runs on the same kernel with W packed alike: ops/linalg's gemm transposed W on every call,
// half the time of a small bidirectional LSTM). A GEMM library packs its operand on every call: at a batch of a few rows that packing
// costs more than the product (OpenBLAS: 250 us for 1 x 1024 x 256, ten times a matrix-vector
// product; Eigen: 119 us for 8 x 1024 x 256), and a cell makes one call per time step with the
// same R. So R is packed once, as ONNX Runtime does at load, into panels of R^T: panel p holds
// K rows of W = kVectors vectors of R's rows p W .. p W + W - 1 (zero past N). A tile of up to
// four rows of h and one panel keeps its sums in registers, adding h[b][k] x panel row k for
// k = 0 .. K-1 (GCC vector extensions: AVX-512 or AVX with -march=native, SSE pairs otherwise).
//
// Every element of out is that one chain over k = 0 .. K-1 in the same vector code (columns past
// N are computed and dropped): its value depends on neither its row, the batch size, its panel
// nor the thread count (threads split the panels).
#include "rnn_common.h"

#include <utility>

#include "refeval/threads.h"

namespace refeval::ops {
namespace {

// A vector of 64 bytes where the build targets AVX-512 (-march=native on such a CPU: twice the
// multiply-adds per instruction; an LSTM of batch 8, hidden 256 went from 1.48x ORT's kernel time
// to 1.03x), else 32. Each lane is the same chain either way: outputs are the same bits.
#ifdef __AVX512F__
constexpr int kVectorBytes = 64;
#else
constexpr int kVectorBytes = 32;
#endif
typedef float FloatVec __attribute__((vector_size(kVectorBytes)));
typedef double DoubleVec __attribute__((vector_size(kVectorBytes)));
template <class C> struct VecOf;
template <> struct VecOf<float> { using type = FloatVec; };
template <> struct VecOf<double> { using type = DoubleVec; };
template <class C>
using Vec = typename VecOf<C>::type;
template <class C>
constexpr int64_t kLanes = int64_t(sizeof(Vec<C>) / sizeof(C));
// A tile: 4 rows of h x 3 vectors (12 sums in registers, 3 loads and 4 broadcasts per 12
// multiply-adds): 80 GFLOP/s at 8 x 1024 x 256 here, against 50-75 for 4 x 2 and 6 x 2.
constexpr int64_t kVectors = 3;  // vectors per panel row
constexpr int kTileRows = 4;

template <class C>
Vec<C> load(const C* p) {
  Vec<C> v;
  __builtin_memcpy(&v, p, sizeof v);
  return v;
}

FloatVec broadcast(float x) { return x - FloatVec{}; }  // (a scalar operand is broadcast)
DoubleVec broadcast(double x) { return x - DoubleVec{}; }

// Rows [0, Rows) of h (row stride K) against one panel; writes columns [0, cols) of out.
template <class C, int Rows>
void tile(const C* h, int64_t K, const C* panel, C* out, int64_t ldo, int64_t cols) {
  constexpr int64_t L = kLanes<C>, V = kVectors;
  Vec<C> sum[Rows][V];
#pragma GCC unroll 8
  for (int b = 0; b < Rows; ++b)
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) sum[b][v] = Vec<C>{};
  for (int64_t k = 0; k < K; ++k) {
    Vec<C> p[V];
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) {
      p[v] = load(panel + (k * V + v) * L);
      // In a register: GCC would otherwise fold the load into every multiply-add, reading the
      // panel row once per row of h and running out of load slots.
      asm("" : "+x"(p[v]));
    }
#pragma GCC unroll 8
    for (int b = 0; b < Rows; ++b) {
      const Vec<C> x = broadcast(h[b * K + k]);
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v) sum[b][v] += x * p[v];
    }
  }
  for (int b = 0; b < Rows; ++b) {
    C row[V * L];
    __builtin_memcpy(row, sum[b], sizeof row);
    for (int64_t c = 0; c < cols; ++c) out[b * ldo + c] = row[c];
  }
}

template <class C>
using TileFn = void (*)(const C*, int64_t, const C*, C*, int64_t, int64_t);

template <class C, int... R>
TileFn<C> pick(int rows, std::integer_sequence<int, R...>) {
  TileFn<C> f = nullptr;
  ((rows == R + 1 ? (f = tile<C, R + 1>) : f), ...);
  return f;
}
template <class C>
TileFn<C> tile_for(int rows) { return pick<C>(rows, std::make_integer_sequence<int, kTileRows>{}); }

}  // namespace

template <class C>
PackedRecurrent<C>::PackedRecurrent(const C* R, int64_t N, int64_t K) : N_(N), K_(K) {
  constexpr int64_t W = kVectors * kLanes<C>;
  panels_ = (N + W - 1) / W;
  data_ = Tensor(dtype_of<C>, {panels_ * K * W});  // zero: the columns past N
  C* packed = data_.data<C>();
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k) packed[((n / W) * K + k) * W + n % W] = R[n * K + k];
}

template <class C>
void PackedRecurrent<C>::multiply(int64_t rows, const C* h, C* out) const {
  constexpr int64_t W = kVectors * kLanes<C>;
  // Panels in chunks of at least kGrainWork multiply-adds per thread: small cells stay on one.
  constexpr int64_t kGrainWork = int64_t(1) << 16;
  const int64_t grain = std::max<int64_t>(1, kGrainWork / std::max<int64_t>(rows * K_ * W, 1));
  parallel_for(panels_, grain, [&](int64_t first, int64_t last) {
    for (int64_t p = first; p < last; ++p) {
      const C* panel = data_.data<C>() + p * K_ * W;
      const int64_t n0 = p * W, cols = std::min(W, N_ - n0);
      for (int64_t b = 0; b < rows; b += kTileRows) {
        const C* hb = h + b * K_;
        C* ob = out + b * N_ + n0;
        tile_for<C>(int(std::min<int64_t>(rows - b, kTileRows)))(hb, K_, panel, ob, N_, cols);
      }
    }
  });
}

template class PackedRecurrent<float>;
template class PackedRecurrent<double>;

}  // namespace refeval::ops

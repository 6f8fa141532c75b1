// MatMulInteger (10): int32 matmul of (A - a_zero_point) and (B - b_zero_point), A and B int8 or
// uint8. A's zero point is a scalar or per row (1-D of M, or N-D [..., M, 1]); B's is a scalar or
// per column (1-D of N, or N-D [..., 1, N]). Products wrap in int32. With AVX2 the products run
// on int16 pairs (Int16Panels); otherwise gemm_loop.
#include <algorithm>
#include <cstring>
#include <optional>
#include <vector>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

#include <fmt/format.h>

#include "linalg_common.h"
#include "refeval/aligned.h"
#include "refeval/elementwise.h"
#include "refeval/registry.h"

namespace refeval::ops {
namespace {

using Int8s = TypeList<int8_t, uint8_t>;

// x - zero_point as int32, with the zero point broadcast to x's shape.
Tensor shifted(const Tensor& x, const Values& in, size_t zp_index, bool per_row) {
  Tensor zp = has_value(in, zp_index) ? input_tensor(in, zp_index)
                                      : visit<Int8s>(x.dtype(), [&]<class T>() { return Tensor::scalar<T>(T(0)); });
  if (zp.dtype() != x.dtype()) fail_runtime("a zero point must have its operand's element type");
  if (per_row && zp.rank() == 1 && zp.size() != 1) zp = zp.reshaped({zp.size(), 1});
  Tensor out = visit<Int8s>(x.dtype(), [&]<class T>() {
    return map_binary<T, T, int32_t>(x, zp, [](auto v, auto z) { return int32_t(v) - int32_t(z); });
  });
  if (out.shape() != x.shape())
    fail_runtime(fmt::format("zero point of shape {} does not fit the operand of shape {}", shape_to_string(zp.shape()),
                             shape_to_string(x.shape())));
  return out;
}

#if defined(__AVX2__)
// C (M x N, int32, wrapping) = A' B' for A' (M x K) and B' (K x N) holding values of
// [-255, 255] (operands minus zero points) as int16. B' is packed into panels of kCols columns
// (8, or 16 with AVX-512BW) with the rows of k and k + 1 interleaved, so that one vpmaddwd
// multiplies a broadcast pair (A'[m][k], A'[m][k+1]) by a panel row and adds the two products:
// 2 kCols multiply-adds in one instruction, exact (|sum| <= 2 * 255^2), then added in int32 with
// wrap-around. Integer sums do not depend on their order, so the result is exactly the
// element-by-element loop's.
class Int16Panels {
 public:
  // Columns per panel: one vector of int32 sums (AVX-512BW: 16, twice AVX2's 8 per instruction).
#if defined(__AVX512BW__)
  static constexpr int64_t kCols = 16, kRows = 4;
  using Vec = __m512i;
  static Vec load(const Vec* p) { return _mm512_loadu_si512(p); }
  static void store(int32_t* p, Vec v) { _mm512_storeu_si512(p, v); }
  static Vec broadcast(int32_t pair) { return _mm512_set1_epi32(pair); }
  static Vec multiply_add(Vec x, Vec w, Vec sum) { return _mm512_add_epi32(sum, _mm512_madd_epi16(x, w)); }
#else
  // Rows per tile: 3 x 3 sums, the panels' 3 vectors, a broadcast and vpmaddwd's product fit
  // AVX2's 16 registers (4 x 3 spilled sums to the stack every step). The asm keeps a panel
  // vector in its register: GCC would fold the load into each vpmaddwd that reads it, 3 loads
  // where 1 does. With both, and the unrolled loops below, 128 x 768 x 768 built for AVX2 went
  // from 1.74 to 0.81 ms on a Zen 5.
  static constexpr int64_t kCols = 8, kRows = 3;
  using Vec = __m256i;
  static Vec load(const Vec* p) {
    Vec v = _mm256_loadu_si256(p);
    asm("" : "+x"(v));
    return v;
  }
  static void store(int32_t* p, Vec v) { _mm256_storeu_si256(reinterpret_cast<Vec*>(p), v); }
  static Vec broadcast(int32_t pair) { return _mm256_set1_epi32(pair); }
  static Vec multiply_add(Vec x, Vec w, Vec sum) { return _mm256_add_epi32(sum, _mm256_madd_epi16(x, w)); }
#endif

  Int16Panels(const int32_t* b, int64_t K, int64_t N) : K2_((K + 1) / 2), N_(N), panels_((N + kCols - 1) / kCols) {
    data_.assign(size_t(panels_ * K2_ * 2 * kCols), 0);
    for (int64_t k = 0; k < K; ++k)
      for (int64_t n = 0; n < N; ++n)
        data_[size_t(((n / kCols) * K2_ + k / 2) * 2 * kCols + (n % kCols) * 2 + k % 2)] = int16_t(b[k * N + n]);
  }
  // M x N of C from the rows of A' (int16 pairs, K2 per row, zero-padded): tiles of up to kRows
  // rows x 3 panels, the sums in registers.
  void multiply(int64_t M, const int32_t* a_pairs, int32_t* c) const {
    for (int64_t p = 0; p < panels_; p += 3)
      for (int64_t m0 = 0; m0 < M; m0 += kRows) {
        const int rows = int(std::min<int64_t>(kRows, M - m0)), vectors = int(std::min<int64_t>(3, panels_ - p));
        kTiles[rows - 1][vectors - 1](*this, a_pairs + m0 * K2_, p, c + m0 * N_);
      }
  }
  int64_t pairs() const { return K2_; }

 private:
  // Rows [0, R) of A' against panels [p, p + V); writes their columns of C (row stride N).
  template <int R, int V>
  static void tile(const Int16Panels& b, const int32_t* a, int64_t p, int32_t* c) {
    const int64_t K2 = b.K2_;
    const Vec* panel = reinterpret_cast<const Vec*>(b.data_.data()) + p * K2;
    Vec sum[R][V];  // the loops over r and v unroll early so that sum lives in registers
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 3
      for (int v = 0; v < V; ++v) sum[r][v] = Vec{};
    for (int64_t k = 0; k < K2; ++k) {
      Vec w[V];
#pragma GCC unroll 3
      for (int v = 0; v < V; ++v) w[v] = load(panel + v * K2 + k);
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) {
        const Vec x = broadcast(a[r * K2 + k]);
#pragma GCC unroll 3
        for (int v = 0; v < V; ++v) sum[r][v] = multiply_add(x, w[v], sum[r][v]);
      }
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 3
      for (int v = 0; v < V; ++v) {
        alignas(64) int32_t out[kCols];
        store(out, sum[r][v]);  // (a memcpy from sum made GCC keep every sum in memory too)
        const int64_t n0 = (p + v) * kCols;
        std::copy_n(out, std::min<int64_t>(kCols, b.N_ - n0), c + r * b.N_ + n0);
      }
  }
  using Tile = void (*)(const Int16Panels&, const int32_t*, int64_t, int32_t*);
  static constexpr Tile kTiles[4][3] = {{tile<1, 1>, tile<1, 2>, tile<1, 3>}, {tile<2, 1>, tile<2, 2>, tile<2, 3>},
                                        {tile<3, 1>, tile<3, 2>, tile<3, 3>}, {tile<4, 1>, tile<4, 2>, tile<4, 3>}};
  static_assert(kRows <= 4);

  int64_t K2_, N_, panels_;
  AlignedVector<int16_t> data_;  // panels start on cache lines: loads never straddle two
};

// A' rows as int16 pairs (K2 int32 words per row, the last half zero when K is odd).
std::vector<int32_t> int16_pairs(const int32_t* a, int64_t M, int64_t K, int64_t K2) {
  std::vector<int16_t> h(size_t(M * K2 * 2), 0);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t k = 0; k < K; ++k) h[size_t(m * K2 * 2 + k)] = int16_t(a[m * K + k]);
  std::vector<int32_t> words(size_t(M * K2));
  std::memcpy(words.data(), h.data(), h.size() * sizeof(int16_t));
  return words;
}
#endif

class MatMulInteger : public OpRun {
 public:
  using Types = Int8s;
  explicit MatMulInteger(const NodeContext& ctx) {
#if defined(__AVX2__)
    // A 2-D B that is an initializer no feed can replace, with a constant zero point (or none):
    // (B - zero point) packed once, as the session is made (ONNX Runtime prepacks it too).
    const Initializer* b = ctx.constant_input(1);
    const Initializer* zp = ctx.constant_input(3);
    if (b && b->value.rank() == 2 && (zp || !ctx.has_input(3)) && (b->value.dtype() == DType::Int8 || b->value.dtype() == DType::UInt8)) {
      try {
        Values in{Value(), b->value, Value(), zp ? Value(zp->value) : Value()};
        const Tensor shifted_b = shifted(b->value, in, 3, false);
        packed_b_.emplace(shifted_b.data<int32_t>(), b->value.dim(0), b->value.dim(1));
        b_data_ = b->value.raw_data();
        zp_data_ = zp ? zp->value.raw_data() : nullptr;
      } catch (const Error&) {  // a bad zero point: run() says so, naming the node
        packed_b_.reset();
      }
    }
#endif
  }
  Values run(const Values& in, RunContext&) override {
    const Tensor a = shifted(input_tensor(in, 0), in, 2, true);
#if defined(__AVX2__)
    if (packed_b_ && input_tensor(in, 1).raw_data() == b_data_ &&
        (has_value(in, 3) ? input_tensor(in, 3).raw_data() == zp_data_ : zp_data_ == nullptr)) {
      const MatMulShape s = matmul_shape(a.shape(), input_tensor(in, 1).shape());
      Tensor y = Tensor::uninitialized(DType::Int32, s.out);
      for (size_t i = 0; i < s.a_batch.size(); ++i) {
        const std::vector<int32_t> pairs = int16_pairs(a.data<int32_t>() + s.a_batch[i] * s.M * s.K, s.M, s.K, packed_b_->pairs());
        packed_b_->multiply(s.M, pairs.data(), y.data<int32_t>() + int64_t(i) * s.M * s.N);
      }
      return {y};
    }
#endif
    const Tensor b = shifted(input_tensor(in, 1), in, 3, false);
    const MatMulShape s = matmul_shape(a.shape(), b.shape());
    Tensor y(DType::Int32, s.out);
    const int32_t *pa = a.data<int32_t>(), *pb = b.data<int32_t>();
    int32_t* py = y.data<int32_t>();
#if defined(__AVX2__)
    std::optional<Int16Panels> panels;
    int64_t packed = -1;  // the b matrix `panels` holds
    for (size_t i = 0; i < s.a_batch.size(); ++i) {
      if (s.b_batch[i] != packed) panels.emplace(pb + s.b_batch[i] * s.K * s.N, s.K, s.N), packed = s.b_batch[i];
      const std::vector<int32_t> pairs = int16_pairs(pa + s.a_batch[i] * s.M * s.K, s.M, s.K, panels->pairs());
      panels->multiply(s.M, pairs.data(), py + int64_t(i) * s.M * s.N);
    }
#else
    for (size_t i = 0; i < s.a_batch.size(); ++i)
      gemm_loop(false, false, s.M, s.N, s.K, pa + s.a_batch[i] * s.M * s.K, pb + s.b_batch[i] * s.K * s.N,
                py + int64_t(i) * s.M * s.N, false);
#endif
    return {y};
  }

 private:
#if defined(__AVX2__)
  std::optional<Int16Panels> packed_b_;  // (B - zero point) of a constant B, packed when made
  const void* b_data_ = nullptr;         // the tensors it was packed from: used while run is given them
  const void* zp_data_ = nullptr;
#endif
};

}  // namespace

void register_matmul_integer(Registry& reg) { reg.add("", "MatMulInteger", {10}, make<MatMulInteger>); }

}  // namespace refeval::ops

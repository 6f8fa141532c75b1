// refeval's own float GEMM kernels, the small-M AVX-512 one (ops/linalg/gemm_small_m.cc) and the
// AVX2 one of CPUs without AVX-512 (gemm_in_order_avx2.cc): every element of C is one chain of
// fused multiply-adds over k in order, so it equals that chain computed one element at a time, bit
// for bit, wherever the element sits in C (edge tiles, the partial last vector, the 256-deep
// passes) and on any thread count. Each test runs under every instruction set this machine runs
// (test_util.h's for_each_isa): the AVX-512 kernel, the AVX2 one and the portable path.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "../../../ops/linalg/linalg_common.h"
#include "../../test_util.h"
#include "../../isa_util.h"
#include "refeval/threads.h"

using namespace refeval;

namespace {

std::vector<float> ramp(int64_t n, int seed) {
  std::vector<float> v(static_cast<size_t>(n));
  for (size_t i = 0; i < v.size(); ++i) v[i] = float(int((i + seed) * 7919 % 1009) - 504) * 1.7e-3f;
  return v;
}

// The contract, one element at a time: c[i][j] = fma(a[i][K-1], b[K-1][j], ... fma(a[i][0], b[0][j], c0)).
std::vector<float> fma_chains(int64_t M, int64_t N, int64_t K, const std::vector<float>& a, const std::vector<float>& b,
                              std::vector<float> c) {
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      float sum = c[size_t(i * N + j)];
      for (int64_t k = 0; k < K; ++k) sum = std::fma(a[size_t(i * K + k)], b[size_t(k * N + j)], sum);
      c[size_t(i * N + j)] = sum;
    }
  return c;
}

using Kernel = bool (*)(int64_t, int64_t, int64_t, const float*, const float*, float*, bool);
// The in-order kernel of the active path: small-M on AVX-512, the AVX2 one on AVX2, the portable
// loops on the portable path.
Kernel active_kernel() {
  if (active_isa() == Isa::Generic)
    return [](int64_t M, int64_t N, int64_t K, const float* a, const float* b, float* c, bool accumulate) {
      ops::gemm_in_order_portable(false, false, M, N, K, a, b, c, accumulate);
      return true;
    };
  if (active_isa() == Isa::Avx512)
    return [](int64_t M, int64_t N, int64_t K, const float* a, const float* b, float* c, bool accumulate) {
      return ops::gemm_small_m(M, N, K, a, b, c, accumulate);
    };
  if (active_isa() == Isa::Avx2)
    return [](int64_t M, int64_t N, int64_t K, const float* a, const float* b, float* c, bool accumulate) {
      return ops::gemm_in_order_avx2(M, N, K, a, b, c, accumulate);
    };
  return nullptr;
}

}  // namespace

TEST_CASE("in-order GEMM: each element is the in-order FMA chain over k, bit for bit, on 1 and 2 threads") {
  testing::for_each_isa([&](Isa) {
    const Kernel kernel = active_kernel();
    if (!kernel) return;
    struct Case { int64_t M, N, K; bool accumulate; };
    // Rows 1..9 cover every edge tile (AVX-512: 8 rows per tile; AVX2: 6); 48, 64, 95, 100, 130 and
    // 517 columns full and partial vectors and blocks; K 300 and 700 one and three 256-deep passes.
    const Case cases[] = {{1, 517, 700, false}, {2, 1100, 300, true}, {3, 130, 300, false}, {4, 64, 700, true},
                          {5, 100, 300, true},  {6, 48, 300, false},  {7, 95, 700, true},   {9, 517, 300, false},
                          {32, 130, 700, true}, {33, 517, 300, false}};
    for (const Case& t : cases) {
      CAPTURE(t.M);
      CAPTURE(t.N);
      CAPTURE(t.K);
      const std::vector<float> a = ramp(t.M * t.K, 1), b = ramp(t.K * t.N, 2);
      const std::vector<float> c0 = t.accumulate ? ramp(t.M * t.N, 3) : std::vector<float>(size_t(t.M * t.N), 0.f);
      const std::vector<float> want = fma_chains(t.M, t.N, t.K, a, b, c0);
      for (int threads : {1, 2}) {
        set_thread_count(threads);
        std::vector<float> c = c0;
        REQUIRE(kernel(t.M, t.N, t.K, a.data(), b.data(), c.data(), t.accumulate));
        CHECK(std::memcmp(c.data(), want.data(), c.size() * sizeof(float)) == 0);
      }
      set_thread_count(1);
    }
  });
}

TEST_CASE("small-M GEMM: B read from its 48-column blocks (B transposed or not) gives the same bits") {
  testing::for_each_isa([&](Isa) {
    if (!ops::gemm_small_m_suits(1, 48, 1)) return;  // the AVX-512 kernel only
    // 517 columns: ten full blocks and one of 37 (zero-padded); K 700: three 256-deep passes.
    const int64_t M = 9, N = 517, K = 700;
    const std::vector<float> a = ramp(M * K, 6), b = ramp(K * N, 7), c0 = ramp(M * N, 8);
    std::vector<float> bt(size_t(N * K));
    for (int64_t k = 0; k < K; ++k)
      for (int64_t n = 0; n < N; ++n) bt[size_t(n * K + k)] = b[size_t(k * N + n)];
    const std::vector<float> want = fma_chains(M, N, K, a, b, c0);
    for (bool trans_b : {false, true}) {
      CAPTURE(trans_b);
      const AlignedVector<float> blocks = ops::pack_small_m(trans_b, K, N, trans_b ? bt.data() : b.data());
      REQUIRE(blocks.size() == size_t(K * 528));
      for (int threads : {1, 2}) {
        set_thread_count(threads);
        std::vector<float> c = c0;
        REQUIRE(ops::gemm_small_m(M, N, K, a.data(), nullptr, c.data(), true, blocks.data()));
        CHECK(std::memcmp(c.data(), want.data(), c.size() * sizeof(float)) == 0);
      }
      set_thread_count(1);
    }
  });
}

TEST_CASE("in-order GEMM: equal rows of A give equal rows of C, equal columns of B equal columns of C") {
  testing::for_each_isa([&](Isa) {
    const Kernel kernel = active_kernel();
    if (!kernel) return;
    const int64_t M = 7, N = 200, K = 513;
    std::vector<float> a = ramp(M * K, 4), b = ramp(K * N, 5);
    for (int64_t k = 0; k < K; ++k) {
      a[size_t(6 * K + k)] = a[size_t(k)];       // row 6 (an edge tile) = row 0
      b[size_t(k * N + 199)] = b[size_t(k * N)];  // column 199 (the last, partial vector) = column 0
    }
    std::vector<float> c(size_t(M * N));
    REQUIRE(kernel(M, N, K, a.data(), b.data(), c.data(), false));
    CHECK(std::memcmp(&c[size_t(6 * N)], &c[0], size_t(N) * sizeof(float)) == 0);
    for (int64_t i = 0; i < M; ++i) CHECK(c[size_t(i * N + 199)] == c[size_t(i * N)]);
  });
}

TEST_CASE("small-M GEMM: declines shapes it is not for, leaving C untouched") {
  const std::vector<float> a = ramp(600 * 300, 6), b = ramp(300 * 64, 7);
  std::vector<float> c(64 * 600, 42.f);
  CHECK_FALSE(ops::gemm_small_m(600, 64, 300, a.data(), b.data(), c.data(), false));  // A too large for L2
  CHECK_FALSE(ops::gemm_small_m(2, 47, 300, a.data(), b.data(), c.data(), false));    // narrower than a block (48)
  CHECK(c[0] == 42.f);
}

TEST_CASE("in-order GEMM: on the AVX2 and portable paths, every float product (transposed operands too) is the FMA chain") {
  testing::for_each_isa([&](Isa) {
    // with AVX-512, products of many rows are OpenBLAS's
  if (active_isa() == Isa::Avx512) return;
    // 200 x 150 x 300 is above the Eigen threshold, so ops::gemm takes the in-order kernel
    const int64_t M = 200, N = 150, K = 300;
    const std::vector<float> a = ramp(M * K, 8), b = ramp(K * N, 9);
    const std::vector<float> want = fma_chains(M, N, K, a, b, std::vector<float>(size_t(M * N), 0.f));
    std::vector<float> at(a.size()), bt(b.size());  // stored transposed: K x M and N x K
    for (int64_t m = 0; m < M; ++m)
      for (int64_t k = 0; k < K; ++k) at[size_t(k * M + m)] = a[size_t(m * K + k)];
    for (int64_t k = 0; k < K; ++k)
      for (int64_t n = 0; n < N; ++n) bt[size_t(n * K + k)] = b[size_t(k * N + n)];
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        CAPTURE(ta);
        CAPTURE(tb);
        std::vector<float> c(size_t(M * N));
        ops::gemm(ta, tb, M, N, K, ta ? at.data() : a.data(), tb ? bt.data() : b.data(), c.data(), false);
        CHECK(std::memcmp(c.data(), want.data(), c.size() * sizeof(float)) == 0);
      }
  });
}

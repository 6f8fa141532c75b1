// The GEMM behind MatMul, Gemm and the convolutions gives the same bits on any thread count
// (refeval/threads.h) and for equal inputs wherever they sit in the product: work is split into
// blocks of C of one fixed shape, never over the reduction.
#include <doctest/doctest.h>

#include <cstring>

#include "../../../ops/linalg/linalg_common.h"
#include "refeval/threads.h"
#include "test_util.h"
#include "isa_util.h"

using namespace refeval;
using namespace refeval::testing;
using build::attr;
using build::node;

namespace {

std::vector<float> ramp_values(int64_t n, float scale) {
  std::vector<float> v(static_cast<size_t>(n));
  for (size_t i = 0; i < v.size(); ++i) v[i] = float(int(i * 7919 % 1009) - 504) * scale;
  return v;
}
Tensor ramp(Shape s, float scale) { return tensor<float>(s, ramp_values(shape_size(s), scale)); }

}  // namespace

TEST_CASE("MatMul and Gemm: bit-identical results on 1, 2 and 4 threads, on every GEMM path") {
  testing::for_each_isa([&](Isa) {
    struct Case { const char* what; Node n; Tensor a, b; };
    const Case cases[] = {
        {"few rows (the small-M kernel)", node("MatMul", {"a", "b"}, {"y"}), ramp({2, 37, 300}, 1e-3f), ramp({300, 517}, 3e-3f)},
        {"tall (OpenBLAS, blocks of rows)", node("MatMul", {"a", "b"}, {"y"}), ramp({700, 300}, 1e-3f), ramp({300, 200}, 3e-3f)},
        {"wide, B transposed (OpenBLAS, blocks of columns)", node("Gemm", {"a", "b"}, {"y"}, {attr("transB", int64_t(1))}),
         ramp({3, 400}, 1e-3f), ramp({2500, 400}, 3e-3f)},
    };
    for (const Case& c : cases) {
      CAPTURE(c.what);
      std::vector<Tensor> results;
      for (int threads : {1, 2, 4}) {
        set_thread_count(threads);
        results.push_back(run_node(c.n, {c.a, c.b})[0].tensor());
      }
      set_thread_count(1);
      for (const Tensor& r : results) CHECK(std::memcmp(r.raw_data(), results[0].raw_data(), r.nbytes()) == 0);
    }
    CHECK(thread_count() == 1);
    set_thread_count(0);
    CHECK(thread_count() >= 1);  // 0: every core
    set_thread_count(1);
  });
}

TEST_CASE("OpenBLAS path: equal columns of B give equal columns of C, the last partial block included") {
  testing::for_each_isa([&](Isa) {
    // 1 x 4096 x N with B transposed, as AlexNet's last layer (N = 1000); here 2280 columns, two
    // blocks of 1024 and 232 more. A call 232 wide sums differently from one 1024 wide: run so, the
    // last block made 232 of AlexNet's 1000 equal logits unequal (light_bvlc_alexnet's softmax).
    const int64_t M = 1, N = 2280, K = 4096;
    const std::vector<float> a = ramp_values(M * K, 1e-3f);
    std::vector<float> b(size_t(N * K));  // N x K (transposed): every column of op(B) the same
    const std::vector<float> column = ramp_values(K, 3e-3f);
    for (int64_t j = 0; j < N; ++j) std::copy(column.begin(), column.end(), b.begin() + j * K);
    for (bool accumulate : {false, true}) {
      CAPTURE(accumulate);
      std::vector<float> c(size_t(M * N), accumulate ? 0.5f : 0.f);
      ops::gemm(false, true, M, N, K, a.data(), b.data(), c.data(), accumulate);
      int unequal = 0;
      for (int64_t j = 1; j < N; ++j) unequal += c[size_t(j)] != c[0];
      CHECK(unequal == 0);
    }
  });
}

TEST_CASE("GEMM: equal rows of A give equal rows of C, the edge tiles included (whatever OPENBLAS_CORETYPE says)") {
  testing::for_each_isa([&](Isa) {
    // light_squeezenet's last convolution: 1000 equal filters (rows of A) over 512 x 169. OpenBLAS's
    // AVX2 kernels, which OPENBLAS_CORETYPE=Haswell forces even on an AVX-512 CPU, summed the last
    // rows' tile in another order: 64 of the 1000 channels differed and the softmax came out one-hot.
    const int64_t M = 1000, N = 169, K = 512;
    std::vector<float> a(size_t(M * K));
    const std::vector<float> row = ramp_values(K, 1e-3f);
    for (int64_t i = 0; i < M; ++i) std::copy(row.begin(), row.end(), a.begin() + i * K);
    const std::vector<float> b = ramp_values(K * N, 3e-3f);
    std::vector<float> c(size_t(M * N));
    ops::gemm(false, false, M, N, K, a.data(), b.data(), c.data(), false);
    int unequal = 0;
    for (int64_t i = 1; i < M; ++i) unequal += std::memcmp(&c[size_t(i * N)], &c[0], size_t(N) * sizeof(float)) != 0;
    CHECK(unequal == 0);
  });
}

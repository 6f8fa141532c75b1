// The GEMM behind MatMul, Gemm and the convolutions gives the same bits on any thread count
// (refeval/threads.h), on any instruction set, and for equal inputs wherever they sit in the
// product: every float element is one chain of fused multiply-adds over k in order, and work is
// split over blocks of C, never over the reduction. Callers on several threads at once each get
// their own product.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <thread>

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
        {"tall (the panel kernels)", node("MatMul", {"a", "b"}, {"y"}), ramp({700, 300}, 1e-3f), ramp({300, 200}, 3e-3f)},
        {"wide, B transposed", node("Gemm", {"a", "b"}, {"y"}, {attr("transB", int64_t(1))}),
         ramp({3, 400}, 1e-3f), ramp({2500, 400}, 3e-3f)},
        {"batched, as unfused attention's scores", node("MatMul", {"a", "b"}, {"y"}), ramp({12, 512, 64}, 1e-3f),
         ramp({12, 64, 512}, 3e-3f)},
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

TEST_CASE("GEMM: equal columns of B give equal columns of C, the last partial block included") {
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

namespace {
// The definition the float kernels keep: c[i][j] = fma(a[i][k], b[k][j], ...) over k = 0 .. K-1,
// from zero (from c's value when accumulating), a transposed operand stored K x M / N x K.
std::vector<float> fma_chains(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const std::vector<float>& a,
                              const std::vector<float>& b, std::vector<float> c, bool accumulate) {
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      float sum = accumulate ? c[size_t(i * N + j)] : 0.0f;
      for (int64_t k = 0; k < K; ++k)
        sum = std::fma(a[size_t(ta ? k * M + i : i * K + k)], b[size_t(tb ? j * K + k : k * N + j)], sum);
      c[size_t(i * N + j)] = sum;
    }
  return c;
}
}  // namespace

TEST_CASE("GEMM: a large float product is k-ordered fused multiply-adds, bit for bit, on every instruction set") {
  // An oracle refeval's kernels did not compute: std::fma in a loop. Every shape is past the size
  // below which Eigen runs; tall ones reach the AVX-512 panel kernel, few-row ones the strips.
  struct Case { bool ta, tb, accumulate; int64_t M, N, K; };
  const Case cases[] = {{false, false, false, 300, 200, 70}, {false, false, true, 300, 200, 300},
                        {true, false, false, 260, 130, 300}, {false, true, false, 270, 90, 300},
                        {true, true, true, 300, 100, 260},   {false, false, false, 3, 400, 300},
                        {false, true, false, 4, 700, 200}};
  testing::for_each_isa([&](Isa) {
    for (const Case& t : cases) {
      INFO("ta ", t.ta, " tb ", t.tb, " accumulate ", t.accumulate, " ", t.M, " x ", t.N, " x ", t.K);
      const std::vector<float> a = random_floats(size_t(t.M * t.K), 11), b = random_floats(size_t(t.K * t.N), 12);
      const std::vector<float> c0 = random_floats(size_t(t.M * t.N), 13);
      const std::vector<float> expected = fma_chains(t.ta, t.tb, t.M, t.N, t.K, a, b, c0, t.accumulate);
      for (int threads : {1, 2}) {
        set_thread_count(threads);
        std::vector<float> c = c0;
        ops::gemm(t.ta, t.tb, t.M, t.N, t.K, a.data(), b.data(), c.data(), t.accumulate);
        CHECK(std::memcmp(c.data(), expected.data(), c.size() * sizeof(float)) == 0);
      }
      set_thread_count(1);
    }
  });
}

TEST_CASE("GEMM: callers on two threads at once each get their own product (float and double)") {
  // Debian's serial OpenBLAS, entered by two threads at once, computes in work buffers they share:
  // a 512-token prefill's logits changed run to run on two threads. Two callers here run products
  // of their own inputs (equal inputs would hide a shared buffer) over and over, and must get the
  // bits each gets alone.
  const int64_t M = 128, N = 96, K = 128;
  struct Caller {
    std::vector<float> af, bf, alone_f;
    std::vector<double> ad, bd, alone_d;
    int wrong = 0;
  };
  Caller callers[2];
  for (unsigned who = 0; who < 2; ++who) {
    Caller& c = callers[who];
    c.af = random_floats(size_t(M * K), 21 + 2 * who), c.bf = random_floats(size_t(K * N), 22 + 2 * who);
    c.ad.assign(c.af.begin(), c.af.end()), c.bd.assign(c.bf.begin(), c.bf.end());
    c.alone_f.resize(size_t(M * N)), c.alone_d.resize(size_t(M * N));
    ops::gemm(false, false, M, N, K, c.af.data(), c.bf.data(), c.alone_f.data(), false);
    ops::gemm(false, false, M, N, K, c.ad.data(), c.bd.data(), c.alone_d.data(), false);
  }
  auto run = [&](Caller& c) {
    std::vector<float> cf(c.alone_f.size());
    std::vector<double> cd(c.alone_d.size());
    for (int round = 0; round < 2000; ++round) {
      if (round % 8 == 0) {
        ops::gemm(false, false, M, N, K, c.af.data(), c.bf.data(), cf.data(), false);
        c.wrong += std::memcmp(cf.data(), c.alone_f.data(), cf.size() * sizeof(float)) != 0;
      }
      ops::gemm(false, false, M, N, K, c.ad.data(), c.bd.data(), cd.data(), false);
      c.wrong += std::memcmp(cd.data(), c.alone_d.data(), cd.size() * sizeof(double)) != 0;
    }
  };
  // A shared buffer is taken only when both enter within instants of each other: eight contests.
  for (int contest = 0; contest < 8 && callers[0].wrong + callers[1].wrong == 0; ++contest) {
    std::thread first(run, std::ref(callers[0])), second(run, std::ref(callers[1]));
    first.join(), second.join();
  }
  CHECK(callers[0].wrong == 0);
  CHECK(callers[1].wrong == 0);
}

// MatMul and Gemm: numpy shape rules, every dtype class, and the Eigen path checked against a
// literal triple-loop oracle on random data (STYLE.md §6).
#include <random>

#include "../../../ops/linalg/linalg_common.h"
#include "test_util.h"
#include "isa_util.h"

using namespace refeval;
using namespace refeval::testing;
using build::attr;
using build::node;

namespace {
// The oracle: C = A * B by the definition, in double.
std::vector<float> triple_loop(const std::vector<float>& a, const std::vector<float>& b, int64_t M, int64_t K, int64_t N) {
  std::vector<float> c(size_t(M * N));
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double s = 0;
      for (int64_t k = 0; k < K; ++k) s += double(a[size_t(i * K + k)]) * double(b[size_t(k * N + j)]);
      c[size_t(i * N + j)] = float(s);
    }
  return c;
}
}  // namespace

TEST_CASE("MatMul 256x256 float runs on Eigen and matches the triple-loop oracle") {
  testing::for_each_isa([&](Isa) {
    const int64_t n = 256;
    const auto a = random_floats(size_t(n * n), 1), b = random_floats(size_t(n * n), 2);
    const uint64_t before = ops::blas_gemm_calls();
    auto out = run_node(node("MatMul", {"a", "b"}, {"c"}), {tensor<float>({n, n}, a), tensor<float>({n, n}, b)});
    CHECK(ops::blas_gemm_calls() > before);  // the fast kernel ran, not a naive loop
    check_equal(out[0], tensor<float>({n, n}, triple_loop(a, b, n, n, n)), Tolerance{1e-4, 1e-5});
  });
}

TEST_CASE("MatMul batched with a shared right operand matches the oracle per batch") {
  testing::for_each_isa([&](Isa) {
    const auto a = random_floats(3 * 5 * 7, 3), b = random_floats(7 * 4, 4);
    auto out = run_node(node("MatMul", {"a", "b"}, {"c"}), {tensor<float>({3, 5, 7}, a), tensor<float>({7, 4}, b)});
    std::vector<float> expected;
    for (int i = 0; i < 3; ++i) {
      const std::vector<float> ai(a.begin() + i * 35, a.begin() + (i + 1) * 35);
      const auto ci = triple_loop(ai, b, 5, 7, 4);
      expected.insert(expected.end(), ci.begin(), ci.end());
    }
    check_equal(out[0], tensor<float>({3, 5, 4}, expected));
  });
}

TEST_CASE("MatMul follows numpy shape rules") {
  testing::for_each_isa([&](Isa) {
    struct Case { const char* what; Tensor a, b, expected; };
    const Case cases[] = {
        {"1-D x 1-D is a scalar", tensor<float>({3}, {1, 2, 3}), tensor<float>({3}, {4, 5, 6}), tensor<float>({}, {32})},
        {"1-D x 2-D drops the promoted row", tensor<float>({2}, {1, 2}), tensor<float>({2, 2}, {1, 2, 3, 4}), tensor<float>({2}, {7, 10})},
        {"2-D x 1-D drops the promoted column", tensor<float>({2, 2}, {1, 2, 3, 4}), tensor<float>({2}, {1, 1}), tensor<float>({2}, {3, 7})},
        {"batch dims broadcast (2,1,..) x (3,..)", tensor<double>({2, 1, 1, 1}, {2, 3}), tensor<double>({3, 1, 1}, {1, 10, 100}),
         tensor<double>({2, 3, 1, 1}, {2, 20, 200, 3, 30, 300})},
        {"K = 0 gives zeros", tensor<float>({2, 0}, {}), tensor<float>({0, 2}, {}), tensor<float>({2, 2}, {0, 0, 0, 0})},
        {"int32 wraps", tensor<int32_t>({1, 1}, {65536}), tensor<int32_t>({1, 1}, {65536}), tensor<int32_t>({1, 1}, {0})},
        {"uint64 loop", tensor<uint64_t>({1, 2}, {2, 3}), tensor<uint64_t>({2, 1}, {4, 5}), tensor<uint64_t>({1, 1}, {23})},
        {"float16 computes in float", tensor<float16>({1, 2}, {float16(1.5f), float16(2.f)}), tensor<float16>({2, 1}, {float16(2.f), float16(0.25f)}),
         tensor<float16>({1, 1}, {float16(3.5f)})},
        {"bfloat16", tensor<bfloat16>({1, 1}, {bfloat16(3.f)}), tensor<bfloat16>({1, 1}, {bfloat16(-2.f)}), tensor<bfloat16>({1, 1}, {bfloat16(-6.f)})},
    };
    for (const auto& c : cases) {
      CAPTURE(c.what);
      check_equal(run_node(node("MatMul", {"a", "b"}, {"c"}), {c.a, c.b})[0], c.expected);
    }
  });
}

TEST_CASE("MatMul refuses mismatched inner dimensions, scalars and mixed types") {
  testing::for_each_isa([&](Isa) {
    CHECK_THROWS_AS(run_node(node("MatMul", {"a", "b"}, {"c"}), {tensor<float>({2, 3}, {0, 0, 0, 0, 0, 0}), tensor<float>({2}, {0, 0})}), Error);
    CHECK_THROWS_AS(run_node(node("MatMul", {"a", "b"}, {"c"}), {tensor<float>({}, {1}), tensor<float>({1}, {1})}), Error);
    CHECK_THROWS_AS(run_node(node("MatMul", {"a", "b"}, {"c"}), {tensor<float>({1}, {1}), tensor<double>({1}, {1})}), Error);
    CHECK_THROWS_AS(run_node(node("MatMul", {"a", "b"}, {"c"}), {tensor<int8_t>({1}, {1}), tensor<int8_t>({1}, {1})}), Error);
  });
}

TEST_CASE("Gemm attributes, bias broadcasting and versions") {
  testing::for_each_isa([&](Isa) {
    const Tensor a = tensor<float>({2, 2}, {1, 2, 3, 4}), b = tensor<float>({2, 2}, {5, 6, 7, 8});
    struct Case { const char* what; std::vector<Attribute> attrs; Values in; Tensor expected; int64_t opset; };
    const Case cases[] = {
        {"plain product, no C (v11+)", {}, {a, b}, tensor<float>({2, 2}, {19, 22, 43, 50}), 13},
        {"transA and transB", {attr("transA", int64_t(1)), attr("transB", int64_t(1))}, {a, b}, tensor<float>({2, 2}, {23, 31, 34, 46}), 13},
        {"alpha, beta and a row bias", {attr("alpha", 2.0f), attr("beta", 0.5f)}, {a, b, tensor<float>({2}, {2, 4})},
         tensor<float>({2, 2}, {39, 46, 87, 102}), 13},
        {"column bias (M, 1)", {}, {a, b, tensor<float>({2, 1}, {1, -1})}, tensor<float>({2, 2}, {20, 23, 42, 49}), 13},
        {"scalar bias", {}, {a, b, tensor<float>({}, {1})}, tensor<float>({2, 2}, {20, 23, 44, 51}), 13},
        {"beta 0 ignores C, even NaN", {attr("beta", 0.0f)}, {a, b, tensor<float>({}, {NAN})}, tensor<float>({2, 2}, {19, 22, 43, 50}), 13},
        {"v6 reads the broadcast attribute", {attr("broadcast", int64_t(1))}, {a, b, tensor<float>({1}, {1})}, tensor<float>({2, 2}, {20, 23, 44, 51}), 6},
        {"int64 wraps with alpha = beta = 1", {}, {tensor<int64_t>({1, 1}, {3}), tensor<int64_t>({1, 1}, {4}), tensor<int64_t>({1}, {-20})},
         tensor<int64_t>({1, 1}, {-8}), 13},
        {"int32 with a float alpha", {attr("alpha", 0.5f)}, {tensor<int32_t>({1, 1}, {3}), tensor<int32_t>({1, 1}, {3})}, tensor<int32_t>({1, 1}, {4}), 13},
        {"double", {}, {tensor<double>({1, 2}, {1, 2}), tensor<double>({2, 1}, {3, 4})}, tensor<double>({1, 1}, {11}), 13},
        {"float16", {}, {tensor<float16>({1, 1}, {float16(1.5f)}), tensor<float16>({1, 1}, {float16(2.f)})}, tensor<float16>({1, 1}, {float16(3.f)}), 13},
    };
    for (const auto& c : cases) {
      CAPTURE(c.what);
      std::vector<std::string> names = {"a", "b", "c"};
      names.resize(c.in.size());
      check_equal(run_node(node("Gemm", names, {"y"}, c.attrs), c.in, c.opset)[0], c.expected);
    }
  });
}

TEST_CASE("Gemm refuses a bias that does not broadcast and non-matrix inputs") {
  testing::for_each_isa([&](Isa) {
    const Tensor a = tensor<float>({2, 2}, {1, 2, 3, 4});
    CHECK_THROWS_AS(run_node(node("Gemm", {"a", "b", "c"}, {"y"}), {a, a, tensor<float>({3}, {1, 2, 3})}), Error);
    CHECK_THROWS_AS(run_node(node("Gemm", {"a", "b"}, {"y"}), {tensor<float>({4}, {1, 2, 3, 4}), a}), Error);
    CHECK_THROWS_AS(run_node(node("Gemm", {"a", "b"}, {"y"}), {a, tensor<float>({3, 1}, {1, 2, 3})}), Error);
  });
}

// com.microsoft FusedMatMul: alpha, transA/transB, transBatchA/transBatchB, 1-D operands, batch
// broadcasting, agreement with Transpose + MatMul + Mul, and errors.
#include "test_util.h"

using namespace refeval;
using namespace refeval::testing;
using build::attr;
using build::node;

namespace {
Value fused(const Tensor& a, const Tensor& b, std::vector<Attribute> attrs, const char* op = "FusedMatMul") {
  return run_node(node(op, {"a", "b"}, {"y"}, std::move(attrs), "fmm", "com.microsoft"), {a, b})[0];
}
Tensor iota(Shape shape, float start = 1) {
  std::vector<float> v(size_t(shape_size(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = start + float(i) * 0.5f;
  return Tensor::from_vector<float>(shape, v);
}
}  // namespace

TEST_CASE("FusedMatMul: hand-computed 2x2 products") {
  const Tensor a = tensor<float>({2, 2}, {1, 2, 3, 4}), b = tensor<float>({2, 2}, {5, 6, 7, 8});
  struct Case { const char* what; std::vector<Attribute> attrs; Tensor expected; };
  const Case cases[] = {
      {"alpha 2 scales A B", {attr("alpha", 2.0f)}, tensor<float>({2, 2}, {38, 44, 86, 100})},
      {"transA", {attr("transA", int64_t(1))}, tensor<float>({2, 2}, {26, 30, 38, 44})},
      {"transB", {attr("transB", int64_t(1))}, tensor<float>({2, 2}, {17, 23, 39, 53})},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    check_equal(fused(a, b, c.attrs), c.expected);
  }
  check_equal(fused(a, b, {attr("transB", int64_t(1))}, "TransposeMatMul"), tensor<float>({2, 2}, {17, 23, 39, 53}));
}

TEST_CASE("FusedMatMul: transBatchA moves dim 0 into the rows, 1-D operands ignore trans") {
  // A (2, 1, 3) read as (1, 2, 3): rows [1 2 3] and [4 5 6]; B sums them
  const Tensor a = tensor<float>({2, 1, 3}, {1, 2, 3, 4, 5, 6}), ones = tensor<float>({3, 1}, {1, 1, 1});
  check_equal(fused(a, ones, {attr("transBatchA", int64_t(1))}), tensor<float>({1, 2, 1}, {6, 15}));
  // a vector times a matrix: (3) x (3, 2) -> (2), transA has no effect on the vector
  check_equal(fused(tensor<float>({3}, {1, 0, 2}), tensor<float>({3, 2}, {1, 2, 3, 4, 5, 6}), {attr("transA", int64_t(1))}),
              tensor<float>({2}, {11, 14}));
}

TEST_CASE("FusedMatMul equals Transpose + MatMul + Mul(alpha) run as standard ops") {
  struct Case { const char* what; Tensor a, b; std::vector<Attribute> attrs; std::vector<int64_t> perm_a, perm_b; };
  const Case cases[] = {
      // transBatchA then transA: perm [1, 0, 2] then swap the last two = [1, 2, 0]; B broadcasts over the batch
      {"transBatchA + transA", iota({3, 2, 4}), iota({3, 5}, -2),
       {attr("transBatchA", int64_t(1)), attr("transA", int64_t(1)), attr("alpha", 0.25f)}, {1, 2, 0}, {0, 1}},
      // transBatchB alone on a rank-4 B: perm [1, 2, 0, 3]
      {"transBatchB, rank 4", iota({2, 2, 3}, -1), iota({3, 1, 2, 2}),
       {attr("transBatchB", int64_t(1)), attr("alpha", -1.0f)}, {0, 1, 2}, {1, 2, 0, 3}},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    const Value at = run_node(node("Transpose", {"x"}, {"y"}, {attr("perm", c.perm_a)}), {c.a})[0];
    const Value bt = run_node(node("Transpose", {"x"}, {"y"}, {attr("perm", c.perm_b)}), {c.b})[0];
    const Value mm = run_node(node("MatMul", {"a", "b"}, {"y"}), {at, bt})[0];
    float alpha = 1;
    for (const auto& at2 : c.attrs)
      if (at2.name == "alpha") alpha = at2.f;
    const Value expected = run_node(node("Mul", {"a", "b"}, {"y"}), {mm, Tensor::scalar<float>(alpha)})[0];
    check_equal(fused(c.a, c.b, c.attrs), expected);
  }
}

TEST_CASE("FusedMatMul errors say which dimensions disagree") {
  CHECK_THROWS_WITH_AS(fused(iota({2, 3}), iota({2, 3}), {}), doctest::Contains("3 columns vs 2 rows"), Error);
  CHECK_THROWS_WITH_AS(fused(iota({2, 1, 3}), iota({3, 3, 1}), {}), doctest::Contains("do not broadcast"), Error);
  CHECK_THROWS_WITH_AS(fused(iota({2, 2}), tensor<double>({2, 2}, {1, 2, 3, 4}), {}), doctest::Contains("B has element type"), Error);
}

TEST_CASE("FusedMatMul: a batch of 0 broadcast against a batch of 1 gives an empty result") {
  // Found by fuzzing: the broadcast batch size was max(0, 1) = 1, and the kernel read the empty A.
  const Node n = node("FusedMatMul", {"a", "b"}, {"y"}, {}, "", "com.microsoft");
  const Values y = run_node(n, {tensor<float>({0, 2, 3}, {}), tensor<float>({1, 3, 2}, {1, 2, 3, 4, 5, 6})}, 1);
  CHECK(y[0].tensor().shape() == Shape{0, 2, 2});
}

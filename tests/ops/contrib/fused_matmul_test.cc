// com.microsoft FusedMatMul: alpha, transA/transB, transBatchA/transBatchB, 1-D operands, batch
// broadcasting, agreement with Transpose + MatMul + Mul, and errors.
#include <cmath>
#include <cstring>

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

namespace {
// The spec's product in double, element by element: op(X)[..., i, j] read through transBatch and
// trans from X's own layout, batches broadcast numpy style.
std::vector<double> fused_oracle(const Tensor& a, const Tensor& b, bool ta, bool tb, bool tba, bool tbb, double alpha,
                                 Shape& out) {
  auto as_doubles = [](const Tensor& t) {
    if (t.dtype() == DType::Double) return t.to_vector<double>();
    const std::vector<float> f = t.to_vector<float>();
    return std::vector<double>(f.begin(), f.end());
  };
  const std::vector<double> va = as_doubles(a), vb = as_doubles(b);
  // op(X)'s shape: transBatch moves dim 0 before the last one, trans swaps the last two.
  auto op_shape = [](Shape s, bool tbatch, bool t) {
    if (tbatch && s.size() > 2) {
      const int64_t d0 = s[0];
      s.erase(s.begin());
      s.insert(s.end() - 1, d0);
    }
    if (t) std::swap(s[s.size() - 1], s[s.size() - 2]);
    return s;
  };
  // X's flat index of op(X)'s element at index `i` (one per dim of op(X)).
  auto source = [](const Shape& s, bool tbatch, bool t, std::vector<int64_t> i) {
    if (t) std::swap(i[i.size() - 1], i[i.size() - 2]);
    if (tbatch && s.size() > 2) {
      const int64_t d0 = i[i.size() - 2];
      i.erase(i.end() - 2);
      i.insert(i.begin(), d0);
    }
    int64_t flat = 0;
    for (size_t d = 0; d < s.size(); ++d) flat = flat * s[d] + i[d];
    return flat;
  };
  const Shape sa = op_shape(a.shape(), tba, ta), sb = op_shape(b.shape(), tbb, tb);
  const size_t r = sa.size();  // both operands have rank r here
  const int64_t M = sa[r - 2], K = sa[r - 1], N = sb[r - 1];
  out.assign(r, 0);
  for (size_t d = 0; d + 2 < r; ++d) out[d] = std::max(sa[d], sb[d]);
  out[r - 2] = M, out[r - 1] = N;
  std::vector<double> y(size_t(shape_size(out)));
  std::vector<int64_t> idx(r, 0);
  for (size_t flat = 0; flat < y.size(); ++flat) {
    int64_t rest = int64_t(flat);
    for (size_t d = r; d-- > 0;) idx[d] = rest % out[d], rest /= out[d];
    std::vector<int64_t> ia(r), ib(r);
    for (size_t d = 0; d + 2 < r; ++d) ia[d] = sa[d] == 1 ? 0 : idx[d], ib[d] = sb[d] == 1 ? 0 : idx[d];
    double sum = 0;
    for (int64_t k = 0; k < K; ++k) {
      ia[r - 2] = idx[r - 2], ia[r - 1] = k, ib[r - 2] = k, ib[r - 1] = idx[r - 1];
      sum += va[size_t(source(a.shape(), tba, ta, ia))] * vb[size_t(source(b.shape(), tbb, tb, ib))];
    }
    y[flat] = alpha * sum;
  }
  return y;
}

template <class T>
Tensor random_tensor(Shape shape, unsigned seed) {
  const std::vector<float> v = random_floats(size_t(shape_size(shape)), seed);
  return Tensor::from_vector<T>(std::move(shape), std::vector<T>(v.begin(), v.end()));
}
}  // namespace

TEST_CASE("FusedMatMul matches a double oracle on every flag combination, float and double, with broadcasting") {
  // A (2, 3, 5, 7) and B (1, 3, 7, 4) as op() sees them, stored so that each flag undoes itself;
  // K = 7 and N = 4 are not multiples of a vector; B's batch 1 broadcasts against A's 2.
  int cases = 0;
  for (bool dbl : {false, true})
    for (int flags = 0; flags < 16; ++flags) {
      const bool ta = flags & 1, tb = flags & 2, tba = flags & 4, tbb = flags & 8;
      auto stored = [](Shape s, bool tbatch, bool t) {  // the shape X must have so that op(X) has shape s
        if (t) std::swap(s[2], s[3]);
        if (tbatch) s = {s[2], s[0], s[1], s[3]};
        return s;
      };
      const Shape sa = stored({2, 3, 5, 7}, tba, ta), sb = stored({1, 3, 7, 4}, tbb, tb);
      const Tensor a = dbl ? random_tensor<double>(sa, 31 + flags) : random_tensor<float>(sa, 31 + flags);
      const Tensor b = dbl ? random_tensor<double>(sb, 61 + flags) : random_tensor<float>(sb, 61 + flags);
      CAPTURE(flags);
      CAPTURE(dbl);
      Shape out;
      const std::vector<double> want = fused_oracle(a, b, ta, tb, tba, tbb, -0.75, out);
      const Tensor y = fused(a, b, {attr("transA", int64_t(ta)), attr("transB", int64_t(tb)), attr("transBatchA", int64_t(tba)),
                                    attr("transBatchB", int64_t(tbb)), attr("alpha", -0.75f)}).tensor();
      REQUIRE(y.shape() == Shape{2, 3, 5, 4});
      REQUIRE(y.dtype() == a.dtype());
      for (size_t i = 0; i < want.size(); ++i) {
        const double got = dbl ? y.data<double>()[i] : double(y.data<float>()[i]);
        CHECK(std::abs(got - want[i]) <= (dbl ? 1e-12 : 1e-5) * (1 + std::abs(want[i])));
      }
      ++cases;
    }
  CHECK(cases == 32);
}

TEST_CASE("FusedMatMul with B an initializer (packed when the node is made) gives the bits of B fed") {
  // Rows of A across several tiles, K and N not multiples of a vector; transB 0 and 1.
  for (bool tb : {false, true}) {
    CAPTURE(tb);
    const int64_t K = 37, N = 45;
    const Tensor a = random_tensor<float>({2, 9, K}, 5), b = random_tensor<float>(tb ? Shape{N, K} : Shape{K, N}, 6);
    const std::vector<Attribute> attrs = {attr("transB", int64_t(tb)), attr("alpha", 0.5f)};
    const Node n = node("FusedMatMul", {"a", "b"}, {"y"}, attrs, "fmm", "com.microsoft");
    const Graph g = build::graph("g", {n}, {build::tensor_info_unknown_rank("a", DType::Float)},
                                 {build::tensor_info_unknown_rank("y", DType::Float)}, {{"b", b}});
    const Values constant = ReferenceEvaluator::from_graph(g, {{"", 21}, {"com.microsoft", 1}}).run({}, {{"a", a}});
    const Tensor fed = fused(a, b, attrs).tensor(), y = constant[0].tensor();
    REQUIRE(y.shape() == fed.shape());
    CHECK(std::memcmp(y.raw_data(), fed.raw_data(), fed.nbytes()) == 0);
    Shape out;
    const std::vector<double> want = fused_oracle(a.reshaped({1, 2 * 9, K}), b.reshaped(tb ? Shape{1, N, K} : Shape{1, K, N}),
                                                  false, tb, false, false, 0.5, out);
    for (size_t i = 0; i < want.size(); ++i) CHECK(std::abs(double(y.data<float>()[i]) - want[i]) <= 1e-5 * (1 + std::abs(want[i])));
  }
}

TEST_CASE("FusedMatMul on float16 computes in float and rounds once") {
  const Tensor a = tensor<float16>({2, 2}, {float16(1.5f), float16(-2.0f), float16(0.25f), float16(3.0f)});
  const Tensor b = tensor<float16>({2, 2}, {float16(2.0f), float16(1.0f), float16(-1.0f), float16(0.5f)});
  const Tensor y = fused(a, b, {attr("transB", int64_t(1)), attr("alpha", 2.0f)}).tensor();
  REQUIRE(y.dtype() == DType::Float16);
  // A B^T = [[1.5*2 - 2*1, 1.5*-1 - 2*0.5], [0.25*2 + 3*1, 0.25*-1 + 3*0.5]] = [[1, -2.5], [3.5, 1.25]], times 2
  const float want[] = {2, -5, 7, 2.5};
  for (int i = 0; i < 4; ++i) CHECK(float(y.data<float16>()[i]) == want[i]);
}

TEST_CASE("FusedMatMul refuses a scalar operand, one line") {
  CHECK_THROWS_WITH_AS(fused(Tensor::scalar<float>(2.0f), iota({2, 2}), {}),
                       "node 'fmm' (com.microsoft:FusedMatMul): A and B must have at least one dimension", Error);
  CHECK_THROWS_WITH_AS(fused(iota({2, 2}), Tensor::scalar<float>(2.0f), {}),
                       "node 'fmm' (com.microsoft:FusedMatMul): A and B must have at least one dimension", Error);
}

TEST_CASE("FusedMatMul: a 1-D B is a column, two vectors give a scalar, double computes in double") {
  // (2, 3) x (3) -> (2): rows . (1, 0, 2)
  check_equal(fused(tensor<float>({2, 3}, {1, 2, 3, 4, 5, 6}), tensor<float>({3}, {1, 0, 2}), {attr("transB", int64_t(1))}), tensor<float>({2}, {7, 16}));
  check_equal(fused(tensor<float>({3}, {1, 2, 3}), tensor<float>({3}, {1, 0, 2}), {}), Tensor::scalar<float>(7.0f));
  check_equal(fused(tensor<double>({2, 3}, {1, 2, 3, 4, 5, 6}), tensor<double>({3}, {1, 0, 2}), {attr("alpha", 0.5f)}),
              tensor<double>({2}, {3.5, 8}), {0, 0});
}

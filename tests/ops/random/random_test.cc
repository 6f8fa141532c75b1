// RandomUniform(Like), RandomNormal(Like), Bernoulli, Multinomial: shape, element type,
// distribution moments, and reproducibility with and without a seed.
#include <cmath>

#include "test_util.h"

using namespace refeval;
using namespace refeval::testing;
using build::attr;
using build::node;

namespace {
struct Moments { double mean = 0, var = 0; };
Moments moments(const Tensor& t) {
  std::vector<double> v(size_t(t.size()));
  visit<Concat<Floats, Ints, TypeList<bool>>>(t.dtype(), [&]<class T>() {
    for (int64_t i = 0; i < t.size(); ++i) v[i] = double(compute_t<T>(t.data<T>()[i]));
  });
  Moments m;
  for (double x : v) m.mean += x / double(v.size());
  for (double x : v) m.var += (x - m.mean) * (x - m.mean) / double(v.size());
  return m;
}
}  // namespace

TEST_CASE("random tensors have the requested shape, type and moments") {
  struct Case {
    const char* what;
    Node n;
    Values inputs;
    DType dtype;
    Shape shape;
    double mean, var;
  };
  const Tensor like = Tensor(DType::Double, {100, 100});
  const Case cases[] = {
      {"uniform [2, 5), float by default", node("RandomUniform", {}, {"y"}, {attr("low", 2.0f), attr("high", 5.0f), attr("shape", std::vector<int64_t>{200, 50})}),
       {}, DType::Float, {200, 50}, 3.5, 9.0 / 12},
      {"normal(1, 2) as double", node("RandomNormal", {}, {"y"}, {attr("mean", 1.0f), attr("scale", 2.0f), attr("dtype", int64_t(11)), attr("shape", std::vector<int64_t>{10000})}),
       {}, DType::Double, {10000}, 1.0, 4.0},
      {"uniform like a double input", node("RandomUniformLike", {"x"}, {"y"}), {like}, DType::Double, {100, 100}, 0.5, 1.0 / 12},
      {"normal like, dtype float16", node("RandomNormalLike", {"x"}, {"y"}, {attr("dtype", int64_t(10))}), {like}, DType::Float16, {100, 100}, 0.0, 1.0},
      {"Bernoulli p = 0.3", node("Bernoulli", {"x"}, {"y"}), {tensor<float>({10000}, std::vector<float>(10000, 0.3f))}, DType::Float, {10000}, 0.3, 0.21},
      {"Bernoulli to bool", node("Bernoulli", {"x"}, {"y"}, {attr("dtype", int64_t(9))}), {tensor<double>({10000}, std::vector<double>(10000, 0.8))}, DType::Bool, {10000}, 0.8, 0.16},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    const Tensor y = run_node(c.n, c.inputs, 22)[0].tensor();
    CHECK(y.dtype() == c.dtype);
    CHECK(y.shape() == c.shape);
    const Moments m = moments(y);
    CHECK(std::fabs(m.mean - c.mean) < 0.05 + 0.02 * std::fabs(c.mean));
    CHECK(std::fabs(m.var - c.var) < 0.1 * c.var);
  }
}

TEST_CASE("uniform values stay in [low, high)") {
  const Tensor y = run_node(node("RandomUniform", {}, {"y"}, {attr("low", -1.0f), attr("high", 1.0f), attr("shape", std::vector<int64_t>{5000})}), {})[0].tensor();
  for (float v : y.to_vector<float>()) REQUIRE((v >= -1.0f && v < 1.0f));
}

TEST_CASE("a seed makes every run the same; without one the process generator moves on") {
  const Node seeded = node("RandomNormal", {}, {"y"}, {attr("seed", 3.0f), attr("shape", std::vector<int64_t>{16})});
  const Node unseeded = node("RandomNormal", {}, {"y"}, {attr("shape", std::vector<int64_t>{16})});
  const Node other_seed = node("RandomNormal", {}, {"y"}, {attr("seed", 4.0f), attr("shape", std::vector<int64_t>{16})});
  const Value a = run_node(seeded, {})[0], b = run_node(seeded, {})[0];
  check_equal(a, b);
  CHECK_FALSE(compare_values(a, run_node(other_seed, {})[0]).equal);
  CHECK_FALSE(compare_values(run_node(unseeded, {})[0], run_node(unseeded, {})[0]).equal);
}

TEST_CASE("Multinomial samples by softmax of the logits") {
  // log-probabilities of [0.1, 0.6, 0.3] for two identical rows
  const float l0 = std::log(0.1f), l1 = std::log(0.6f), l2 = std::log(0.3f);
  const Tensor y = run_node(node("Multinomial", {"x"}, {"y"}, {attr("sample_size", int64_t(5000)), attr("dtype", int64_t(7)), attr("seed", 1.0f)}),
                            {tensor<float>({2, 3}, {l0, l1, l2, l0, l1, l2})}, 22)[0].tensor();
  CHECK(y.dtype() == DType::Int64);
  CHECK(y.shape() == Shape{2, 5000});
  std::vector<double> freq(3, 0);
  for (int64_t v : y.to_vector<int64_t>()) {
    REQUIRE((v >= 0 && v < 3));
    freq[size_t(v)] += 1.0 / 10000;
  }
  CHECK(freq[0] == doctest::Approx(0.1).epsilon(0.2));
  CHECK(freq[1] == doctest::Approx(0.6).epsilon(0.05));
  CHECK(freq[2] == doctest::Approx(0.3).epsilon(0.1));
  // int32 by default
  CHECK(run_node(node("Multinomial", {"x"}, {"y"}), {tensor<float>({1, 2}, {0, 0})}, 22)[0].tensor().dtype() == DType::Int32);
}

TEST_CASE("random ops refuse bad arguments") {
  // a probability outside [0, 1]
  CHECK_THROWS_WITH_AS(run_node(node("Bernoulli", {"x"}, {"y"}), {tensor<float>({1}, {1.5f})}, 22), doctest::Contains("outside [0, 1]"), Error);
  // an integer dtype for RandomUniform
  CHECK_THROWS_AS(run_node(node("RandomUniform", {}, {"y"}, {attr("dtype", int64_t(7)), attr("shape", std::vector<int64_t>{1})}), {}), Error);
  // Multinomial needs a 2-D input
  CHECK_THROWS_WITH_AS(run_node(node("Multinomial", {"x"}, {"y"}), {tensor<float>({3}, {0, 0, 0})}, 22), doctest::Contains("must be 2-D"), Error);
}

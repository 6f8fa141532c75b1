// LayerNormalization: normalised axes, optional B and statistics outputs, broadcast Scale,
// stash_type, narrow floats.
#include <cmath>

#include "test_util.h"

using namespace refeval;
using namespace refeval::testing;
using build::attr;
using build::node;

TEST_CASE("LayerNormalization over the last axis with Mean and InvStdDev") {
  const Tensor x = tensor<float>({2, 2}, {1, 3, -1, -1});
  const float inv = 1 / std::sqrt(1 + 1e-5f), inv0 = 1 / std::sqrt(1e-5f);
  auto out = run_node(node("LayerNormalization", {"x", "s", "b"}, {"y", "m", "i"}),
                      {x, tensor<float>({2}, {1, 2}), tensor<float>({2}, {0, 10})}, 17);
  check_equal(out[0], tensor<float>({2, 2}, {-inv, 10 + 2 * inv, 0, 10}));
  check_equal(out[1], tensor<float>({2, 1}, {2, -1}));
  check_equal(out[2], tensor<float>({2, 1}, {inv, inv0}));
}

TEST_CASE("axis 0 normalises everything; Scale broadcasts; no B") {
  const Tensor x = tensor<double>({2, 2}, {0, 2, 0, 2});
  auto out = run_node(node("LayerNormalization", {"x", "s"}, {"y"}, {attr("axis", int64_t(0)), attr("epsilon", 0.0f)}),
                      {x, tensor<double>({1}, {3})}, 17);
  check_equal(out[0], tensor<double>({2, 2}, {-3, 3, -3, 3}));
}

TEST_CASE("stash_type sets the statistics' type; float16 input") {
  const Tensor x = tensor<float16>({2}, {float16(1.f), float16(3.f)});
  auto out = run_node(node("LayerNormalization", {"x", "s"}, {"y", "m"}, {attr("stash_type", int64_t(11)), attr("epsilon", 0.0f)}),
                      {x, tensor<float16>({2}, {float16(1.f), float16(1.f)})}, 17);
  check_equal(out[0], tensor<float16>({2}, {float16(-1.f), float16(1.f)}));
  check_equal(out[1], tensor<double>({1}, {2}));
}

TEST_CASE("LayerNormalization errors") {
  const Tensor x = tensor<float>({2, 2}, {1, 2, 3, 4});
  CHECK_THROWS_AS(run_node(node("LayerNormalization", {"x", "s"}, {"y"}), {x, tensor<float>({3}, {1, 1, 1})}, 17), Error);
  CHECK_THROWS_AS(run_node(node("LayerNormalization", {"x", "s"}, {"y"}, {attr("axis", int64_t(2))}), {x, tensor<float>({2}, {1, 1})}, 17), Error);
  CHECK_THROWS_AS(run_node(node("LayerNormalization", {"x", "s"}, {"y"}, {attr("stash_type", int64_t(7))}), {x, tensor<float>({2}, {1, 1})}, 17), Error);
}

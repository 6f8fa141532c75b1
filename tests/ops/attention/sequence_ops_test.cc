// CausalConvWithState, LinearAttention and FlexAttention on hand-sized inputs (RotaryEmbedding:
// rotary_embedding_test.cc).
#include <cmath>

#include "refeval/builder.h"
#include "test_util.h"

using namespace refeval;
using namespace refeval::testing;
using namespace refeval::build;

TEST_CASE("CausalConvWithState convolves over past state and input") {
  const Tensor x = tensor<float>({1, 1, 3}, {1, 2, 3}), w = tensor<float>({1, 1, 2}, {1, 1});
  auto out = run_node(node("CausalConvWithState", {"x", "w"}, {"y", "state"}), {x, w}, 27);
  check_equal(out[0], tensor<float>({1, 1, 3}, {1, 3, 5}));
  check_equal(out[1], tensor<float>({1, 1, 1}, {3}));
  auto with_past = run_node(node("CausalConvWithState", {"x", "w", "b", "p"}, {"y", "state"}),
                            {x, w, tensor<float>({1}, {10}), tensor<float>({1, 1, 1}, {4})}, 27);
  check_equal(with_past[0], tensor<float>({1, 1, 3}, {15, 13, 15}));
  auto silu = run_node(node("CausalConvWithState", {"x", "w"}, {"y", "state"}, {attr("activation", "silu")}),
                       {tensor<float>({1, 1, 1}, {0}), tensor<float>({1, 1, 1}, {1})}, 27);
  check_equal(silu[0], tensor<float>({1, 1, 1}, {0}));
  CHECK_THROWS_AS(run_node(node("CausalConvWithState", {"x", "w"}, {"y", "s"}, {attr("activation", "gelu")}), {x, w}, 27), Error);
}

TEST_CASE("LinearAttention update rules") {
  // One head, d_k = d_v = 1, q = k = v = 1 at both steps, scale 1.
  const Tensor one2 = tensor<float>({1, 2, 1}, {1, 1});
  auto base = [](const char* rule) {
    return std::vector<Attribute>{attr("q_num_heads", int64_t(1)), attr("kv_num_heads", int64_t(1)), attr("scale", 1.0f),
                                  attr("update_rule", rule)};
  };
  auto lin = run_node(node("LinearAttention", {"q", "k", "v"}, {"o", "s"}, base("linear")), {one2, one2, one2}, 27);
  check_equal(lin[0], tensor<float>({1, 2, 1}, {1, 2}));
  check_equal(lin[1], tensor<float>({1, 1, 1, 1}, {2}));
  // delta with beta 1: S = S + (v - S k) k keeps S at 1.
  auto delta = run_node(node("LinearAttention", {"q", "k", "v", "", "", "beta"}, {"o", "s"}, base("delta")),
                        {one2, one2, one2, Value(), Value(), one2}, 27);
  check_equal(delta[0], tensor<float>({1, 2, 1}, {1, 1}));
  // gated with log-decay ln(0.5) and past state 4: S = 2 + 1 = 3, then 1.5 + 1 = 2.5.
  const float g = std::log(0.5f);
  auto gated = run_node(node("LinearAttention", {"q", "k", "v", "past", "decay"}, {"o", "s"}, base("gated")),
                        {one2, one2, one2, tensor<float>({1, 1, 1, 1}, {4}), tensor<float>({1, 2, 1}, {g, g})}, 27);
  check_equal(gated[0], tensor<float>({1, 2, 1}, {3, 2.5f}));
  CHECK_THROWS_WITH_AS(run_node(node("LinearAttention", {"q", "k", "v"}, {"o", "s"}, base("gated")), {one2, one2, one2}, 27),
                       doctest::Contains("needs the decay input"), Error);
}

namespace {

// FlexAttention lives in ai.onnx.preview (version 1); its bodies use ai.onnx opset 26.
Values run_flex(const Node& n, const Tensor& q, const Tensor& k, const Tensor& v) {
  auto ev = ReferenceEvaluator::from_node(n, {{"", 26}, {"ai.onnx.preview", 1}});
  return ev.run({}, {{"q", q}, {"k", k}, {"v", v}});
}

}  // namespace

TEST_CASE("FlexAttention runs score_mod and prob_mod bodies") {
  const Tensor q = tensor<float>({1, 1, 1, 1}, {1}), k = tensor<float>({1, 1, 2, 1}, {0, 10}), v = tensor<float>({1, 1, 2, 1}, {1, 3});
  // score_mod: scores - scores = 0 everywhere, so attention is uniform.
  Graph zero = graph("zero", {node("Sub", {"s", "s"}, {"z"})}, {tensor_info_unknown_rank("s", DType::Float)},
                     {tensor_info_unknown_rank("z", DType::Float)});
  Graph twice = graph("twice", {node("Add", {"p", "p"}, {"z"})}, {tensor_info_unknown_rank("p", DType::Float)},
                      {tensor_info_unknown_rank("z", DType::Float)});
  // scale 0 makes every score 0 as well.
  auto plain = run_flex(node("FlexAttention", {"q", "k", "v"}, {"y"}, {attr("scale", 0.0f)}, "", "ai.onnx.preview"), q, k, v);
  check_equal(plain[0], tensor<float>({1, 1, 1, 1}, {2}));
  auto mod = run_flex(node("FlexAttention", {"q", "k", "v"}, {"y"}, {attr("score_mod", zero), attr("prob_mod", twice)}, "",
                           "ai.onnx.preview"),
                      q, k, v);
  check_equal(mod[0], tensor<float>({1, 1, 1, 1}, {4}));
}

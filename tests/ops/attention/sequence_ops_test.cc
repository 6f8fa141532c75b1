// RotaryEmbedding, CausalConvWithState, LinearAttention and FlexAttention on hand-sized inputs.
#include <cmath>

#include "refeval/builder.h"
#include "test_util.h"

using namespace refeval;
using namespace refeval::testing;
using namespace refeval::build;

TEST_CASE("RotaryEmbedding rotates pairs by the cached angles") {
  // A quarter turn (cos 0, sin 1) maps (x1, x2) to (-x2, x1); features past the rotary dim stay.
  const Tensor cos_c = tensor<float>({1, 1, 1}, {0}), sin_c = tensor<float>({1, 1, 1}, {1});
  struct Case { const char* what; std::vector<Attribute> attrs; Tensor x; Tensor expected; };
  const Case cases[] = {
      {"halves", {}, tensor<float>({1, 1, 1, 2}, {1, 2}), tensor<float>({1, 1, 1, 2}, {-2, 1})},
      {"3-D with num_heads", {attr("num_heads", int64_t(1))}, tensor<float>({1, 1, 2}, {1, 2}), tensor<float>({1, 1, 2}, {-2, 1})},
      {"partial rotary dim", {attr("rotary_embedding_dim", int64_t(2))}, tensor<float>({1, 1, 1, 4}, {1, 2, 3, 4}),
       tensor<float>({1, 1, 1, 4}, {-2, 1, 3, 4})},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    auto out = run_node(node("RotaryEmbedding", {"x", "c", "s"}, {"y"}, c.attrs), {c.x, cos_c, sin_c});
    check_equal(out[0], c.expected);
  }
  // Interleaved pairs with position_ids picking row 1 of a (2, 1) cache.
  auto out = run_node(node("RotaryEmbedding", {"x", "c", "s", "p"}, {"y"}, {attr("interleaved", int64_t(1))}),
                      {tensor<float>({1, 1, 1, 2}, {1, 2}), tensor<float>({2, 1}, {1, 0}), tensor<float>({2, 1}, {0, 1}),
                       tensor<int64_t>({1, 1}, {1})});
  check_equal(out[0], tensor<float>({1, 1, 1, 2}, {-2, 1}));
  CHECK_THROWS_WITH_AS(run_node(node("RotaryEmbedding", {"x", "c", "s", "p"}, {"y"}),
                                {tensor<float>({1, 1, 1, 2}, {1, 2}), tensor<float>({2, 1}, {1, 0}), tensor<float>({2, 1}, {0, 1}),
                                 tensor<int64_t>({1, 1}, {2})}),
                       doctest::Contains("position id 2 is outside [0, 2)"), Error);
}

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

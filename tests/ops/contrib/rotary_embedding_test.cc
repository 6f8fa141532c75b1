// com.microsoft RotaryEmbedding: halves vs interleaved pairs, start position vs per-token
// position_ids, partial rotary dim, 3-D and 4-D layouts, agreement with ONNX RotaryEmbedding-23,
// and errors.
#include "test_util.h"

using namespace refeval;
using namespace refeval::testing;
using build::attr;
using build::node;

namespace {
// Position 0 is the identity; position 1 turns pair 0 by 90 degrees and leaves pair 1 alone.
const Tensor kCos = tensor<float>({2, 2}, {1, 1, 0, 1}), kSin = tensor<float>({2, 2}, {0, 0, 1, 0});
Value rope(const Tensor& x, const Tensor& pos, std::vector<Attribute> attrs, const Tensor& c = kCos, const Tensor& s = kSin) {
  return run_node(node("RotaryEmbedding", {"x", "pos", "cos", "sin"}, {"y"}, std::move(attrs), "rope", "com.microsoft"), {x, pos, c, s})[0];
}
}  // namespace

TEST_CASE("RotaryEmbedding: which values pair up, and where positions come from") {
  const Tensor x = tensor<float>({1, 1, 4}, {1, 2, 3, 4}), start1 = tensor<int64_t>({1}, {1});
  struct Case { const char* what; Tensor x, pos; std::vector<Attribute> attrs; Tensor c, s, expected; };
  const Case cases[] = {
      // halves: pair 0 is (x0, x2) = (1, 3) -> (-3, 1)
      {"halves", x, start1, {}, kCos, kSin, tensor<float>({1, 1, 4}, {-3, 2, 1, 4})},
      // interleaved: pair 0 is (x0, x1) = (1, 2) -> (-2, 1)
      {"interleaved", x, start1, {attr("interleaved", int64_t(1))}, kCos, kSin, tensor<float>({1, 1, 4}, {-2, 1, 3, 4})},
      {"position 0 is the identity", x, tensor<int64_t>({1}, {0}), {}, kCos, kSin, x},
      // rotary dim 2 of a head of 4: (x0, x1) turns, x2 and x3 pass through
      {"partial rotary", x, start1, {attr("rotary_embedding_dim", int64_t(2)), attr("num_heads", int64_t(1))},
       tensor<float>({2, 1}, {1, 0}), tensor<float>({2, 1}, {0, 1}), tensor<float>({1, 1, 4}, {-2, 1, 3, 4})},
      // (B, N, S, h) with per-token positions (B, S) = [[1, 0]]: token 0 turns, token 1 does not
      {"4-D input, position_ids (B, S)", tensor<float>({1, 1, 2, 4}, {1, 2, 3, 4, 1, 2, 3, 4}), tensor<int64_t>({1, 2}, {1, 0}), {},
       kCos, kSin, tensor<float>({1, 1, 2, 4}, {-3, 2, 1, 4, 1, 2, 3, 4})},
      // start position 0 over two tokens: token 1 gets position 1; two heads of 4 in the hidden dim
      {"3-D, two heads, start 0", tensor<float>({1, 2, 8}, {1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3, 4, 5, 6, 7, 8}), tensor<int64_t>({1}, {0}), {},
       kCos, kSin, tensor<float>({1, 2, 8}, {1, 2, 3, 4, 5, 6, 7, 8, -3, 2, 1, 4, -7, 6, 5, 8})},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    check_equal(rope(c.x, c.pos, c.attrs, c.c, c.s), c.expected);
  }
}

TEST_CASE("RotaryEmbedding equals ONNX RotaryEmbedding-23 on the same caches") {
  std::vector<float> xv(2 * 2 * 3 * 4), cv(5 * 2), sv(5 * 2);
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = std::sin(0.37f * float(i));
  for (size_t i = 0; i < cv.size(); ++i) { cv[i] = std::cos(0.5f * float(i)); sv[i] = std::sin(0.5f * float(i)); }
  const Tensor x = tensor<float>({2, 2, 3, 4}, xv), c = tensor<float>({5, 2}, cv), s = tensor<float>({5, 2}, sv);
  const Tensor pos = tensor<int64_t>({2, 3}, {0, 1, 2, 4, 3, 2});
  for (int64_t inter : {0, 1}) {
    CAPTURE(inter);
    const Value onnx = run_node(node("RotaryEmbedding", {"x", "c", "s", "p"}, {"y"}, {attr("interleaved", inter)}), {x, c, s, pos}, 23)[0];
    check_equal(rope(x, pos, {attr("interleaved", inter)}, c, s), onnx);
  }
}

TEST_CASE("RotaryEmbedding errors name the problem") {
  const Tensor x = tensor<float>({1, 1, 4}, {1, 2, 3, 4});
  CHECK_THROWS_WITH_AS(rope(x, tensor<int64_t>({1}, {2}), {}), doctest::Contains("position 2 is outside the cos/sin caches' 2 rows"), Error);
  CHECK_THROWS_WITH_AS(rope(x, tensor<int64_t>({1}, {0}), {}, tensor<float>({2, 3}, {1, 1, 1, 1, 1, 1}),
                            tensor<float>({2, 3}, {0, 0, 0, 0, 0, 0})),
                       doctest::Contains("input's hidden size 4 is not a multiple of the head size 6"), Error);
  CHECK_THROWS_WITH_AS(rope(x, tensor<int64_t>({1}, {0}), {attr("rotary_embedding_dim", int64_t(2))}), doctest::Contains("num_heads is required"), Error);
  CHECK_THROWS_WITH_AS(rope(x, tensor<int64_t>({1, 2}, {0, 0}), {}), doctest::Contains("position_ids has shape (1, 2), expected (1, 1)"), Error);
}

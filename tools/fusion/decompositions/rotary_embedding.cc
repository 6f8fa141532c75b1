// Rotary position embedding, com.microsoft RotaryEmbedding (v1) and ONNX RotaryEmbedding (23).
// For each position p and each pair (x1, x2) of the first rotary_embedding_dim features of a
// head (halves of the rotary part, or neighbours when interleaved):
//   x1' = x1 cos[p] - x2 sin[p],  x2' = x2 cos[p] + x1 sin[p]; the other features pass through.
// Positions: position_ids [B, S], or (com.microsoft) a single start offset p0 giving p0 + s.
// Inputs: com.microsoft (input, position_ids, cos_cache, sin_cache); ONNX (X, cos_cache,
// sin_cache, position_ids?), where without position_ids the caches are already [B, S, d/2].
#include <fmt/format.h>

#include "decompositions/decompositions.h"

namespace refeval::fusion {
namespace {

using build::attr;

struct RotaryInputs {
  size_t positions, cos, sin;
};

// cos or sin rows for every (b, s), shaped [B or 1, S, 1, d/2] (broadcast over heads).
std::string rows(GraphWriter& w, const RotaryInputs& in, size_t cache, int64_t S) {
  std::string r;
  if (!w.has(in.positions)) {
    r = w.in(cache);  // already [B, S, d/2]
  } else if (w.sample(in.positions).size() == 1) {
    std::vector<int64_t> offsets(static_cast<size_t>(S));
    for (int64_t s = 0; s < S; ++s) offsets[size_t(s)] = s;
    const std::string start = w.op("Reshape", {w.in(in.positions), w.ints({1, 1})});
    r = w.op("Gather", {w.in(cache), w.op("Add", {start, w.op("Reshape", {w.ints(offsets), w.ints({1, S})})})});
  } else {
    r = w.op("Gather", {w.in(cache), w.in(in.positions)});
  }
  return w.op("Unsqueeze", {r, w.ints({2})});
}

void rotary(GraphWriter& w, const RotaryInputs& in) {
  const Tensor& x = w.sample(0);
  const int64_t half = w.sample(in.cos).dim(w.sample(in.cos).rank() - 1);
  const int64_t rotary_dim = w.attr_int("rotary_embedding_dim", 0) > 0 ? w.attr_int("rotary_embedding_dim", 0) : 2 * half;
  if (w.attr_int("is_packed_batching", 0)) w.unsupported("is_packed_batching is not decomposed");
  if (w.attr_float("scale", 1.0f) != 1.0f) w.unsupported("scale other than 1 is not decomposed");
  if (rotary_dim != 2 * half) w.unsupported("the caches must hold rotary_embedding_dim / 2 columns");
  // Work in [B, S, N, h].
  int64_t B = 0, S = 0, N = w.attr_int("num_heads", 0), h = 0;
  std::string bsnh;
  if (x.rank() == 3) {
    B = x.dim(0), S = x.dim(1);
    if (N <= 0) N = x.dim(2) / rotary_dim;
    if (N <= 0 || x.dim(2) % N != 0) w.unsupported("the hidden size does not split into num_heads heads");
    h = x.dim(2) / N;
    bsnh = w.op("Reshape", {w.in(0), w.ints({B, S, N, h})});
  } else if (x.rank() == 4) {
    B = x.dim(0), N = x.dim(1), S = x.dim(2), h = x.dim(3);
    bsnh = w.op("Transpose", {w.in(0)}, {attr("perm", std::vector<int64_t>{0, 2, 1, 3})});
  } else {
    w.unsupported("input must be 3-D or 4-D");
  }
  if (rotary_dim > h) w.unsupported(fmt::format("rotary_embedding_dim {} exceeds the head size {}", rotary_dim, h));
  const std::string cos = rows(w, in, in.cos, S), sin = rows(w, in, in.sin, S);
  const auto parts = w.ops("Split", {bsnh, w.ints({rotary_dim, h - rotary_dim})}, 2, {attr("axis", int64_t(3))});
  std::string rotated;
  auto turn = [&](const std::string& x1, const std::string& x2, const std::string& c, const std::string& s) {
    return std::pair{w.op("Sub", {w.op("Mul", {x1, c}), w.op("Mul", {x2, s})}),
                     w.op("Add", {w.op("Mul", {x2, c}), w.op("Mul", {x1, s})})};
  };
  if (w.attr_int("interleaved", 0)) {
    const std::string pairs = w.op("Reshape", {parts[0], w.ints({B, S, N, half, 2})});
    const auto xs = w.ops("Split", {pairs, w.ints({1, 1})}, 2, {attr("axis", int64_t(4))});
    const std::string last = w.ints({4});
    const auto [a, b] = turn(xs[0], xs[1], w.op("Unsqueeze", {cos, last}), w.op("Unsqueeze", {sin, last}));
    rotated = w.op("Reshape", {w.op("Concat", {a, b}, {attr("axis", int64_t(4))}), w.ints({B, S, N, rotary_dim})});
  } else {
    const auto xs = w.ops("Split", {parts[0], w.ints({half, half})}, 2, {attr("axis", int64_t(3))});
    const auto [a, b] = turn(xs[0], xs[1], cos, sin);
    rotated = w.op("Concat", {a, b}, {attr("axis", int64_t(3))});
  }
  const std::string out = w.op("Concat", {rotated, parts[1]}, {attr("axis", int64_t(3))});
  if (x.rank() == 3) w.output(0, w.op("Reshape", {out, w.ints(x.shape())}));
  else w.output(0, w.op("Transpose", {out}, {attr("perm", std::vector<int64_t>{0, 2, 1, 3})}));
}

}  // namespace

void decompose_rotary_embedding(GraphWriter& w, int64_t) { rotary(w, {1, 2, 3}); }
void decompose_onnx_rotary_embedding(GraphWriter& w, int64_t) { rotary(w, {3, 1, 2}); }

}  // namespace refeval::fusion

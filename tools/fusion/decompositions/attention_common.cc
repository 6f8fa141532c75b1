#include "decompositions/attention_common.h"

#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "refeval/dispatch.h"

namespace refeval::fusion {

using build::attr;

std::string split_heads(GraphWriter& w, const std::string& x, int64_t batch, int64_t length, int64_t heads) {
  const std::string r = w.op("Reshape", {x, w.ints({batch, length, heads, -1})});
  return w.op("Transpose", {r}, {attr("perm", std::vector<int64_t>{0, 2, 1, 3})});
}

std::string merge_heads(GraphWriter& w, const std::string& x, int64_t batch, int64_t length) {
  const std::string t = w.op("Transpose", {x}, {attr("perm", std::vector<int64_t>{0, 2, 1, 3})});
  return w.op("Reshape", {t, w.ints({batch, length, -1})});
}

std::string causal_keep(GraphWriter& w, int64_t queries, int64_t keys, int64_t past) {
  std::vector<bool> keep(size_t(queries * keys));
  for (int64_t i = 0; i < queries; ++i)
    for (int64_t j = 0; j < keys; ++j) keep[size_t(i * keys + j)] = j <= past + i;
  return w.constant(Tensor::from_vector<bool>({queries, keys}, keep));
}

std::string padding_keep(GraphWriter& w, size_t input, int64_t batch, int64_t queries, int64_t keys) {
  const Tensor& m = w.sample(input);
  const std::string mask = w.in(input);
  const DType t = m.dtype();
  const std::string zero = w.constant(visit<Ints>(t, [&]<class T>() { return Tensor::scalar<T>(T(0)); }));
  if (m.rank() == 1 && m.dim(0) == batch) {
    std::vector<int64_t> positions(static_cast<size_t>(keys));
    for (int64_t j = 0; j < keys; ++j) positions[size_t(j)] = j;
    const std::string j = w.op("Cast", {w.ints(positions)}, {attr("to", int64_t(t))});
    const std::string lengths = w.op("Unsqueeze", {mask, w.ints({1})});
    return w.op("Reshape", {w.op("Less", {j, lengths}), w.ints({batch, 1, 1, keys})});
  }
  const std::string nonzero = w.op("Not", {w.op("Equal", {mask, zero})});
  if (m.rank() == 2 && m.dim(0) == batch && m.dim(1) == keys) return w.op("Reshape", {nonzero, w.ints({batch, 1, 1, keys})});
  if (m.rank() == 3 && m.dim(0) == batch && m.dim(1) == queries && m.dim(2) == keys)
    return w.op("Unsqueeze", {nonzero, w.ints({1})});
  w.unsupported(fmt::format("mask of shape {} (lengths [B], raw [B, T] or [B, S, T] are decomposed)", shape_to_string(m.shape())));
}

std::string attend(GraphWriter& w, const std::string& q, const std::string& k, const std::string& v, int64_t head_size,
                   const AttentionParams& p) {
  const DType t = w.dtype(0);
  const double scale = p.scale != 0 ? p.scale : 1.0 / std::sqrt(double(head_size));
  const std::string kt = w.op("Transpose", {k}, {attr("perm", std::vector<int64_t>{0, 1, 3, 2})});
  std::string scores = w.op("Mul", {w.op("MatMul", {q, kt}), w.scalar(scale, t)});
  if (!p.attention_bias.empty()) scores = w.op("Add", {scores, p.attention_bias});
  if (!p.padding.empty())
    scores = w.op("Add", {scores, w.op("Where", {p.padding, w.scalar(0.0, t), w.scalar(p.mask_filter_value, t)})});
  if (!p.causal.empty()) scores = w.op("Where", {p.causal, scores, w.scalar(-double(std::numeric_limits<float>::max()), t)});
  return w.op("MatMul", {w.op("Softmax", {scores}, {attr("axis", int64_t(-1))}), v});
}

}  // namespace refeval::fusion

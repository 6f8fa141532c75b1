// com.microsoft SparseAttention (v1): Phi-3-small's block-sparse causal attention with grouped
// key/value heads and a shared KV cache.
//   inputs: query (B, S, N h), or packed QKV (B, S, (N + 2 Nkv) h) with per token q | k | v
//           heads when key and value are absent; key, value (B, S, Nkv h); past_key, past_value
//           (B, Nkv, M, h), the cache buffers; block_row_indices int32 (layouts, max_blocks + 1)
//           and block_col_indices int32 (layouts, max_nnz), the CSR block mask of each layout;
//           total_sequence_length int32 (1); key_total_sequence_lengths int32 (B);
//           cos_cache?, sin_cache? (R, rot / 2) when do_rotary = 1
//   outputs: output (B, S, N h); present_key, present_value (B, Nkv, M, h)
//   attributes: num_heads, kv_num_heads, sparse_block_size (required), scale (0 = 1/sqrt(h)),
//               do_rotary (0), rotary_interleaved (0)
// Batch b holds L_b = key_total_sequence_lengths[b] keys. The call is the prompt when
// total_sequence_length == S: past_b = 0 and query i sits at position i. Otherwise past_b =
// L_b - S, query i sits at past_b + i (one token or a chunk). The new keys and values (rotated
// first when do_rotary) are written to cache rows [past_b, past_b + S); other rows are kept.
// Query head n reads KV head n / (N / Nkv) and block layout n % layouts. A query at position p
// (block row r = p / sparse_block_size) sees key j when j <= p, j < L_b, and j's block is one of
// the columns block_col_indices[l, block_row_indices[l, r] .. block_row_indices[l, r + 1]):
//   out = softmax_j(scale * q . k_j) . v_j over the keys it sees.
// A query whose block row lists none of the keys before it weighs those keys equally (ORT sets
// the scores of hidden keys to the lowest float, so such a row softmaxes to a uniform average).
// RoPE (do_rotary) turns the first rot values of each q and k head at position p as
// RotaryEmbedding does (halves, or adjacent pairs when rotary_interleaved).
// Checks beyond ORT's: each block row lists distinct increasing columns <= the row (a lower
// triangular layout, which is what makes ORT's dense-row shortcuts exact). Not required, unlike
// ORT's CPU kernel: head sizes multiple of 8 (16 with RoPE) and sparse_block_size in {16 .. 128}.
// Where ORT 1.30's CPU kernel differs: it needs past and present to share one buffer, and it
// reads its softmax buffer at the wrong offsets when some L_b < total_sequence_length (padded
// batches); refeval computes the contract above for those.
#include <cmath>

#include "contrib_common.h"
#include "refeval/registry.h"

namespace refeval::ops::contrib {
namespace {

class SparseAttention : public OpRun {
 public:
  using Types = TypeList<float, float16, bfloat16>;
  explicit SparseAttention(const NodeContext& ctx)
      : heads_(ctx.required<int64_t>("num_heads")),
        kv_heads_(ctx.required<int64_t>("kv_num_heads")),
        block_(ctx.required<int64_t>("sparse_block_size")),
        scale_(ctx.attr<float>("scale", 0.0f)),
        rotary_(ctx.attr<int64_t>("do_rotary", 0) != 0),
        interleaved_(ctx.attr<int64_t>("rotary_interleaved", 0) != 0) {
    if (heads_ <= 0 || kv_heads_ <= 0 || heads_ % kv_heads_ != 0)
      ctx.fail(fmt::format("num_heads {} must be a positive multiple of kv_num_heads {}", heads_, kv_heads_));
    if (block_ <= 0) ctx.fail(fmt::format("sparse_block_size must be positive, got {}", block_));
  }

  Values run(const Values& in, RunContext&) override {
    const Tensor& query = input_tensor(in, 0);
    const DType dtype = query.dtype();
    require_types<Types>(dtype);
    require_rank(query, 3, 3, "query");
    const int64_t B = query.dim(0), S = query.dim(1), N = heads_, Nkv = kv_heads_;

    // q (B, S, N, h), k and v (B, S, Nkv, h)
    std::vector<double> q, k, v;
    int64_t h = 0;
    if (!has_value(in, 1) && !has_value(in, 2)) {
      if (query.dim(2) % (N + 2 * Nkv) != 0)
        fail_runtime(fmt::format("packed QKV query has width {}, not a multiple of num_heads + 2 * kv_num_heads = {}",
                                 query.dim(2), N + 2 * Nkv));
      h = query.dim(2) / (N + 2 * Nkv);
      const std::vector<double> qkv = to_doubles(query);
      for (int64_t t = 0; t < B * S; ++t) {
        auto row = qkv.begin() + t * (N + 2 * Nkv) * h;
        q.insert(q.end(), row, row + N * h);
        k.insert(k.end(), row + N * h, row + (N + Nkv) * h);
        v.insert(v.end(), row + (N + Nkv) * h, row + (N + 2 * Nkv) * h);
      }
    } else {
      if (!has_value(in, 1) || !has_value(in, 2)) fail_runtime("key and value must be given together");
      if (query.dim(2) % N != 0) fail_runtime(fmt::format("query's hidden size {} is not a multiple of num_heads {}", query.dim(2), N));
      h = query.dim(2) / N;
      const Tensor& key = input_tensor(in, 1);
      const Tensor& value = input_tensor(in, 2);
      require_dtype(key, dtype, "key");
      require_dtype(value, dtype, "value");
      require_shape(key, {B, S, Nkv * h}, "key");
      require_shape(value, {B, S, Nkv * h}, "value");
      q = to_doubles(query), k = to_doubles(key), v = to_doubles(value);
    }

    const Tensor& past_key = input_tensor(in, 3);
    const Tensor& past_value = input_tensor(in, 4);
    require_dtype(past_key, dtype, "past_key");
    require_dtype(past_value, dtype, "past_value");
    require_rank(past_key, 4, 4, "past_key");
    const int64_t M = past_key.dim(2);
    require_shape(past_key, {B, Nkv, M, h}, "past_key");
    require_shape(past_value, {B, Nkv, M, h}, "past_value");

    const Tensor& rows_t = input_tensor(in, 5);
    const Tensor& cols_t = input_tensor(in, 6);
    require_dtype(rows_t, DType::Int32, "block_row_indices");
    require_dtype(cols_t, DType::Int32, "block_col_indices");
    require_rank(rows_t, 2, 2, "block_row_indices");
    const int64_t layouts = rows_t.dim(0), max_blocks = rows_t.dim(1) - 1;
    if (layouts < 1 || max_blocks < 1 || N % layouts != 0)
      fail_runtime(fmt::format("block_row_indices has shape {}, expected (layouts, max_blocks + 1) with layouts dividing "
                               "num_heads {} and max_blocks >= 1", shape_to_string(rows_t.shape()), N));
    require_rank(cols_t, 2, 2, "block_col_indices");
    if (cols_t.dim(0) != layouts)
      fail_runtime(fmt::format("block_col_indices has shape {}, expected ({}, max_nnz)", shape_to_string(cols_t.shape()), layouts));
    const std::vector<int64_t> rows = to_int64s(rows_t, "block_row_indices"), cols = to_int64s(cols_t, "block_col_indices");
    check_layouts(rows, cols, layouts, max_blocks, cols_t.dim(1));

    require_dtype(input_tensor(in, 7), DType::Int32, "total_sequence_length");
    if (input_tensor(in, 7).size() != 1) fail_runtime("total_sequence_length must have one element");
    const int64_t total = input_tensor(in, 7).data<int32_t>()[0];
    if (total < S || total > M || total > max_blocks * block_)
      fail_runtime(fmt::format("total_sequence_length {} is outside [{}, min({} cache rows, {} = max_blocks * "
                               "sparse_block_size)]", total, S, M, max_blocks * block_));
    const Tensor& lengths_t = input_tensor(in, 8);
    require_dtype(lengths_t, DType::Int32, "key_total_sequence_lengths");
    require_shape(lengths_t, {B}, "key_total_sequence_lengths");
    const std::vector<int64_t> lengths = to_int64s(lengths_t, "key_total_sequence_lengths");
    const bool prompt = total == S;
    std::vector<int64_t> past(static_cast<size_t>(B));
    for (int64_t b = 0; b < B; ++b) {
      const int64_t L = lengths[size_t(b)];
      if (prompt ? (L < 1 || L > S) : (L < S || L > total))
        fail_runtime(fmt::format("key_total_sequence_lengths[{}] = {} is outside [{}, {}]", b, L, prompt ? 1 : S, prompt ? S : total));
      past[size_t(b)] = prompt ? 0 : L - S;
    }

    if (rotary_) rotate(in, q, k, past, B, S, h, total, dtype);

    std::vector<double> kc = to_doubles(past_key), vc = to_doubles(past_value);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t i = 0; i < S; ++i)
        for (int64_t g = 0; g < Nkv; ++g) {
          const int64_t src = ((b * S + i) * Nkv + g) * h, dst = ((b * Nkv + g) * M + past[size_t(b)] + i) * h;
          std::copy_n(k.begin() + src, h, kc.begin() + dst);
          std::copy_n(v.begin() + src, h, vc.begin() + dst);
        }

    const double scale = scale_ != 0.0f ? double(scale_) : 1.0 / std::sqrt(double(h));
    std::vector<double> out(size_t(B * S * N * h), 0.0), score, weight;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t n = 0; n < N; ++n) {
        const int64_t g = n / (N / Nkv), l = n % layouts;
        const double* kb = &kc[size_t((b * Nkv + g) * M * h)];
        const double* vb = &vc[size_t((b * Nkv + g) * M * h)];
        for (int64_t i = 0; i < S; ++i) {
          const int64_t pos = past[size_t(b)] + i, r = pos / block_, keys = std::min(pos + 1, lengths[size_t(b)]);
          const double* qi = &q[size_t(((b * S + i) * N + n) * h)];
          // which of the causal keys the block row shows
          std::vector<char> seen(size_t(keys), 0);
          for (int64_t e = rows[size_t(l * (max_blocks + 1) + r)]; e < rows[size_t(l * (max_blocks + 1) + r + 1)]; ++e)
            for (int64_t j = cols[size_t(l * cols_t.dim(1) + e)] * block_, end = std::min(j + block_, keys); j < end; ++j)
              seen[size_t(j)] = 1;
          const bool none = std::find(seen.begin(), seen.end(), 1) == seen.end();
          score.assign(size_t(keys), 0.0);
          double top = -INFINITY;
          for (int64_t j = 0; j < keys; ++j) {
            if (!seen[size_t(j)] && !none) continue;
            double dot = 0;
            for (int64_t d = 0; d < h; ++d) dot += qi[d] * kb[j * h + d];
            score[size_t(j)] = none ? 0.0 : dot * scale;
            top = std::max(top, score[size_t(j)]);
          }
          weight.assign(size_t(keys), 0.0);
          double sum = 0;
          for (int64_t j = 0; j < keys; ++j)
            if (seen[size_t(j)] || none) sum += weight[size_t(j)] = std::exp(score[size_t(j)] - top);
          double* o = &out[size_t(((b * S + i) * N + n) * h)];
          for (int64_t j = 0; j < keys; ++j)
            for (int64_t d = 0; d < h; ++d) o[d] += weight[size_t(j)] / sum * vb[j * h + d];
        }
      }
    return {from_doubles(dtype, {B, S, N * h}, out), from_doubles(dtype, {B, Nkv, M, h}, kc),
            from_doubles(dtype, {B, Nkv, M, h}, vc)};
  }

 private:
  // CSR sanity: offsets non-decreasing within [0, max_nnz]; each block row's columns increase and
  // stay at or below the row.
  static void check_layouts(const std::vector<int64_t>& rows, const std::vector<int64_t>& cols, int64_t layouts,
                            int64_t max_blocks, int64_t max_nnz) {
    for (int64_t l = 0; l < layouts; ++l)
      for (int64_t r = 0; r < max_blocks; ++r) {
        const int64_t lo = rows[size_t(l * (max_blocks + 1) + r)], hi = rows[size_t(l * (max_blocks + 1) + r + 1)];
        if (lo < 0 || lo > hi || hi > max_nnz)
          fail_runtime(fmt::format("block_row_indices of layout {} has offsets {}, {} at block row {}; expected 0 <= "
                                   "offsets non-decreasing <= {}", l, lo, hi, r, max_nnz));
        for (int64_t e = lo; e < hi; ++e) {
          const int64_t c = cols[size_t(l * max_nnz + e)];
          if (c < 0 || c > r || (e > lo && c <= cols[size_t(l * max_nnz + e - 1)]))
            fail_runtime(fmt::format("block_col_indices of layout {} lists column {} in block row {}; expected increasing "
                                     "columns in [0, {}] (a causal layout)", l, c, r, r));
        }
      }
  }

  // RoPE on the new query and key heads at positions past_b + i.
  void rotate(const Values& in, std::vector<double>& q, std::vector<double>& k, const std::vector<int64_t>& past,
              int64_t B, int64_t S, int64_t h, int64_t total, DType dtype) const {
    if (!has_value(in, 9) || !has_value(in, 10)) fail_runtime("do_rotary=1 needs cos_cache and sin_cache");
    const Tensor& cos_t = input_tensor(in, 9);
    const Tensor& sin_t = input_tensor(in, 10);
    require_dtype(cos_t, dtype, "cos_cache");
    require_dtype(sin_t, dtype, "sin_cache");
    require_rank(cos_t, 2, 2, "cos_cache");
    require_shape(sin_t, cos_t.shape(), "sin_cache");
    const int64_t half = cos_t.dim(1);
    if (half < 1 || 2 * half > h)
      fail_runtime(fmt::format("cos_cache has shape {}; expected 1 to {} columns (head size / 2)", shape_to_string(cos_t.shape()), h / 2));
    if (cos_t.dim(0) < total)
      fail_runtime(fmt::format("cos_cache has {} rows, fewer than total_sequence_length {}", cos_t.dim(0), total));
    const std::vector<double> c = to_doubles(cos_t), s = to_doubles(sin_t);
    auto turn = [&](std::vector<double>& x, int64_t heads) {
      for (int64_t b = 0; b < B; ++b)
        for (int64_t i = 0; i < S; ++i)
          for (int64_t n = 0; n < heads; ++n) {
            double* head = &x[size_t(((b * S + i) * heads + n) * h)];
            const int64_t pos = past[size_t(b)] + i;
            for (int64_t e = 0; e < half; ++e) {
              double& x1 = head[interleaved_ ? 2 * e : e];
              double& x2 = head[interleaved_ ? 2 * e + 1 : e + half];
              const double cv = c[size_t(pos * half + e)], sv = s[size_t(pos * half + e)], a = x1, bb = x2;
              x1 = a * cv - bb * sv, x2 = bb * cv + a * sv;
            }
          }
    };
    turn(q, heads_);
    turn(k, kv_heads_);
  }

  int64_t heads_, kv_heads_, block_;
  float scale_;
  bool rotary_, interleaved_;
};

}  // namespace

void register_sparse_attention(Registry& reg) { reg.add("com.microsoft", "SparseAttention", {1}, make<SparseAttention>); }

}  // namespace refeval::ops::contrib

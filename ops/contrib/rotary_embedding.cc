// com.microsoft RotaryEmbedding (v1): rotary position embedding (RoPE) of query or key heads.
//   input (B, S, N*h) or (B, N, S, h); position_ids int64 (1) = first position, positions
//   p0 + s, or (B, S); cos_cache / sin_cache (max_positions, rot / 2).
// The first rot = rotary_embedding_dim (default: the head size) values of each head rotate in
// pairs (x1, x2) -> (x1 cos - x2 sin, x2 cos + x1 sin) with cos/sin of row `position`, column i:
//   interleaved = 0: x1 = x[i], x2 = x[i + rot/2]      (halves, GPT-NeoX / Llama style)
//   interleaved = 1: x1 = x[2i], x2 = x[2i + 1]        (adjacent pairs, GPT-J style)
// The remaining h - rot values pass through. With a 3-D input and rotary_embedding_dim set,
// num_heads is required; otherwise the head size is twice the cache width. `scale` only matters
// to ORT's GPU cache update and has no effect here. float32 computes in float (as ORT and the
// unfused graph do), the other types in double.
#include <algorithm>

#include "contrib_common.h"
#include "refeval/registry.h"

namespace refeval::ops::contrib {
namespace {

class RotaryEmbedding : public OpRun {
 public:
  using Types = FloatTypes;
  explicit RotaryEmbedding(const NodeContext& ctx)
      : interleaved_(ctx.attr<int64_t>("interleaved", 0) != 0),
        heads_(ctx.attr<int64_t>("num_heads", 0)),
        rot_(ctx.attr<int64_t>("rotary_embedding_dim", 0)) {
    ctx.ignore("scale");
    if (ctx.attr<int64_t>("is_packed_batching", 0) != 0) ctx.fail("is_packed_batching=1 is not supported");
    if (heads_ < 0 || rot_ < 0 || rot_ % 2 != 0) ctx.fail("num_heads must be >= 0 and rotary_embedding_dim even and >= 0");
    if (rot_ > 0 && heads_ == 0) ctx.fail("num_heads is required when rotary_embedding_dim is set");
  }

  Values run(const Values& in, RunContext&) override {
    const Tensor& x = input_tensor(in, 0);
    const Tensor& cos_t = input_tensor(in, 2);
    const Tensor& sin_t = input_tensor(in, 3);
    require_types<Types>(x.dtype());
    require_rank(x, 3, 4, "input");
    require_rank(cos_t, 2, 2, "cos_cache");
    require_dtype(cos_t, x.dtype(), "cos_cache");
    require_dtype(sin_t, x.dtype(), "sin_cache");
    require_shape(sin_t, cos_t.shape(), "sin_cache");
    const bool bnsh = x.rank() == 4;
    const int64_t B = x.dim(0), S = bnsh ? x.dim(2) : x.dim(1);
    const int64_t h = bnsh ? x.dim(3) : (rot_ > 0 ? x.dim(2) / heads_ : 2 * cos_t.dim(1));
    const int64_t N = bnsh ? x.dim(1) : (h == 0 ? 0 : x.dim(2) / h);
    const int64_t rot = rot_ > 0 ? rot_ : h, half = rot / 2, max_pos = cos_t.dim(0);
    if (!bnsh && N * h != x.dim(2))
      fail_runtime(fmt::format("input's hidden size {} is not a multiple of the head size {}", x.dim(2), h));
    if (rot > h) fail_runtime(fmt::format("rotary_embedding_dim {} exceeds the head size {}", rot, h));
    if (cos_t.dim(1) != half)
      fail_runtime(fmt::format("cos_cache has shape {}, expected {} columns (rotary dim / 2)", shape_to_string(cos_t.shape()), half));

    const std::vector<int64_t> pos_ids = to_int64s(input_tensor(in, 1), "position_ids");
    const bool start_only = input_tensor(in, 1).rank() <= 1 && input_tensor(in, 1).size() == 1;
    if (!start_only) require_shape(input_tensor(in, 1), {B, S}, "position_ids");

    // The row of the caches each (b, t) reads, checked before any work.
    std::vector<int64_t> rows(size_t(B * S));
    for (int64_t b = 0; b < B; ++b)
      for (int64_t t = 0; t < S; ++t) {
        const int64_t p = start_only ? pos_ids[0] + t : pos_ids[size_t(b * S + t)];
        if (p < 0 || p >= max_pos) fail_runtime(fmt::format("position {} is outside the cos/sin caches' {} rows", p, max_pos));
        rows[size_t(b * S + t)] = p;
      }
    const Geometry g{B, S, N, h, half, bnsh};
    if (x.dtype() == DType::Float) {
      Tensor y(DType::Float, x.shape());
      rotate<float>(g, rows, x.data<float>(), cos_t.data<float>(), sin_t.data<float>(), y.data<float>());
      return {y};
    }
    const std::vector<double> c = to_doubles(cos_t), s = to_doubles(sin_t), src = to_doubles(x);
    std::vector<double> y(src.size());
    rotate<double>(g, rows, src.data(), c.data(), s.data(), y.data());
    return {from_doubles(x.dtype(), x.shape(), y)};
  }

 private:
  struct Geometry {
    int64_t B, S, N, h, half;
    bool bnsh;
  };
  // y = x with the pairs of every head rotated by the cache rows rows[b * S + t]. In C: float32
  // computes in float, each product rounded as the unfused Mul, Mul, Add graph (and ORT's kernel)
  // rounds it; the other types in double, rounded once by the caller. Only the cache rows in use
  // are read (a cache holds thousands of positions; a decode step uses one).
  template <class C>
  void rotate(const Geometry& g, const std::vector<int64_t>& rows, const C* x, const C* cos, const C* sin, C* y) const {
    const int64_t h = g.h, half = g.half;
    std::copy_n(x, g.B * g.N * g.S * h, y);  // the values past the rotary dim pass through
    for (int64_t b = 0; b < g.B; ++b)
      for (int64_t t = 0; t < g.S; ++t) {
        const C* c = cos + rows[size_t(b * g.S + t)] * half;
        const C* s = sin + rows[size_t(b * g.S + t)] * half;
        for (int64_t n = 0; n < g.N; ++n) {
          const int64_t base = g.bnsh ? ((b * g.N + n) * g.S + t) * h : ((b * g.S + t) * g.N + n) * h;
          const C* xi = x + base;
          C* yo = y + base;
          if (interleaved_) {
            for (int64_t i = 0; i < half; ++i) {
              yo[2 * i] = xi[2 * i] * c[i] - xi[2 * i + 1] * s[i];
              yo[2 * i + 1] = xi[2 * i + 1] * c[i] + xi[2 * i] * s[i];
            }
          } else {
            for (int64_t i = 0; i < half; ++i) {
              yo[i] = xi[i] * c[i] - xi[i + half] * s[i];
              yo[i + half] = xi[i + half] * c[i] + xi[i] * s[i];
            }
          }
        }
      }
  }

  bool interleaved_;
  int64_t heads_, rot_;
};

}  // namespace

void register_rotary_embedding(Registry& reg) { reg.add("com.microsoft", "RotaryEmbedding", {1}, make<RotaryEmbedding>); }

}  // namespace refeval::ops::contrib

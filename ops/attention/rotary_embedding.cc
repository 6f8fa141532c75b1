// RotaryEmbedding (opset 23), inputs (X, cos_cache, sin_cache, position_ids?): rotates the first
// rotary_embedding_dim features of each head (0 = all of them; the rest pass through) by
// position-dependent angles: (x1, x2) -> (cos x1 - sin x2, sin x1 + cos x2). Pairs are the two
// halves of the rotated part, or neighbours (x[2i], x[2i+1]) when interleaved. X is (batch, heads,
// seq, head_size), or (batch, seq, heads * head_size) with the num_heads attribute. The caches are
// (max_position, dim / 2) indexed by position_ids (batch, seq) when it is given, else (batch, seq,
// dim / 2). As in the function body (Gather, then Mul), position ids may be negative (counting from
// the end of the cache) and position_ids or a 3-D cache of batch 1 (or seq 1) broadcasts.
#include <fmt/format.h>

#include "attention_common.h"
#include "refeval/registry.h"

namespace refeval::ops {
namespace {

class RotaryEmbedding : public OpRun {
 public:
  using Types = TypeList<float, float16, bfloat16>;
  explicit RotaryEmbedding(const NodeContext& ctx)
      : interleaved_(ctx.attr<int64_t>("interleaved", 0) != 0),
        num_heads_(ctx.attr<int64_t>("num_heads", 0)),
        rotary_dim_(ctx.attr<int64_t>("rotary_embedding_dim", 0)) {
    if (num_heads_ < 0 || rotary_dim_ < 0) ctx.fail("num_heads and rotary_embedding_dim must not be negative");
  }

  Values run(const Values& in, RunContext& ctx) override {
    const Tensor &x = input_tensor(in, 0), &cs = input_tensor(in, 1), &sn = input_tensor(in, 2);
    if (x.rank() != 3 && x.rank() != 4) ctx.fail(fmt::format("input must be 3-D or 4-D, got {}", shape_to_string(x.shape())));
    if (cs.dtype() != x.dtype() || sn.dtype() != x.dtype()) ctx.fail("cos_cache and sin_cache must have the input's type");
    const bool r4 = x.rank() == 4;
    const int64_t B = x.dim(0), S = r4 ? x.dim(2) : x.dim(1);
    int64_t NH, HS;
    if (r4) {
      NH = x.dim(1), HS = x.dim(3);
    } else {
      if (num_heads_ <= 0) ctx.fail("3-D input needs the num_heads attribute");
      if (x.dim(2) % num_heads_) ctx.fail("hidden size is not a multiple of num_heads");
      NH = num_heads_, HS = x.dim(2) / num_heads_;
    }
    const int64_t rd = rotary_dim_ == 0 ? HS : rotary_dim_;
    if (rd > HS || rd % 2) ctx.fail(fmt::format("rotary_embedding_dim {} must be even and at most head_size {}", rd, HS));
    const int64_t half = rd / 2;
    std::vector<int64_t> pos(size_t(B * S));  // per (b, s): row of the caches
    if (has_value(in, 3)) {
      const Tensor& p = input_tensor(in, 3);
      if (p.dtype() != DType::Int64 || p.rank() != 2) ctx.fail("position_ids must be int64 of shape (batch, seq)");
      if (cs.rank() != 2 || cs.dim(1) != half || sn.shape() != cs.shape())
        ctx.fail(fmt::format("caches must have shape (max_position, {}), got {}", half, shape_to_string(cs.shape())));
      const std::vector<int64_t> st = broadcast_strides(p.shape(), {B, S}, "position_ids");
      const int64_t* pv = p.data<int64_t>();
      const int64_t rows = cs.dim(0);
      for (int64_t b = 0; b < B; ++b)
        for (int64_t s = 0; s < S; ++s) {
          const int64_t v = pv[b * st[0] + s * st[1]];
          if (v < -rows || v >= rows) ctx.fail(fmt::format("position id {} is outside [{}, {})", v, -rows, rows));
          pos[size_t(b * S + s)] = v < 0 ? v + rows : v;
        }
    } else {
      if (cs.rank() != 3 || cs.dim(2) != half || sn.shape() != cs.shape())
        ctx.fail(fmt::format("without position_ids the caches must have shape ({}, {}, {}), got {}", B, S, half,
                             shape_to_string(cs.shape())));
      const std::vector<int64_t> st = broadcast_strides(cs.shape(), {B, S, half}, "cos_cache");
      for (int64_t b = 0; b < B; ++b)
        for (int64_t s = 0; s < S; ++s) pos[size_t(b * S + s)] = (b * st[0] + s * st[1]) / half;
    }
    Tensor y(x.dtype(), x.shape());
    visit<Types>(x.dtype(), [&]<class T>() {
      const T *px = x.data<T>(), *pc = cs.data<T>(), *ps = sn.data<T>();
      T* py = y.data<T>();
      for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < NH; ++h)
          for (int64_t s = 0; s < S; ++s) {
            const int64_t off = r4 ? ((b * NH + h) * S + s) * HS : ((b * S + s) * NH + h) * HS;
            const T* xi = px + off;
            T* yo = py + off;
            const int64_t row = pos[size_t(b * S + s)] * half;
            for (int64_t i = 0; i < half; ++i) {
              const int64_t i1 = interleaved_ ? 2 * i : i, i2 = interleaved_ ? 2 * i + 1 : i + half;
              const float c = float(pc[row + i]), sv = float(ps[row + i]);
              const float x1 = float(xi[i1]), x2 = float(xi[i2]);
              yo[i1] = from_compute<T>(c * x1 - sv * x2);
              yo[i2] = from_compute<T>(sv * x1 + c * x2);
            }
            for (int64_t i = rd; i < HS; ++i) yo[i] = xi[i];
          }
    });
    return {y};
  }

 private:
  bool interleaved_;
  int64_t num_heads_, rotary_dim_;
};

}  // namespace

void register_rotary_embedding(Registry& reg) { reg.add("", "RotaryEmbedding", {23}, make<RotaryEmbedding>); }

}  // namespace refeval::ops

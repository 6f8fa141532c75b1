// com.microsoft MRotaryEmbedding (v1): multimodal RoPE (M-RoPE) of Qwen2-VL .. Qwen3.5, where
// each token has three positions, temporal, height and width.
//   input (B, S, N*h) (num_heads required) or (B, N, S, h); position_ids int64 (3, B, S), the
//   T, H and W streams; cos_cache / sin_cache (max_positions, rot / 2)
// Column c of the rot / 2 cos/sin columns is read at the position of stream a(c), chosen by
// mrope_section = [st, sh, sw] (st + sh + sw = rot / 2) and mrope_layout:
//   0 sectioned:   c < st -> T, then sh columns of H, then sw columns of W (Qwen2-VL, Qwen2.5-VL)
//   1 interleaved: T, except c = 1, 4, 7, .. < 3 sh -> H and c = 2, 5, 8, .. < 3 sw -> W (Qwen3-VL)
// and multiplied by `scale` (default 1). The first rot = rotary_embedding_dim (default: the head
// size) values of each head then rotate as in RotaryEmbedding, in pairs (x1, x2) ->
// (x1 cos - x2 sin, x2 cos + x1 sin): x1 = x[c], x2 = x[c + rot/2], or x1 = x[2c], x2 = x[2c + 1]
// when interleaved; the other h - rot values pass through. Positions must lie within the caches'
// rows. ORT 1.30's CPU kernel also refuses S > max_positions unless is_packed_batching = 1 (its
// only use of that attribute); refeval does not, and ignores is_packed_batching.
#include "contrib_common.h"
#include "refeval/registry.h"

namespace refeval::ops::contrib {
namespace {

class MRotaryEmbedding : public OpRun {
 public:
  using Types = TypeList<float, float16, bfloat16>;
  explicit MRotaryEmbedding(const NodeContext& ctx)
      : interleaved_(ctx.attr<int64_t>("interleaved", 0) != 0),
        heads_(ctx.attr<int64_t>("num_heads", 0)),
        rot_(ctx.attr<int64_t>("rotary_embedding_dim", 0)),
        scale_(ctx.attr<float>("scale", 1.0f)),
        layout_(ctx.attr<int64_t>("mrope_layout", 0)),
        section_(ctx.required<std::vector<int64_t>>("mrope_section")) {
    ctx.ignore("is_packed_batching");
    if (heads_ < 0 || rot_ < 0 || rot_ % 2 != 0) ctx.fail("num_heads must be >= 0 and rotary_embedding_dim even and >= 0");
    if (rot_ > 0 && heads_ == 0) ctx.fail("num_heads is required when rotary_embedding_dim is set");
    if (layout_ != 0 && layout_ != 1) ctx.fail(fmt::format("mrope_layout must be 0 (sectioned) or 1 (interleaved), got {}", layout_));
    if (section_.size() != 3 || section_[0] < 0 || section_[1] < 0 || section_[2] < 0)
      ctx.fail("mrope_section must be 3 non-negative integers (T, H, W)");
  }

  Values run(const Values& in, RunContext&) override {
    const Tensor& x = input_tensor(in, 0);
    const Tensor& pos_t = input_tensor(in, 1);
    const Tensor& cos_t = input_tensor(in, 2);
    const Tensor& sin_t = input_tensor(in, 3);
    require_types<Types>(x.dtype());
    require_rank(x, 3, 4, "input");
    require_dtype(cos_t, x.dtype(), "cos_cache");
    require_dtype(sin_t, x.dtype(), "sin_cache");
    require_rank(cos_t, 2, 2, "cos_cache");
    require_shape(sin_t, cos_t.shape(), "sin_cache");
    const bool bnsh = x.rank() == 4;
    const int64_t B = x.dim(0), S = bnsh ? x.dim(2) : x.dim(1);
    if (!bnsh && (heads_ == 0 || x.dim(2) % heads_ != 0))
      fail_runtime(fmt::format("a 3-D input needs num_heads dividing its hidden size {} (num_heads = {})", x.dim(2), heads_));
    const int64_t N = bnsh ? x.dim(1) : heads_, h = bnsh ? x.dim(3) : x.dim(2) / heads_;
    const int64_t rot = rot_ > 0 ? rot_ : h, half = rot / 2, max_pos = cos_t.dim(0);
    if (rot > h || rot % 2 != 0) fail_runtime(fmt::format("the rotary dimension {} must be even and at most the head size {}", rot, h));
    if (cos_t.dim(1) != half)
      fail_runtime(fmt::format("cos_cache has shape {}, expected {} columns (rotary dim / 2)", shape_to_string(cos_t.shape()), half));
    if (section_[0] + section_[1] + section_[2] != half)
      fail_runtime(fmt::format("mrope_section sums to {}, expected rotary dim / 2 = {}", section_[0] + section_[1] + section_[2], half));
    require_dtype(pos_t, DType::Int64, "position_ids");
    require_shape(pos_t, {3, B, S}, "position_ids");
    const std::vector<int64_t> pos = to_int64s(pos_t, "position_ids");
    for (size_t i = 0; i < pos.size(); ++i)
      if (pos[i] < 0 || pos[i] >= max_pos)
        fail_runtime(fmt::format("position_ids holds {} (stream {}), outside the cos/sin caches' {} rows", pos[i],
                                 i / size_t(B * S), max_pos));

    const std::vector<int> stream = streams(half);
    const std::vector<double> c = to_doubles(cos_t), s = to_doubles(sin_t);
    std::vector<double> y = to_doubles(x), cv(static_cast<size_t>(half)), sv(static_cast<size_t>(half));
    const std::vector<double> src = y;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t t = 0; t < S; ++t) {
        for (int64_t i = 0; i < half; ++i) {  // this token's cos/sin row, column by column
          const int64_t p = pos[size_t((stream[size_t(i)] * B + b) * S + t)];
          cv[size_t(i)] = c[size_t(p * half + i)] * scale_, sv[size_t(i)] = s[size_t(p * half + i)] * scale_;
        }
        for (int64_t n = 0; n < N; ++n) {
          const int64_t base = bnsh ? ((b * N + n) * S + t) * h : ((b * S + t) * N + n) * h;
          for (int64_t i = 0; i < half; ++i) {
            const int64_t i1 = base + (interleaved_ ? 2 * i : i), i2 = base + (interleaved_ ? 2 * i + 1 : i + half);
            y[size_t(i1)] = src[size_t(i1)] * cv[size_t(i)] - src[size_t(i2)] * sv[size_t(i)];
            y[size_t(i2)] = src[size_t(i2)] * cv[size_t(i)] + src[size_t(i1)] * sv[size_t(i)];
          }
        }
      }
    return {from_doubles(x.dtype(), x.shape(), y)};
  }

 private:
  // The position stream (0 T, 1 H, 2 W) of each of the half cos/sin columns.
  std::vector<int> streams(int64_t half) const {
    std::vector<int> a(size_t(half), 0);
    if (layout_ == 0) {
      for (int64_t c = section_[0]; c < section_[0] + section_[1]; ++c) a[size_t(c)] = 1;
      for (int64_t c = section_[0] + section_[1]; c < half; ++c) a[size_t(c)] = 2;
    } else {
      for (int axis = 1; axis < 3; ++axis)
        for (int64_t c = axis; c < 3 * section_[size_t(axis)] && c < half; c += 3) a[size_t(c)] = axis;
    }
    return a;
  }

  bool interleaved_;
  int64_t heads_, rot_;
  float scale_;
  int64_t layout_;
  std::vector<int64_t> section_;
};

}  // namespace

void register_m_rotary_embedding(Registry& reg) { reg.add("com.microsoft", "MRotaryEmbedding", {1}, make<MRotaryEmbedding>); }

}  // namespace refeval::ops::contrib

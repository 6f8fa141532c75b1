// Transpose: permutes the axes; perm defaults to reversing them.
// When the input's innermost axis does not stay innermost, a row-by-row strided copy reads (or
// writes) one element per cache line; such transposes copy square tiles instead, each read and
// written while it sits in L1, and large ones split their tiles across threads (a copy: any split
// gives the same bits). With AVX2, 4-byte elements move as 8 x 8 blocks in registers (a decode
// step's K^T of the whole cache, every layer: 3-4x the element-wise copy).
#include <algorithm>

#include <immintrin.h>

#include "tensor_common.h"

#include "refeval/elementwise.h"
#include "refeval/isa.h"
#include "refeval/registry.h"
#include "refeval/threads.h"

namespace refeval::ops {
namespace {

// dst[c * dst_stride + r] = src[r * src_stride + c] for an 8 x 8 block of 4-byte elements.
__attribute__((target("avx2"))) void transpose_8x8(const uint32_t* src, int64_t src_stride, uint32_t* dst, int64_t dst_stride) {
  __m256 r[8], t[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(reinterpret_cast<const float*>(src + i * src_stride));
  for (int i = 0; i < 8; i += 2) t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]), t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  for (int i = 0; i < 8; i += 4) {
    r[i] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int i = 0; i < 4; ++i) {
    _mm256_storeu_ps(reinterpret_cast<float*>(dst + i * dst_stride), _mm256_permute2f128_ps(r[i], r[i + 4], 0x20));
    _mm256_storeu_ps(reinterpret_cast<float*>(dst + (i + 4) * dst_stride), _mm256_permute2f128_ps(r[i], r[i + 4], 0x31));
  }
}

// strided_copy(src, 0, strides, out_shape, dst) for a transpose (strides: the source stride of each
// output axis) whose source unit-stride axis moves away from the end: the output viewed as
// [outer..., A, ..., L] with A the axis of source stride 1 and L the last output axis (source
// stride sl), copied in kTile x kTile tiles of (A, L). Returns false for any other case. (Tiles two
// lines wide measured 2x slower on 1024 x 1024: 32 rows 4 KB apart collide in L1's sets.)
template <class W>
bool tiled_transpose(const W* src, const Shape& out_shape, const std::vector<int64_t>& strides, W* dst) {
  constexpr int64_t kTile = 64 / int64_t(sizeof(W)) < 8 ? 8 : 64 / int64_t(sizeof(W));  // a cache line wide
  // Output dims with their source strides, size-1 dims dropped, dims contiguous in the source merged.
  std::vector<int64_t> dims, st;
  for (size_t i = 0; i < out_shape.size(); ++i) {
    const int64_t n = out_shape[i], s = strides[i];
    if (n == 0) return false;
    if (n == 1) continue;
    if (!dims.empty() && st.back() == s * n) { dims.back() *= n; st.back() = s; continue; }
    dims.push_back(n);
    st.push_back(s);
  }
  const size_t rank = dims.size();
  if (rank < 2 || st.back() == 1) return false;
  const size_t a = size_t(std::find(st.begin(), st.end(), int64_t(1)) - st.begin());
  if (a == rank) return false;
  const std::vector<int64_t> out_st = dense_strides(Shape(dims.begin(), dims.end()));
  const int64_t na = dims[a], nl = dims.back(), sl = st.back(), da = out_st[a];
  const int64_t a_tiles = (na + kTile - 1) / kTile, l_tiles = (nl + kTile - 1) / kTile;
  int64_t outer = 1;
  for (size_t d = 0; d + 1 < rank; ++d) if (d != a) outer *= dims[d];
  const bool blocks = sizeof(W) == 4 && kTile % 8 == 0 && active_isa() != Isa::Generic;
  // Work item: one (outer index, tile row of A); each writes its own part of dst.
  const int64_t items = outer * a_tiles, grain = std::max<int64_t>(1, kParallelElements / (kTile * nl));
  parallel_for(items, grain, [&](int64_t begin, int64_t end) {
    for (int64_t item = begin; item < end; ++item) {
      int64_t o = item / a_tiles, src_off = 0, dst_off = 0;
      for (size_t d = rank - 1; d-- > 0;) {
        if (d == a) continue;
        const int64_t i = o % dims[d];
        o /= dims[d];
        src_off += i * st[d];
        dst_off += i * out_st[d];
      }
      const int64_t i0 = (item % a_tiles) * kTile, i1 = std::min(na, i0 + kTile);
      for (int64_t jt = 0; jt < l_tiles; ++jt) {
        const int64_t j0 = jt * kTile, j1 = std::min(nl, j0 + kTile);
        if (blocks && i1 - i0 == kTile && j1 - j0 == kTile) {  // a whole tile: (kTile / 8)^2 blocks
          for (int64_t i = i0; i < i1; i += 8)
            for (int64_t j = j0; j < j1; j += 8)
              transpose_8x8(reinterpret_cast<const uint32_t*>(src + src_off + i + j * sl), sl,
                            reinterpret_cast<uint32_t*>(dst + dst_off + i * da + j), da);
          continue;
        }
        for (int64_t i = i0; i < i1; ++i) {
          const W* s = src + src_off + i;
          W* t = dst + dst_off + i * da;
          for (int64_t j = j0; j < j1; ++j) t[j] = s[j * sl];
        }
      }
    }
  });
  return true;
}

class Transpose : public OpRun {
 public:
  using Types = All;
  explicit Transpose(const NodeContext& ctx) : perm_(ctx.optional_attr<std::vector<int64_t>>("perm")) {}
  Values run(const Values& in, RunContext&) override {
    const Tensor& x = input_tensor(in, 0);
    const int64_t rank = int64_t(x.rank());
    std::vector<int64_t> perm(size_t(rank), 0);
    if (perm_) {
      if (int64_t(perm_->size()) != rank)
        fail_runtime(fmt::format("perm has {} entries for an input of rank {}", perm_->size(), rank));
      std::vector<bool> seen(size_t(rank), false);
      for (size_t i = 0; i < perm.size(); ++i) {
        const int64_t p = normalize_axis((*perm_)[i], rank, "perm entry");
        if (seen[size_t(p)]) fail_runtime("perm is not a permutation: repeated axis " + std::to_string(p));
        seen[size_t(p)] = true;
        perm[i] = p;
      }
    } else {
      for (int64_t i = 0; i < rank; ++i) perm[size_t(i)] = rank - 1 - i;
    }
    const std::vector<int64_t> in_st = dense_strides(x.shape());
    Shape out(perm.size());
    std::vector<int64_t> st(perm.size());
    for (size_t i = 0; i < perm.size(); ++i) out[i] = x.dim(size_t(perm[i])), st[i] = in_st[size_t(perm[i])];
    Tensor y(x.dtype(), out);
    visit_by_width(x.dtype(), [&]<class W>() {
      if (!tiled_transpose<W>(raw_as<W>(x), out, st, raw_as<W>(y))) strided_copy<W>(raw_as<W>(x), 0, st, out, raw_as<W>(y));
    });
    return {y};
  }

 private:
  std::optional<std::vector<int64_t>> perm_;
};

}  // namespace

void register_transpose(Registry& reg) {
  reg.add("", "Transpose", {1, 13, 21, 23, 24, 25}, make<Transpose>);
}

}  // namespace refeval::ops

// conv_by_panels (conv_common.h): Conv's product Y_g = W_g col on the in-order GEMM kernels
// (gemm_panels: AVX2 or AVX-512) with the im2col matrix `col` (rows: channel, then kernel tap;
// columns: output positions) never written out. The image's channels are first copied once into
// a zero-bordered buffer (the padding made real), so that every entry of col is a plain read; each
// 256 x 96 panel of col is then gathered into the kernel's strips of 16 columns just before the
// tiles read it: a strip's row is 16 output positions, two vector loads from one input row (a
// strided pair of loads and a shuffle at stride 2), blended when the 16 positions span output
// rows. A 1x1 kernel with unit strides and no padding has X itself as col (ImagePanels).
#include <immintrin.h>

#include <algorithm>
#include <vector>

#include "../linalg/linalg_common.h"
#include "conv_common.h"
#include "refeval/elementwise.h"
#include "refeval/threads.h"

namespace refeval::ops {
namespace {

constexpr int64_t kLanes = 16;  // columns of a strip (gemm_in_order_avx2's PanelSource layout)

class Im2colPanels final : public PanelSource {
 public:
  Im2colPanels(const ConvGeometry& g, int64_t channels) : g_(g), channels_(channels) {
    const size_t D = g.in.size(), L = D - 1;
    s_ = g.strides[L];
    on_ = g.out[L];
    pdims_.resize(D);
    pstride_.resize(D);
    for (size_t d = 0; d < D; ++d) pdims_[d] = g.in[d] + g.pad_begin[d] + g.pad_end[d];
    pstride_[L] = 1;
    for (size_t d = L; d-- > 0;) pstride_[d] = pstride_[d + 1] * pdims_[d + 1];
    plane_ = pstride_[0] * pdims_[0];
    // A strip's row reads lanes 0..15 from its first segment's start minus up to 15 strides, and
    // past its last one's end by as much (the lanes outside a segment are read, then blended away).
    slack_ = kLanes * s_ + 8;
    // One buffer per thread, kept from call to call (a fresh one faulted in zeroed pages every
    // call); its slack stays zero, set_image writes the rest.
    thread_local AlignedVector<float> buffer;
    const size_t size = size_t(2 * slack_ + channels * plane_);
    buffer.resize(std::max(buffer.size(), size));
    std::fill_n(buffer.begin(), slack_, 0.f);
    std::fill_n(buffer.begin() + slack_ + channels * plane_, slack_, 0.f);
    padded_ = buffer.data();
    // Row (c, tap) of col reads, for output position 0, the padded input at row_off_.
    const int64_t taps = g.kernel_size();
    row_off_.resize(size_t(channels * taps));
    std::vector<int64_t> k(D, 0);
    for (int64_t t = 0; t < taps; ++t) {
      int64_t off = 0;
      for (size_t d = 0; d < D; ++d) off += k[d] * g.dilations[d] * pstride_[d];
      for (int64_t c = 0; c < channels; ++c) row_off_[size_t(c * taps + t)] = slack_ + c * plane_ + off;
      for (size_t d = D; d-- > 0;) {
        if (++k[d] < g.kernel[d]) break;
        k[d] = 0;
      }
    }
  }

  // Writes the image's channels into the buffer, every padded element once: its border zero.
  // Channels are split among the threads (ResNet-18's first layers copy 0.9 MB per call).
  void set_image(const float* image) {
    parallel_for(channels_, std::max<int64_t>(1, kParallelElements / plane_), [&](int64_t first, int64_t last) {
      std::vector<int64_t> line(g_.in.size(), 0);
      for (int64_t c = first; c < last; ++c) set_channel(image + c * g_.in_size(), padded_ + slack_ + c * plane_, line);
    });
  }

  // i: the padded coordinates of the line (the last one unused), zeros on entry and again on
  // return (the count wraps after the channel's last line).
  void set_channel(const float* x, float* dst, std::vector<int64_t>& i) const {
    const size_t L = g_.in.size() - 1;
    const int64_t row = g_.in[L], before = g_.pad_begin[L], after = g_.pad_end[L], lines = plane_ / pdims_[L];
    for (int64_t r = 0; r < lines; ++r) {
      bool inside = true;
      for (size_t d = 0; d < L; ++d) inside = inside && i[d] >= g_.pad_begin[d] && i[d] < g_.pad_begin[d] + g_.in[d];
      if (inside) {
        std::fill_n(dst, before, 0.f);
        std::copy_n(x, row, dst + before);
        std::fill_n(dst + before + row, after, 0.f);
        x += row;
      } else {
        std::fill_n(dst, pdims_[L], 0.f);
      }
      dst += pdims_[L];
      for (size_t d = L; d-- > 0;) {
        if (++i[d] < pdims_[d]) break;
        i[d] = 0;
      }
    }
  }

  __attribute__((target("avx2,fma"))) void fill(int64_t k0, int64_t depth, int64_t n0, int64_t width,
                                                float* strips) const override {
    // A strip's lanes [l0, l1) are consecutive positions of one output row: lane l reads the
    // padded input at row_off + base + l * stride.
    struct Segment { int64_t base; int l0, l1; };
    const size_t L = g_.in.size() - 1;
    const int64_t nstrips = (width + kLanes - 1) / kLanes;
    std::vector<Segment> segs;
    std::vector<size_t> first(size_t(nstrips) + 1);
    for (int64_t t = 0; t < nstrips; ++t) {
      first[size_t(t)] = segs.size();
      const int64_t end = std::min(width, (t + 1) * kLanes);
      for (int64_t j = t * kLanes; j < end;) {
        const int64_t n = n0 + j, o = n % on_, count = std::min(on_ - o, end - j);
        int64_t q = n / on_, outer = 0;
        for (size_t d = L; d-- > 0;) {
          outer += (q % g_.out[d]) * g_.strides[d] * pstride_[d];
          q /= g_.out[d];
        }
        const int l0 = int(j - t * kLanes);
        segs.push_back({outer + (o - l0) * s_, l0, int(l0 + count)});
        j += count;
      }
    }
    first[size_t(nstrips)] = segs.size();
    const float* pad = padded_;
    const int64_t* rows = row_off_.data() + k0;
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i gather_index = _mm256_mullo_epi32(lane, _mm256_set1_epi32(int(s_)));
    const int64_t s = s_;
    // The 16 lanes from p, p + s, ... (two vectors).
    auto load = [&](const float* p, __m256& lo, __m256& hi) {
      if (s == 1) {
        lo = _mm256_loadu_ps(p), hi = _mm256_loadu_ps(p + 8);
      } else if (s == 2) {
        auto evens = [](const float* q) {
          const __m256 e = _mm256_shuffle_ps(_mm256_loadu_ps(q), _mm256_loadu_ps(q + 8), _MM_SHUFFLE(2, 0, 2, 0));
          return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(e), _MM_SHUFFLE(3, 1, 2, 0)));
        };
        lo = evens(p), hi = evens(p + 16);
      } else {
        lo = _mm256_i32gather_ps(p, gather_index, 4), hi = _mm256_i32gather_ps(p + 8 * s, gather_index, 4);
      }
    };
    for (int64_t t = 0; t < nstrips; ++t) {
      float* dst = strips + t * kLanes * depth;
      const Segment* sb = segs.data() + first[size_t(t)];
      const Segment* se = segs.data() + first[size_t(t) + 1];
      if (se - sb == 1 && sb->l0 == 0 && sb->l1 == kLanes) {
        const float* p = pad + sb->base;
        for (int64_t kk = 0; kk < depth; ++kk) {
          __m256 lo, hi;
          load(p + rows[kk], lo, hi);
          _mm256_storeu_ps(dst + kk * kLanes, lo);
          _mm256_storeu_ps(dst + kk * kLanes + 8, hi);
        }
        continue;
      }
      // Lanes of each segment: l0 <= lane < l1.
      __m256i mlo[kLanes], mhi[kLanes];
      for (const Segment* sg = sb; sg < se; ++sg) {
        const __m256i a = _mm256_set1_epi32(sg->l0 - 1), b = _mm256_set1_epi32(sg->l1);
        const __m256i hi_lane = _mm256_add_epi32(lane, _mm256_set1_epi32(8));
        mlo[sg - sb] = _mm256_and_si256(_mm256_cmpgt_epi32(lane, a), _mm256_cmpgt_epi32(b, lane));
        mhi[sg - sb] = _mm256_and_si256(_mm256_cmpgt_epi32(hi_lane, a), _mm256_cmpgt_epi32(b, hi_lane));
      }
      for (int64_t kk = 0; kk < depth; ++kk) {
        __m256 lo = _mm256_setzero_ps(), hi = _mm256_setzero_ps();
        for (const Segment* sg = sb; sg < se; ++sg) {
          __m256 vlo, vhi;
          load(pad + rows[kk] + sg->base, vlo, vhi);
          lo = _mm256_blendv_ps(lo, vlo, _mm256_castsi256_ps(mlo[sg - sb]));
          hi = _mm256_blendv_ps(hi, vhi, _mm256_castsi256_ps(mhi[sg - sb]));
        }
        _mm256_storeu_ps(dst + kk * kLanes, lo);
        _mm256_storeu_ps(dst + kk * kLanes + 8, hi);
      }
    }
  }

 private:
  const ConvGeometry& g_;
  int64_t channels_, s_ = 1, on_ = 1, plane_ = 0, slack_ = 0;
  std::vector<int64_t> pdims_, pstride_, row_off_;
  float* padded_;  // slack, channels_ padded images, slack
};

// The image itself as col (a 1x1 kernel with unit strides and no padding: col is X, channels by
// positions), copied into strips a panel at a time.
class ImagePanels final : public PanelSource {
 public:
  ImagePanels(const float* x, int64_t positions) : x_(x), n_(positions) {}
  void fill(int64_t k0, int64_t depth, int64_t n0, int64_t width, float* strips) const override {
    for (int64_t j = 0; j < width; j += kLanes) {
      const int64_t count = std::min(kLanes, width - j);
      float* dst = strips + j * depth;
      for (int64_t kk = 0; kk < depth; ++kk, dst += kLanes) std::copy_n(x_ + (k0 + kk) * n_ + n0 + j, count, dst);
    }
  }

 private:
  const float* x_;
  int64_t n_;
};

}  // namespace

bool conv_by_panels(const ConvGeometry& g, const float* x, const float* w, const float* b, float* y) {
  const int64_t Cg = g.C / g.group, Mg = g.M / g.group, K = g.kernel_size() * Cg, out_n = g.out_size();
  bool direct = true;
  for (size_t d = 0; d < g.in.size(); ++d)
    direct = direct && g.kernel[d] == 1 && g.strides[d] == 1 && g.pad_begin[d] == 0 && g.pad_end[d] == 0;
  for (size_t d = 0; d < g.in.size(); ++d)
    if (g.pad_begin[d] < 0 || g.pad_end[d] < 0) return false;  // (the padded copy would crop)
  if (g.in.empty() || !gemm_panels_suits(Mg, out_n, K)) return false;
  if (direct) {
    // Without AVX-512 gemm() reads X in place on the same in-order kernel; with it, gemm() of
    // many rows is OpenBLAS's, which re-packs the weights on every call.
    if (!in_order_avx512_suits()) return false;
    for (int64_t n = 0; n < g.N; ++n)
      for (int64_t grp = 0; grp < g.group; ++grp)
        gemm_panels(Mg, out_n, K, w + grp * Mg * K, ImagePanels(x + (n * g.C + grp * Cg) * out_n, out_n),
                    y + (n * g.M + grp * Mg) * out_n, b ? b + grp * Mg : nullptr);
    return true;
  }
  Im2colPanels panels(g, Cg);
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t grp = 0; grp < g.group; ++grp) {
      panels.set_image(x + (n * g.C + grp * Cg) * g.in_size());
      gemm_panels(Mg, out_n, K, w + grp * Mg * K, panels, y + (n * g.M + grp * Mg) * out_n, b ? b + grp * Mg : nullptr);
    }
  return true;
}

}  // namespace refeval::ops

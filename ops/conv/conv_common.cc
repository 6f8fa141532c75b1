// The shared attribute reading and output geometry of the conv family (conv_common.h).
#include "conv_common.h"

#include <fmt/format.h>

#include <algorithm>

#include "../linalg/linalg_common.h"

namespace refeval::ops {

ConvAttrs::ConvAttrs(const NodeContext& ctx, bool has_auto_pad)
    : pads(ctx.attr<std::vector<int64_t>>("pads", {})),
      strides(ctx.attr<std::vector<int64_t>>("strides", {})),
      dilations(ctx.attr<std::vector<int64_t>>("dilations", {})),
      kernel_shape(ctx.attr<std::vector<int64_t>>("kernel_shape", {})) {
  if (has_auto_pad) auto_pad = ctx.attr<std::string>("auto_pad", "NOTSET");
  group = ctx.attr<int64_t>("group", 1);
  if (auto_pad != "NOTSET" && auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER" && auto_pad != "VALID")
    ctx.fail("auto_pad must be NOTSET, SAME_UPPER, SAME_LOWER or VALID, got '" + auto_pad + "'");
  if (group < 1) ctx.fail(fmt::format("group must be >= 1, got {}", group));
  for (int64_t s : strides)
    if (s < 1) ctx.fail("strides must be >= 1");
  for (int64_t d : dilations)
    if (d < 1) ctx.fail("dilations must be >= 1");
  if (pads.size() % 2 != 0) ctx.fail("pads must hold a begin and an end value per spatial axis");
}

int64_t ConvGeometry::in_size() const { return shape_size(in); }
int64_t ConvGeometry::kernel_size() const { return shape_size(kernel); }
int64_t ConvGeometry::out_size() const { return shape_size(out); }

void resolve_auto_pad(const std::string& auto_pad, int64_t in, int64_t stride, int64_t ek, int64_t& pb, int64_t& pe) {
  if (auto_pad == "VALID") {
    pb = pe = 0;
  } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    const int64_t out = (in + stride - 1) / stride;
    const int64_t total = std::max<int64_t>(0, (out - 1) * stride + ek - in);
    const int64_t small = total / 2, big = total - small;
    pb = auto_pad == "SAME_UPPER" ? small : big;
    pe = auto_pad == "SAME_UPPER" ? big : small;
  }
}

ConvGeometry conv_geometry(const ConvAttrs& a, const Shape& x, const Shape& w) {
  if (x.size() < 2) fail_runtime(fmt::format("X must be [N, C, ...], got {}", shape_to_string(x)));
  if (w.size() != x.size())
    fail_runtime(fmt::format("W of shape {} must have the rank of X {}", shape_to_string(w), shape_to_string(x)));
  const size_t D = x.size() - 2;
  ConvGeometry g;
  g.N = x[0];
  g.C = x[1];
  g.M = w[0];
  g.group = a.group;
  g.in.assign(x.begin() + 2, x.end());
  g.kernel.assign(w.begin() + 2, w.end());
  if (!a.kernel_shape.empty() && a.kernel_shape != g.kernel)
    fail_runtime(fmt::format("kernel_shape {} differs from W's spatial shape {}", shape_to_string(a.kernel_shape),
                             shape_to_string(g.kernel)));
  if (g.C % g.group != 0 || g.M % g.group != 0 || w[1] * g.group != g.C)
    fail_runtime(fmt::format("X {} and W {} do not fit group={}: W must be [M, C/group, ...] with M divisible by group",
                             shape_to_string(x), shape_to_string(w), g.group));
  auto per_axis = [&](const std::vector<int64_t>& v, int64_t dflt, const char* name) {
    if (v.empty()) return std::vector<int64_t>(D, dflt);
    if (v.size() != D) fail_runtime(fmt::format("{} must have {} values, got {}", name, D, v.size()));
    return v;
  };
  g.strides = per_axis(a.strides, 1, "strides");
  g.dilations = per_axis(a.dilations, 1, "dilations");
  if (!a.pads.empty() && a.pads.size() != 2 * D) fail_runtime(fmt::format("pads must have {} values, got {}", 2 * D, a.pads.size()));
  g.pad_begin.assign(D, 0);
  g.pad_end.assign(D, 0);
  g.out.resize(D);
  for (size_t d = 0; d < D; ++d) {
    if (!a.pads.empty()) g.pad_begin[d] = a.pads[d], g.pad_end[d] = a.pads[d + D];
    const int64_t ek = (g.kernel[d] - 1) * g.dilations[d] + 1;
    resolve_auto_pad(a.auto_pad, g.in[d], g.strides[d], ek, g.pad_begin[d], g.pad_end[d]);
    const int64_t span = g.in[d] + g.pad_begin[d] + g.pad_end[d] - ek;
    if (span < 0)
      fail_runtime(fmt::format("the kernel ({} with dilation) is larger than the padded input ({}) on axis {}", ek,
                               g.in[d] + g.pad_begin[d] + g.pad_end[d], d));
    g.out[d] = span / g.strides[d] + 1;
  }
  return g;
}

}  // namespace refeval::ops

namespace refeval::ops {
namespace {

// The im2col matrix of one image's group (rows: channel, then kernel tap; columns: output
// positions), produced panel by panel. A panel's columns are cut into runs along the innermost
// output axis; each row then copies (or zeroes) every run whole, the input row it reads found
// from the run's outer output coordinates and the row's tap.
class Im2colPanels final : public PanelSource {
 public:
  explicit Im2colPanels(const ConvGeometry& g) : g_(g), D_(g.in.size()), L_(D_ - 1) {
    const int64_t taps = g.kernel_size();
    in_size_ = g.in_size();
    // Per tap: the input offset of output coordinate 0 on each axis, and on the innermost axis
    // the output range [lo, hi) that reads inside the input.
    offsets_.resize(size_t(taps) * D_);
    lo_.resize(size_t(taps));
    hi_.resize(size_t(taps));
    std::vector<int64_t> k(D_, 0);
    for (int64_t t = 0; t < taps; ++t) {
      for (size_t d = 0; d < D_; ++d) offsets_[size_t(t) * D_ + d] = k[d] * g.dilations[d] - g.pad_begin[d];
      const int64_t base = offsets_[size_t(t) * D_ + L_], s = g.strides[L_], n = g.in[L_];
      int64_t lo = base >= 0 ? 0 : (-base + s - 1) / s;
      int64_t hi = base >= n ? 0 : (n - 1 - base) / s + 1;
      hi = std::min(hi, g.out[L_]);
      lo_[size_t(t)] = std::min(lo, hi);
      hi_[size_t(t)] = hi;
      for (size_t d = D_; d-- > 0;) {
        if (++k[d] < g.kernel[d]) break;
        k[d] = 0;
      }
    }
    taps_ = taps;
  }
  void set_image(const float* x) { x_ = x; }

  void fill(int64_t k0, int64_t depth, int64_t n0, int64_t width, float* strips) const override {
    // Runs of the panel's columns along the innermost output axis: column j0, count, first output
    // coordinate on that axis, and the outer output coordinates times the strides.
    struct Run { int64_t j0, count, o_first; int64_t outer[kMaxOuter]; };
    Run runs_buf[16];
    std::vector<Run> runs_heap;
    const int64_t on = g_.out[L_];
    const int64_t max_runs = width / on + 2;
    Run* runs = runs_buf;
    if (max_runs > 16) {
      runs_heap.resize(size_t(max_runs));
      runs = runs_heap.data();
    }
    int64_t nruns = 0;
    for (int64_t j = 0; j < width;) {
      const int64_t n = n0 + j, o = n % on;
      Run& r = runs[nruns++];
      r.j0 = j;
      r.o_first = o;
      r.count = std::min(on - o, width - j);
      int64_t q = n / on;
      for (size_t d = L_; d-- > 0;) {
        r.outer[d] = (q % g_.out[d]) * g_.strides[d];
        q /= g_.out[d];
      }
      j += r.count;
    }
    const int64_t s = g_.strides[L_], in_n = g_.in[L_];
    for (int64_t kk = 0; kk < depth; ++kk) {
      const int64_t row = k0 + kk, c = row / taps_, t = row % taps_;
      const int64_t* off = offsets_.data() + size_t(t) * D_;
      const int64_t lo = lo_[size_t(t)], hi = hi_[size_t(t)];
      const float* xc = x_ + c * in_size_;
      float* dst_row = strips + kk * 16;
      // Writes count values from column j (src: stride st, or zeros when null).
      auto put = [&](int64_t j, int64_t count, const float* src, int64_t st) {
        while (count > 0) {
          float* d = dst_row + (j >> 4) * 16 * depth + (j & 15);
          const int64_t m = std::min(count, 16 - (j & 15));
          if (!src) for (int64_t i = 0; i < m; ++i) d[i] = 0.f;
          else if (st == 1) for (int64_t i = 0; i < m; ++i) d[i] = src[i];
          else for (int64_t i = 0; i < m; ++i) d[i] = src[i * st];
          if (src) src += m * st;
          j += m, count -= m;
        }
      };
      for (int64_t ri = 0; ri < nruns; ++ri) {
        const Run& r = runs[ri];
        bool inside = true;
        int64_t in_off = 0;
        for (size_t d = 0; d < L_; ++d) {
          const int64_t i = r.outer[d] + off[d];
          inside = inside && i >= 0 && i < g_.in[d];
          in_off = in_off * g_.in[d] + i;
        }
        if (!inside) { put(r.j0, r.count, nullptr, 0); continue; }
        const int64_t a = std::clamp(lo, r.o_first, r.o_first + r.count), b = std::clamp(hi, a, r.o_first + r.count);
        if (a > r.o_first) put(r.j0, a - r.o_first, nullptr, 0);
        if (b > a) put(r.j0 + a - r.o_first, b - a, xc + in_off * in_n + a * s + off[L_], s);
        if (r.o_first + r.count > b) put(r.j0 + b - r.o_first, r.o_first + r.count - b, nullptr, 0);
      }
    }
  }

 static constexpr size_t kMaxOuter = 3;  // 4-D convolutions at most: others take conv_by_gemm

 private:
  const ConvGeometry& g_;
  size_t D_, L_;
  int64_t in_size_ = 0, taps_ = 0;
  std::vector<int64_t> offsets_, lo_, hi_;
  const float* x_ = nullptr;
};

}  // namespace

bool conv_by_panels(const ConvGeometry& g, const float* x, const float* w, float* y) {
  const int64_t Cg = g.C / g.group, Mg = g.M / g.group, K = g.kernel_size() * Cg, out_n = g.out_size();
  bool direct = true;
  for (size_t d = 0; d < g.in.size(); ++d)
    direct = direct && g.kernel[d] == 1 && g.strides[d] == 1 && g.pad_begin[d] == 0 && g.pad_end[d] == 0;
  if (g.in.empty() || g.in.size() > Im2colPanels::kMaxOuter + 1 || direct || !gemm_panels_suits(Mg, out_n, K)) return false;
  Im2colPanels panels(g);
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t grp = 0; grp < g.group; ++grp) {
      panels.set_image(x + (n * g.C + grp * Cg) * g.in_size());
      gemm_panels(Mg, out_n, K, w + grp * Mg * K, panels, y + (n * g.M + grp * Mg) * out_n);
    }
  return true;
}

}  // namespace refeval::ops

// The shared attribute reading and output geometry of the conv family (conv_common.h).
#include "conv_common.h"

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#include <fmt/format.h>

#include "refeval/isa.h"

namespace refeval::ops {

void copy_strided(const float* src, int64_t n, int64_t stride, float* dst) {
  int64_t i = 0;
#if defined(__AVX512F__)
  // 16 outputs from two loads of 16: the last full step ends at src[2 i + 31], inside while
  // i + 16 < n (the scalar tail never reads past src[2 n - 2]).
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  if (stride == 2 && active_isa() == Isa::Avx512)
    for (; i + 16 < n; i += 16)
      _mm512_storeu_ps(dst + i, _mm512_permutex2var_ps(_mm512_loadu_ps(src + 2 * i), even, _mm512_loadu_ps(src + 2 * i + 16)));
#endif
  for (; i < n; ++i) dst[i] = src[i * stride];
}

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

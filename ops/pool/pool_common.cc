// Attribute reading and output geometry of the windowed pools (pool_common.h).
#include "pool_common.h"

#include <fmt/format.h>

namespace refeval::ops {

PoolAttrs::PoolAttrs(const NodeContext& ctx, bool has_ceil_mode, bool has_dilations)
    : auto_pad(ctx.attr<std::string>("auto_pad", "NOTSET")),
      kernel_shape(ctx.required<std::vector<int64_t>>("kernel_shape")),
      pads(ctx.attr<std::vector<int64_t>>("pads", {})),
      strides(ctx.attr<std::vector<int64_t>>("strides", {})) {
  if (has_ceil_mode) ceil_mode = ctx.attr<int64_t>("ceil_mode", 0) != 0;
  if (has_dilations) dilations = ctx.attr<std::vector<int64_t>>("dilations", {});
  if (auto_pad != "NOTSET" && auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER" && auto_pad != "VALID")
    ctx.fail("auto_pad must be NOTSET, SAME_UPPER, SAME_LOWER or VALID, got '" + auto_pad + "'");
  const size_t D = kernel_shape.size();
  for (int64_t k : kernel_shape)
    if (k < 1) ctx.fail("kernel_shape values must be >= 1");
  if (!pads.empty() && pads.size() != 2 * D) ctx.fail(fmt::format("pads must have {} values", 2 * D));
  if (!strides.empty() && strides.size() != D) ctx.fail(fmt::format("strides must have {} values", D));
  if (!dilations.empty() && dilations.size() != D) ctx.fail(fmt::format("dilations must have {} values", D));
  for (int64_t s : strides)
    if (s < 1) ctx.fail("strides must be >= 1");
  for (int64_t d : dilations)
    if (d < 1) ctx.fail("dilations must be >= 1");
  for (int64_t p : pads)
    if (p < 0) ctx.fail("pads must be >= 0");
}

ConvGeometry pool_geometry(const PoolAttrs& a, const Shape& x) {
  const size_t D = a.kernel_shape.size();
  if (x.size() != D + 2)
    fail_runtime(fmt::format("X {} must be [N, C] followed by {} spatial dims (kernel_shape)", shape_to_string(x), D));
  ConvGeometry g;
  g.N = x[0];
  g.C = g.M = g.group = x[1];
  g.in.assign(x.begin() + 2, x.end());
  g.kernel = a.kernel_shape;
  g.strides = a.strides.empty() ? std::vector<int64_t>(D, 1) : a.strides;
  g.dilations = a.dilations.empty() ? std::vector<int64_t>(D, 1) : a.dilations;
  g.pad_begin.assign(D, 0);
  g.pad_end.assign(D, 0);
  g.out.resize(D);
  for (size_t d = 0; d < D; ++d) {
    const int64_t ek = (g.kernel[d] - 1) * g.dilations[d] + 1, s = g.strides[d];
    if (a.auto_pad == "NOTSET" && !a.pads.empty()) g.pad_begin[d] = a.pads[d], g.pad_end[d] = a.pads[d + D];
    resolve_auto_pad(a.auto_pad, g.in[d], s, ek, g.pad_begin[d], g.pad_end[d]);
    if (a.auto_pad == "SAME_UPPER" || a.auto_pad == "SAME_LOWER") {
      g.out[d] = (g.in[d] + s - 1) / s;
      continue;
    }
    const int64_t span = g.in[d] + g.pad_begin[d] + g.pad_end[d] - ek;
    if (span < 0) fail_runtime(fmt::format("the kernel extent {} exceeds the padded input on axis {}", ek, d));
    if (a.ceil_mode && a.auto_pad == "NOTSET") {
      g.out[d] = (span + s - 1) / s + 1;
      if ((g.out[d] - 1) * s >= g.in[d] + g.pad_begin[d]) --g.out[d];  // the last window starts in the end padding
    } else {
      g.out[d] = span / s + 1;
    }
  }
  return g;
}

Shape pool_output_shape(const ConvGeometry& g) {
  Shape s{g.N, g.C};
  s.insert(s.end(), g.out.begin(), g.out.end());
  return s;
}

}  // namespace refeval::ops

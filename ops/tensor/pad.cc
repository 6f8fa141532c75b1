// Pad: pads (or, with negative pads, crops) each axis. Modes constant, reflect, edge and wrap (19).
// Versions 1 (`paddings` attribute) and 2 (`pads`) take a float `value` attribute; from 11 the pads
// and constant_value are inputs, and from 18 an `axes` input picks the axes the pads cover.
// Negative pads crop first; reflect / edge / wrap then read from the cropped input, like numpy.
#include "tensor_common.h"

#include "refeval/registry.h"

namespace refeval::ops {
namespace {

enum class PadMode { Constant, Reflect, Edge, Wrap };

class Pad : public OpRun {
 public:
  using Types = All;
  explicit Pad(const NodeContext& ctx) : version_(ctx.since_version()) {
    const std::string mode = ctx.attr<std::string>("mode", "constant");
    if (mode == "constant") mode_ = PadMode::Constant;
    else if (mode == "reflect") mode_ = PadMode::Reflect;
    else if (mode == "edge") mode_ = PadMode::Edge;
    else if (mode == "wrap" && version_ >= 19) mode_ = PadMode::Wrap;
    else ctx.fail("unsupported Pad mode '" + mode + "'");
    if (version_ < 11) {
      pads_attr_ = ctx.required<std::vector<int64_t>>(version_ < 2 ? "paddings" : "pads");
      value_attr_ = ctx.attr<float>("value", 0.0f);
    }
  }

  Values run(const Values& in, RunContext&) override {
    const Tensor& x = input_tensor(in, 0);
    const int64_t rank = int64_t(x.rank());
    const std::vector<int64_t> pads = version_ < 11 ? pads_attr_ : to_int64s(input_tensor(in, 1));
    std::vector<int64_t> axes;
    if (version_ >= 18 && has_value(in, 3)) {
      for (int64_t a : to_int64s(input_tensor(in, 3))) axes.push_back(normalize_axis(a, rank, "Pad axis"));
    } else {
      for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
    }
    const size_t na = axes.size();
    if (pads.size() != 2 * na) fail_runtime(fmt::format("Pad: {} pads for {} axes", pads.size(), na));
    std::vector<int64_t> begin(size_t(rank), 0), end(size_t(rank), 0);
    for (size_t i = 0; i < na; ++i) {
      begin[size_t(axes[i])] = pads[i];
      end[size_t(axes[i])] = pads[i + na];
    }
    // The output shape first: the tensor is checked against the memory cap (and returned at once
    // when empty) before any per-axis map of output size is built.
    Shape out(static_cast<size_t>(rank));
    std::vector<int64_t> lo(static_cast<size_t>(rank)), kept(lo), before(lo);
    for (size_t d = 0; d < size_t(rank); ++d) {
      const int64_t dim = x.dim(d);
      // Checked before negating or subtracting, which would overflow for pads near INT64_MIN.
      if (begin[d] < -dim || end[d] < -dim)
        fail_runtime(fmt::format("Pad: negative pads crop more than axis {} holds", d));
      lo[d] = std::max<int64_t>(0, -begin[d]);
      const int64_t hi = dim - std::max<int64_t>(0, -end[d]);
      const int64_t e = hi - lo[d], pb = std::max<int64_t>(0, begin[d]), pe = std::max<int64_t>(0, end[d]);
      if (e < 0) fail_runtime(fmt::format("Pad: negative pads crop more than axis {} holds", d));
      if (__builtin_add_overflow(e, pb, &out[d]) || __builtin_add_overflow(out[d], pe, &out[d]))
        fail_runtime("Pad: the padded size overflows");
      if (e == 0 && out[d] > 0 && mode_ != PadMode::Constant)
        fail_runtime(fmt::format("Pad: cannot pad an empty axis {} in this mode", d));
      kept[d] = e;
      before[d] = pb;
    }
    Tensor y(x.dtype(), out);
    if (y.size() == 0) return {y};
    // Per axis: map each output coordinate to an input coordinate, or -1 for the constant.
    std::vector<std::vector<int64_t>> maps(static_cast<size_t>(rank));
    for (size_t d = 0; d < size_t(rank); ++d) {
      const int64_t e = kept[d];
      maps[d].resize(size_t(out[d]));
      for (int64_t o = 0; o < out[d]; ++o) {
        int64_t j = o - before[d];
        if (j < 0 || j >= e) {
          switch (mode_) {
            case PadMode::Constant: j = -1; break;
            case PadMode::Edge: j = std::clamp<int64_t>(j, 0, e - 1); break;
            case PadMode::Wrap: j = ((j % e) + e) % e; break;
            case PadMode::Reflect:
              if (e == 1) { j = 0; break; }
              {
                const int64_t period = 2 * (e - 1);
                j = ((j % period) + period) % period;
                if (j >= e) j = period - j;
              }
              break;
          }
        }
        maps[d][size_t(o)] = j < 0 ? -1 : j + lo[d];
      }
    }
    // A row along the last axis is its padding before, one contiguous copy of the kept input
    // elements (output [before, before + kept) reads input [lo, lo + kept)), and its padding after.
    visit_by_width(x.dtype(), [&]<class W>() {
      const W value = constant_value<W>(in, x.dtype());
      const W* src = raw_as<W>(x);
      W* dst = raw_as<W>(y);
      const std::vector<int64_t> xs = dense_strides(x.shape());
      if (rank == 0) { dst[0] = src[0]; return; }
      const size_t last = size_t(rank) - 1;
      std::vector<int64_t> idx(last, 0);
      while (true) {
        int64_t base = 0;
        bool constant = false;
        for (size_t d = 0; d < last; ++d) {
          const int64_t j = maps[d][size_t(idx[d])];
          if (j < 0) constant = true;
          else base += j * xs[d];
        }
        if (constant) {
          std::fill(dst, dst + out[last], value);
        } else {
          for (int64_t o = 0; o < before[last]; ++o) {
            const int64_t j = maps[last][size_t(o)];
            dst[o] = j < 0 ? value : src[base + j];
          }
          std::copy(src + base + lo[last], src + base + lo[last] + kept[last], dst + before[last]);
          for (int64_t o = before[last] + kept[last]; o < out[last]; ++o) {
            const int64_t j = maps[last][size_t(o)];
            dst[o] = j < 0 ? value : src[base + j];
          }
        }
        dst += out[last];
        size_t d = last;
        while (true) {
          if (d == 0) return;
          --d;
          if (++idx[d] < out[d]) break;
          idx[d] = 0;
        }
      }
    });
    return {y};
  }

 private:
  // The padding value as the element's storage: the constant_value input (from 11, default 0)
  // or the float `value` attribute converted to the element type (before 11).
  template <class W>
  W constant_value(const Values& in, DType dtype) const {
    if (version_ >= 11) {
      if (!has_value(in, 2)) return W{};
      const Tensor& v = input_tensor(in, 2);
      if (v.dtype() != dtype) fail_runtime("Pad: constant_value must have the data's element type");
      if (v.size() != 1) fail_runtime("Pad: constant_value must hold one element");
      return raw_as<W>(v)[0];
    }
    Tensor t(dtype, {});
    visit<Numeric>(dtype, [&]<class T>() { t.data<T>()[0] = from_compute<T>(compute_t<T>(value_attr_)); });
    return raw_as<W>(t)[0];
  }

  int version_;
  PadMode mode_ = PadMode::Constant;
  std::vector<int64_t> pads_attr_;
  float value_attr_ = 0;
};

}  // namespace

void register_pad(Registry& reg) {
  reg.add("", "Pad", {1, 2, 11, 13, 18, 19, 21, 23, 24, 25}, make<Pad>);
}

}  // namespace refeval::ops

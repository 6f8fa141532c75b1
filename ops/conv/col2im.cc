// Col2Im (18): the inverse layout of im2col. input is [N, C * prod(block_shape), L] with L the
// number of block positions of a convolution of block_shape over image_shape (with pads, strides,
// dilations); each column entry is added into the image position it was taken from (positions in
// the padding are dropped). Output [N, C, image_shape...].
#include <fmt/format.h>

#include "conv_common.h"
#include "refeval/registry.h"

namespace refeval::ops {
namespace {

class Col2Im : public OpRun {
 public:
  using Types = Numeric;
  explicit Col2Im(const NodeContext& ctx)
      : pads_(ctx.attr<std::vector<int64_t>>("pads", {})),
        strides_(ctx.attr<std::vector<int64_t>>("strides", {})),
        dilations_(ctx.attr<std::vector<int64_t>>("dilations", {})) {}

  Values run(const Values& in, RunContext& ctx) override {
    const Tensor& x = input_tensor(in, 0);
    const std::vector<int64_t> image = input_tensor(in, 1).to_vector<int64_t>();
    const std::vector<int64_t> block = input_tensor(in, 2).to_vector<int64_t>();
    const size_t D = image.size();
    if (block.size() != D || D == 0) ctx.fail("image_shape and block_shape must have one (same) length");
    if (x.rank() != 3) ctx.fail(fmt::format("input must be [N, C * prod(block_shape), L], got {}", shape_to_string(x.shape())));
    ConvGeometry g;
    g.N = x.dim(0);
    g.in = image;
    g.kernel = block;
    auto per_axis = [&](const std::vector<int64_t>& v, int64_t dflt, size_t n, const char* name) {
      if (v.empty()) return std::vector<int64_t>(n, dflt);
      if (v.size() != n) ctx.fail(fmt::format("{} must have {} values", name, n));
      return v;
    };
    g.strides = per_axis(strides_, 1, D, "strides");
    g.dilations = per_axis(dilations_, 1, D, "dilations");
    const std::vector<int64_t> pads = per_axis(pads_, 0, 2 * D, "pads");
    g.pad_begin.assign(pads.begin(), pads.begin() + int64_t(D));
    g.pad_end.assign(pads.begin() + int64_t(D), pads.end());
    g.out.resize(D);
    for (size_t d = 0; d < D; ++d) {
      if (g.kernel[d] < 1 || g.strides[d] < 1 || g.dilations[d] < 1) ctx.fail("block_shape, strides and dilations must be >= 1");
      const int64_t span = g.in[d] + g.pad_begin[d] + g.pad_end[d] - ((g.kernel[d] - 1) * g.dilations[d] + 1);
      if (span < 0) ctx.fail(fmt::format("the block does not fit the padded image on axis {}", d));
      g.out[d] = span / g.strides[d] + 1;
    }
    const int64_t K = g.kernel_size();
    if (K == 0 || x.dim(1) % K != 0) ctx.fail(fmt::format("input dim 1 ({}) must be a multiple of prod(block_shape) = {}", x.dim(1), K));
    g.C = g.M = x.dim(1) / K;
    if (x.dim(2) != g.out_size())
      ctx.fail(fmt::format("input has {} blocks, the image and attributes give {}", x.dim(2), g.out_size()));
    Shape ys{g.N, g.C};
    ys.insert(ys.end(), image.begin(), image.end());
    Tensor y(x.dtype(), ys);
    visit<Types>(x.dtype(), [&]<class T>() {
      using C = typename std::conditional_t<std::is_integral_v<T>, std::make_unsigned<T>, std::type_identity<compute_t<T>>>::type;  // ints wrap
      std::vector<C> col(size_t(x.size())), img(size_t(y.size()), C(0));
      for (int64_t i = 0; i < x.size(); ++i) col[size_t(i)] = C(x.data<T>()[i]);
      for (int64_t n = 0; n < g.N; ++n)
        col2im(g, g.C, col.data() + n * g.C * K * g.out_size(), img.data() + n * g.C * g.in_size());
      for (int64_t i = 0; i < y.size(); ++i) y.data<T>()[i] = T(img[size_t(i)]);
    });
    return {y};
  }

 private:
  std::vector<int64_t> pads_, strides_, dilations_;
};

}  // namespace

void register_col2im(Registry& reg) { reg.add("", "Col2Im", {18}, make<Col2Im>); }

}  // namespace refeval::ops

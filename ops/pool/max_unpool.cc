// MaxUnpool (9, 11, 22): scatters X into a zero tensor at the flat indices I (as MaxPool's Indices
// output gives them). The output shape is the optional output_shape input, or per spatial axis
// (in - 1) * stride + kernel - pad_begin - pad_end. The indices always address that default shape:
// a larger output_shape receives it in its leading corner (zeros after), as the reference does.
#include <cstring>

#include <fmt/format.h>

#include "pool_common.h"
#include "refeval/registry.h"

namespace refeval::ops {
namespace {

// `t` copied into the leading corner of a zero tensor of shape `target` (each dim >= t's).
Tensor place_in_corner(const Tensor& t, const Shape& target) {
  Tensor out(t.dtype(), target);
  const size_t w = dtype_size(t.dtype()), r = target.size();
  const auto* src = static_cast<const unsigned char*>(t.raw_data());
  auto* dst = static_cast<unsigned char*>(out.raw_data());
  std::vector<int64_t> idx(r, 0);
  for (int64_t i = 0; i < t.size(); ++i) {
    int64_t o = 0;
    for (size_t d = 0; d < r; ++d) o = o * target[d] + idx[d];
    std::memcpy(dst + size_t(o) * w, src + size_t(i) * w, w);
    for (size_t d = r; d-- > 0;) {
      if (++idx[d] < t.dim(d)) break;
      idx[d] = 0;
    }
  }
  return out;
}

class MaxUnpool : public OpRun {
 public:
  using Types = Floats;
  explicit MaxUnpool(const NodeContext& ctx)
      : kernel_(ctx.required<std::vector<int64_t>>("kernel_shape")),
        pads_(ctx.attr<std::vector<int64_t>>("pads", {})),
        strides_(ctx.attr<std::vector<int64_t>>("strides", {})) {
    const size_t D = kernel_.size();
    if (!pads_.empty() && pads_.size() != 2 * D) ctx.fail(fmt::format("pads must have {} values", 2 * D));
    if (!strides_.empty() && strides_.size() != D) ctx.fail(fmt::format("strides must have {} values", D));
  }

  Values run(const Values& in, RunContext& ctx) override {
    const Tensor& x = input_tensor(in, 0);
    const Tensor& ind = input_tensor(in, 1);
    const size_t D = kernel_.size();
    if (x.rank() != D + 2) ctx.fail(fmt::format("X {} must have rank {}", shape_to_string(x.shape()), D + 2));
    if (ind.dtype() != DType::Int64 || ind.shape() != x.shape()) ctx.fail("I must be int64 of X's shape");
    Shape ys = x.shape();
    for (size_t d = 0; d < D; ++d) {
      const int64_t s = strides_.empty() ? 1 : strides_[d];
      const int64_t pads = pads_.empty() ? 0 : pads_[d] + pads_[d + D];
      ys[d + 2] = (x.dim(d + 2) - 1) * s + kernel_[d] - pads;
    }
    Tensor y(x.dtype(), ys);
    const int64_t* pi = ind.data<int64_t>();
    visit_by_width(x.dtype(), [&]<class W>() {
      if constexpr (!std::is_same_v<W, std::string>) {
        const W* px = static_cast<const W*>(x.raw_data());
        W* py = static_cast<W*>(y.raw_data());
        for (int64_t i = 0; i < x.size(); ++i) {
          if (pi[i] < 0 || pi[i] >= y.size())
            fail_runtime(fmt::format("index {} is outside the output of {} elements", pi[i], y.size()));
          py[pi[i]] = px[i];
        }
      }
    });
    if (has_value(in, 2)) {
      const Tensor& os = input_tensor(in, 2);
      if (os.dtype() != DType::Int64 || os.size() != int64_t(D + 2)) ctx.fail(fmt::format("output_shape must be {} int64 values", D + 2));
      const Shape target = os.to_vector<int64_t>();
      for (size_t d = 0; d < D + 2; ++d)
        if (target[d] < ys[d] || (d < 2 && target[d] != ys[d]))
          ctx.fail(fmt::format("output_shape {} is smaller than the unpooled shape {}", shape_to_string(target), shape_to_string(ys)));
      y = place_in_corner(y, target);
    }
    visit<Types>(x.dtype(), [&]<class T>() {});  // checks X's type
    return {y};
  }

 private:
  std::vector<int64_t> kernel_, pads_, strides_;
};

}  // namespace

void register_max_unpool(Registry& reg) { reg.add("", "MaxUnpool", {9, 11, 22}, make<MaxUnpool>); }

}  // namespace refeval::ops

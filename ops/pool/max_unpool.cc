// MaxUnpool (9, 11, 22): scatters X into a zero tensor at the flat indices I (as MaxPool's Indices
// output gives them). The output shape is the optional output_shape input, or per spatial axis
// (in - 1) * stride + kernel - pad_begin - pad_end.
#include <fmt/format.h>

#include "pool_common.h"
#include "refeval/registry.h"

namespace refeval::ops {
namespace {

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
    if (has_value(in, 2)) {
      const Tensor& os = input_tensor(in, 2);
      if (os.dtype() != DType::Int64 || os.size() != int64_t(D + 2)) ctx.fail(fmt::format("output_shape must be {} int64 values", D + 2));
      ys = os.to_vector<int64_t>();
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
    visit<Types>(x.dtype(), [&]<class T>() {});  // checks X's type
    return {y};
  }

 private:
  std::vector<int64_t> kernel_, pads_, strides_;
};

}  // namespace

void register_max_unpool(Registry& reg) { reg.add("", "MaxUnpool", {9, 11, 22}, make<MaxUnpool>); }

}  // namespace refeval::ops

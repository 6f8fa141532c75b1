// Compress: keeps the slices along `axis` (or the elements of the flattened input, without axis)
// whose condition is true. A condition shorter than the axis drops the rest; a true entry beyond
// the axis is an error.
#include "tensor_common.h"

#include "refeval/registry.h"

namespace refeval::ops {
namespace {

class Compress : public OpRun {
 public:
  using Types = All;
  explicit Compress(const NodeContext& ctx) : axis_(ctx.optional_attr<int64_t>("axis")) {}
  Values run(const Values& in, RunContext&) override {
    const Tensor& x0 = input_tensor(in, 0);
    const Tensor& cond = input_tensor(in, 1);
    if (cond.rank() != 1) fail_runtime("Compress: condition must be 1-D");
    const Tensor x = axis_ ? x0 : x0.reshaped({x0.size()});
    const int64_t axis = axis_ ? normalize_axis(*axis_, int64_t(x.rank())) : 0;
    const int64_t dim = x.dim(size_t(axis));
    const bool* c = cond.data<bool>();
    std::vector<int64_t> keep;
    for (int64_t i = 0; i < cond.size(); ++i) {
      if (!c[i]) continue;
      if (i >= dim) fail_runtime(fmt::format("Compress: condition is true at {} but the axis has size {}", i, dim));
      keep.push_back(i);
    }
    Shape out = x.shape();
    out[size_t(axis)] = int64_t(keep.size());
    const int64_t outer = dims_product(x.shape(), 0, size_t(axis)), inner = dims_product(x.shape(), size_t(axis) + 1, x.rank());
    Tensor y(x.dtype(), out);
    visit_by_width(x.dtype(), [&]<class W>() {
      const W* src = raw_as<W>(x);
      W* dst = raw_as<W>(y);
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t i : keep) {
          copy_elems(src + (o * dim + i) * inner, dst, inner);
          dst += inner;
        }
    });
    return {y};
  }

 private:
  std::optional<int64_t> axis_;
};

}  // namespace

void register_compress(Registry& reg) {
  reg.add("", "Compress", {9, 11}, make<Compress>);
}

}  // namespace refeval::ops

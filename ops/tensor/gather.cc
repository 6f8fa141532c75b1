// Gather: picks slices of `data` along an axis by an index tensor (negative indices count from the
// end); out.shape = data.shape[:axis] + indices.shape + data.shape[axis+1:].
#include "tensor_common.h"

#include "refeval/registry.h"

namespace refeval::ops {
namespace {

class Gather : public OpRun {
 public:
  using Types = All;
  explicit Gather(const NodeContext& ctx) : axis_(ctx.attr<int64_t>("axis", 0)) {}
  Values run(const Values& in, RunContext&) override {
    const Tensor& x = input_tensor(in, 0);
    const Tensor& ind = input_tensor(in, 1);
    const int64_t rank = int64_t(x.rank());
    if (rank == 0) fail_runtime("Gather: data must have rank >= 1");
    const int64_t axis = normalize_axis(axis_, rank);
    const int64_t dim = x.dim(size_t(axis));
    std::vector<int64_t> idx = to_int64s(ind);
    for (int64_t& i : idx) {
      if (i < -dim || i >= dim) fail_runtime(fmt::format("Gather: index {} is out of range for an axis of size {}", i, dim));
      if (i < 0) i += dim;
    }
    Shape out(x.shape().begin(), x.shape().begin() + axis);
    out.insert(out.end(), ind.shape().begin(), ind.shape().end());
    out.insert(out.end(), x.shape().begin() + axis + 1, x.shape().end());
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= x.dim(size_t(d));
    for (int64_t d = axis + 1; d < rank; ++d) inner *= x.dim(size_t(d));
    Tensor y(x.dtype(), out);
    visit_by_width(x.dtype(), [&]<class W>() {
      const W* src = raw_as<W>(x);
      W* dst = raw_as<W>(y);
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t i : idx) {
          copy_elems(src + (o * dim + i) * inner, dst, inner);
          dst += inner;
        }
    });
    return {y};
  }

 private:
  int64_t axis_;
};

}  // namespace

void register_gather(Registry& reg) {
  reg.add("", "Gather", {1, 11, 13}, make<Gather>);
}

}  // namespace refeval::ops

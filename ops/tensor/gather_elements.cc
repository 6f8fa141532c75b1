// GatherElements: out[i...] = data[i... with the axis coordinate replaced by indices[i...]];
// indices has data's rank, negative indices count from the end.
#include "tensor_common.h"

#include "refeval/registry.h"

namespace refeval::ops {
namespace {

class GatherElements : public OpRun {
 public:
  using Types = All;
  explicit GatherElements(const NodeContext& ctx) : axis_(ctx.attr<int64_t>("axis", 0)) {}
  Values run(const Values& in, RunContext&) override {
    const Tensor& x = input_tensor(in, 0);
    const Tensor& ind = input_tensor(in, 1);
    const size_t rank = x.rank();
    if (ind.rank() != rank) fail_runtime("GatherElements: indices must have the rank of data");
    if (rank == 0) fail_runtime("GatherElements: data must have rank >= 1");
    const size_t axis = size_t(normalize_axis(axis_, int64_t(rank)));
    for (size_t d = 0; d < rank; ++d)
      if (d != axis && ind.dim(d) > x.dim(d))
        fail_runtime(fmt::format("GatherElements: indices shape {} exceeds data shape {}", shape_to_string(ind.shape()),
                                 shape_to_string(x.shape())));
    const std::vector<int64_t> idx = to_int64s(ind);
    const std::vector<int64_t> xs = dense_strides(x.shape());
    const int64_t dim = x.dim(axis);
    Tensor y(x.dtype(), ind.shape());
    // Row by row over indices' last axis: a row's offsets in data are one base plus the index
    // along `axis` (plus the column, when the last axis is not `axis`).
    const size_t last = rank - 1;
    const int64_t cols = ind.dim(last), col_stride = last == axis ? 0 : xs[last];
    visit_by_width(x.dtype(), [&]<class W>() {
      const W* src = raw_as<W>(x);
      W* dst = raw_as<W>(y);
      std::vector<int64_t> pos(last, 0);
      for (int64_t k = 0; k < ind.size();) {
        int64_t base = 0;
        for (size_t d = 0; d < last; ++d)
          if (d != axis) base += pos[d] * xs[d];
        for (int64_t j = 0; j < cols; ++j, ++k) {
          int64_t i = idx[size_t(k)];
          if (i < -dim || i >= dim) fail_runtime(fmt::format("GatherElements: index {} is out of range for an axis of size {}", i, dim));
          if (i < 0) i += dim;
          dst[k] = src[base + j * col_stride + i * xs[axis]];
        }
        for (size_t d = last; d-- > 0;) {
          if (++pos[d] < ind.dim(d)) break;
          pos[d] = 0;
        }
      }
    });
    return {y};
  }

 private:
  int64_t axis_;
};

}  // namespace

void register_gather_elements(Registry& reg) {
  reg.add("", "GatherElements", {11, 13}, make<GatherElements>);
}

}  // namespace refeval::ops

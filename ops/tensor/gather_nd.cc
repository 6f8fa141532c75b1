// GatherND: indices[..., :m] address slices of data after `batch_dims` leading batch dims (from 12);
// out.shape = indices.shape[:-1] + data.shape[batch_dims + m:]. Negative indices count from the end.
#include "tensor_common.h"

#include "refeval/registry.h"

namespace refeval::ops {
namespace {

class GatherND : public OpRun {
 public:
  using Types = All;
  explicit GatherND(const NodeContext& ctx) {
    if (ctx.since_version() >= 12) batch_dims_ = ctx.attr<int64_t>("batch_dims", 0);
    if (batch_dims_ < 0) ctx.fail("batch_dims must be non-negative");
  }
  Values run(const Values& in, RunContext&) override {
    const Tensor& x = input_tensor(in, 0);
    const Tensor& ind = input_tensor(in, 1);
    const size_t r = x.rank(), q = ind.rank(), b = size_t(batch_dims_);
    if (r < 1 || q < 1) fail_runtime("GatherND: data and indices must have rank >= 1");
    if (b >= std::min(r, q)) fail_runtime("GatherND: batch_dims must be less than the ranks of data and indices");
    for (size_t d = 0; d < b; ++d)
      if (x.dim(d) != ind.dim(d)) fail_runtime("GatherND: batch dimensions of data and indices differ");
    const size_t m = size_t(ind.dim(q - 1));
    if (m < 1 || b + m > r) fail_runtime(fmt::format("GatherND: last indices dim {} is invalid for data rank {}", m, r));
    Shape out(ind.shape().begin(), ind.shape().end() - 1);
    out.insert(out.end(), x.shape().begin() + long(b + m), x.shape().end());
    const int64_t slice = dims_product(x.shape(), b + m, r);
    const int64_t batches = dims_product(x.shape(), 0, b);
    const int64_t per_batch = dims_product(ind.shape(), b, q - 1);  // index tuples per batch
    const int64_t batch_stride = dims_product(x.shape(), b, r);
    const std::vector<int64_t> xs = dense_strides(x.shape());
    const std::vector<int64_t> idx = to_int64s(ind);
    Tensor y(x.dtype(), out);
    visit_by_width(x.dtype(), [&]<class W>() {
      const W* src = raw_as<W>(x);
      W* dst = raw_as<W>(y);
      for (int64_t bi = 0; bi < batches; ++bi)
        for (int64_t t = 0; t < per_batch; ++t) {
          const int64_t* tuple = idx.data() + (bi * per_batch + t) * int64_t(m);
          int64_t off = bi * batch_stride;
          for (size_t k = 0; k < m; ++k) {
            const int64_t dim = x.dim(b + k);
            int64_t i = tuple[k];
            if (i < -dim || i >= dim) fail_runtime(fmt::format("GatherND: index {} is out of range for an axis of size {}", i, dim));
            off += (i < 0 ? i + dim : i) * xs[b + k];
          }
          copy_elems(src + off, dst, slice);
          dst += slice;
        }
    });
    return {y};
  }

 private:
  int64_t batch_dims_ = 0;
};

}  // namespace

void register_gather_nd(Registry& reg) {
  reg.add("", "GatherND", {11, 12, 13}, make<GatherND>);
}

}  // namespace refeval::ops

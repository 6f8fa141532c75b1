// Expand: broadcasts the input to a shape, numpy style in both directions (the output shape is
// the broadcast of the input shape and the requested one).
#include "tensor_common.h"

#include "refeval/elementwise.h"
#include "refeval/registry.h"

namespace refeval::ops {
namespace {

class Expand : public OpRun {
 public:
  using Types = All;
  explicit Expand(const NodeContext&) {}
  Values run(const Values& in, RunContext&) override {
    const Tensor& x = input_tensor(in, 0);
    const Shape requested = to_int64s(input_tensor(in, 1));
    for (int64_t d : requested)
      if (d < 0) fail_runtime(fmt::format("Expand: negative dimension {} in the shape", d));
    const Shape out = broadcast_shapes({x.shape(), requested});
    const std::vector<int64_t> in_st = dense_strides(x.shape());
    std::vector<int64_t> st(out.size(), 0);
    const size_t lead = out.size() - x.rank();
    for (size_t d = 0; d < x.rank(); ++d) st[lead + d] = x.dim(d) == 1 ? 0 : in_st[d];
    if (shape_size(out) == 0) return {Tensor(x.dtype(), out)};
    return {strided_view_copy(x, 0, st, out)};
  }
};

}  // namespace

void register_expand(Registry& reg) {
  reg.add("", "Expand", {8, 13}, make<Expand>);
}

}  // namespace refeval::ops

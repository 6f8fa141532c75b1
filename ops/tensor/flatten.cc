// Flatten: reshapes to 2-D, (prod(dims[:axis]), prod(dims[axis:])); axis in [-rank, rank]
// (negative from 11). Shares the input's storage.
#include "tensor_common.h"

#include "refeval/registry.h"

namespace refeval::ops {
namespace {

class Flatten : public OpRun {
 public:
  using Types = All;
  explicit Flatten(const NodeContext& ctx) : axis_(ctx.attr<int64_t>("axis", 1)) {}
  Values run(const Values& in, RunContext&) override {
    const Tensor& x = input_tensor(in, 0);
    const int64_t rank = int64_t(x.rank());
    if (axis_ < -rank || axis_ > rank) fail_runtime(fmt::format("Flatten: axis {} is out of range for rank {}", axis_, rank));
    const size_t axis = size_t(axis_ < 0 ? axis_ + rank : axis_);
    return {x.reshaped({dims_product(x.shape(), 0, axis), dims_product(x.shape(), axis, x.rank())})};
  }

 private:
  int64_t axis_;
};

}  // namespace

void register_flatten(Registry& reg) {
  reg.add("", "Flatten", {1, 9, 11, 13, 21, 23, 24, 25}, make<Flatten>);
}

}  // namespace refeval::ops

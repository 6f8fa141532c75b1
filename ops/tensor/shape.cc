// Shape and Size: the input's dimensions (optionally a [start, end) slice of them, from 15) and
// its element count, as int64.
#include "tensor_common.h"

#include "refeval/registry.h"

namespace refeval::ops {
namespace {

class ShapeOp : public OpRun {
 public:
  using Types = All;
  explicit ShapeOp(const NodeContext& ctx) {
    if (ctx.since_version() >= 15) {
      start_ = ctx.attr<int64_t>("start", 0);
      end_ = ctx.optional_attr<int64_t>("end");
    }
  }
  Values run(const Values& in, RunContext&) override {
    const Tensor& x = input_tensor(in, 0);
    const int64_t rank = int64_t(x.rank());
    auto clamp_dim = [&](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + rank : v, 0, rank); };
    const int64_t start = clamp_dim(start_), end = end_ ? clamp_dim(*end_) : rank;
    std::vector<int64_t> dims;
    for (int64_t d = start; d < end; ++d) dims.push_back(x.dim(size_t(d)));
    return {Tensor::from_vector<int64_t>({int64_t(dims.size())}, dims)};
  }

 private:
  int64_t start_ = 0;
  std::optional<int64_t> end_;
};

class Size : public OpRun {
 public:
  using Types = All;
  explicit Size(const NodeContext&) {}
  Values run(const Values& in, RunContext&) override { return {Tensor::scalar<int64_t>(input_tensor(in, 0).size())}; }
};

}  // namespace

void register_shape(Registry& reg) {
  reg.add("", "Shape", {1, 13, 15, 19, 21, 23, 24, 25}, make<ShapeOp>);
  reg.add("", "Size", {1, 13, 19, 21, 23, 24, 25}, make<Size>);
}

}  // namespace refeval::ops

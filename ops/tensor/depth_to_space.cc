// DepthToSpace and SpaceToDepth: rearrange NCHW blocks between the channel and spatial axes; each
// is a reshape, a transpose and a reshape. DepthToSpace has the DCR (default) and CRD modes (from 11).
#include "tensor_common.h"

#include "refeval/registry.h"

namespace refeval::ops {
namespace {

class DepthToSpace : public OpRun {
 public:
  using Types = All;
  explicit DepthToSpace(const NodeContext& ctx) : b_(ctx.required<int64_t>("blocksize")) {
    if (b_ <= 0) ctx.fail("blocksize must be positive");
    if (ctx.since_version() >= 11) {
      const std::string mode = ctx.attr<std::string>("mode", "DCR");
      if (mode != "DCR" && mode != "CRD") ctx.fail("mode must be DCR or CRD, got " + mode);
      crd_ = mode == "CRD";
    }
  }
  Values run(const Values& in, RunContext&) override {
    const Tensor& x = input_tensor(in, 0);
    if (x.rank() != 4) fail_runtime("DepthToSpace: input must be 4-D, got " + shape_to_string(x.shape()));
    const int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3);
    if (c % (b_ * b_) != 0) fail_runtime(fmt::format("DepthToSpace: {} channels are not divisible by blocksize^2", c));
    const int64_t c2 = c / (b_ * b_);
    const Tensor t = crd_ ? transpose(x.reshaped({n, c2, b_, b_, h, w}), {0, 1, 4, 2, 5, 3})
                          : transpose(x.reshaped({n, b_, b_, c2, h, w}), {0, 3, 4, 1, 5, 2});
    return {t.reshaped({n, c2, h * b_, w * b_})};
  }

 private:
  int64_t b_;
  bool crd_ = false;
};

class SpaceToDepth : public OpRun {
 public:
  using Types = All;
  explicit SpaceToDepth(const NodeContext& ctx) : b_(ctx.required<int64_t>("blocksize")) {
    if (b_ <= 0) ctx.fail("blocksize must be positive");
  }
  Values run(const Values& in, RunContext&) override {
    const Tensor& x = input_tensor(in, 0);
    if (x.rank() != 4) fail_runtime("SpaceToDepth: input must be 4-D, got " + shape_to_string(x.shape()));
    const int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3);
    if (h % b_ != 0 || w % b_ != 0) fail_runtime("SpaceToDepth: spatial dims are not divisible by blocksize");
    const Tensor t = transpose(x.reshaped({n, c, h / b_, b_, w / b_, b_}), {0, 3, 5, 1, 2, 4});
    return {t.reshaped({n, c * b_ * b_, h / b_, w / b_})};
  }

 private:
  int64_t b_;
};

}  // namespace

void register_depth_to_space(Registry& reg) {
  reg.add("", "DepthToSpace", {1, 11, 13}, make<DepthToSpace>);
  reg.add("", "SpaceToDepth", {1, 13}, make<SpaceToDepth>);
}

}  // namespace refeval::ops

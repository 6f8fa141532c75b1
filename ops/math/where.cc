// Where: out = condition ? X : Y, broadcasting all three inputs numpy-style. Any element type;
// elements are copied by width.
#include "math_common.h"

namespace refeval::ops {
namespace {

class Where : public OpRun {
 public:
  using Types = All;
  explicit Where(const NodeContext&) {}
  Values run(const Values& in, RunContext&) override {
    const Tensor& c = input_tensor(in, 0);
    const Tensor& x = input_tensor(in, 1);
    const Tensor& y = input_tensor(in, 2);
    if (c.dtype() != DType::Bool) fail_runtime(fmt::format("condition must be bool, got {}", dtype_short_name(c.dtype())));
    require_same_dtype(x, y, "X and Y");
    if (!Types::contains(x.dtype())) fail_unsupported_dtype(x.dtype(), Types::dtypes());
    Tensor out(x.dtype(), broadcast_shapes({c.shape(), x.shape(), y.shape()}));
    const bool* pc = c.data<bool>();
    visit_by_width(x.dtype(), [&]<class W>() {
      const W* px = static_cast<const W*>(x.raw_data());
      const W* py = static_cast<const W*>(y.raw_data());
      W* po = static_cast<W*>(out.raw_data());
      BroadcastWalker<3>(out.shape(), {&c.shape(), &x.shape(), &y.shape()})
          .for_each_run([&](int64_t o, const std::array<int64_t, 3>& off, int64_t n, const std::array<int64_t, 3>& s) {
            for (int64_t i = 0; i < n; ++i)
              po[o + i] = pc[off[0] + i * s[0]] ? px[off[1] + i * s[1]] : py[off[2] + i * s[2]];
          });
    });
    return {out};
  }
};

}  // namespace

void register_where(Registry& reg) { reg.add("", "Where", {9, 16}, make<Where>); }

}  // namespace refeval::ops

// ReverseSequence: for each batch entry b, reverses the first sequence_lens[b] elements along the
// time axis and copies the rest. batch_axis and time_axis are 0 or 1.
#include "tensor_common.h"

#include "refeval/registry.h"

namespace refeval::ops {
namespace {

class ReverseSequence : public OpRun {
 public:
  using Types = All;
  explicit ReverseSequence(const NodeContext& ctx)
      : batch_axis_(ctx.attr<int64_t>("batch_axis", 1)), time_axis_(ctx.attr<int64_t>("time_axis", 0)) {
    if ((batch_axis_ != 0 && batch_axis_ != 1) || (time_axis_ != 0 && time_axis_ != 1) || batch_axis_ == time_axis_)
      ctx.fail("batch_axis and time_axis must be 0 and 1, one each");
  }
  Values run(const Values& in, RunContext&) override {
    const Tensor& x = input_tensor(in, 0);
    if (x.rank() < 2) fail_runtime("ReverseSequence: input must have rank >= 2");
    const std::vector<int64_t> lens = to_int64s(input_tensor(in, 1));
    const int64_t batch = x.dim(size_t(batch_axis_)), time = x.dim(size_t(time_axis_));
    if (int64_t(lens.size()) != batch) fail_runtime("ReverseSequence: sequence_lens must have one entry per batch");
    const std::vector<int64_t> xs = dense_strides(x.shape());
    const int64_t inner = dims_product(x.shape(), 2, x.rank());
    const int64_t bs = xs[size_t(batch_axis_)], ts = xs[size_t(time_axis_)];
    Tensor y(x.dtype(), x.shape());
    visit_by_width(x.dtype(), [&]<class W>() {
      const W* src = raw_as<W>(x);
      W* dst = raw_as<W>(y);
      for (int64_t b = 0; b < batch; ++b) {
        const int64_t len = lens[size_t(b)];
        if (len < 0 || len > time) fail_runtime(fmt::format("ReverseSequence: sequence length {} is out of range [0, {}]", len, time));
        for (int64_t t = 0; t < time; ++t) {
          const int64_t from = t < len ? len - 1 - t : t;
          copy_elems(src + b * bs + from * ts, dst + b * bs + t * ts, inner);
        }
      }
    });
    return {y};
  }

 private:
  int64_t batch_axis_, time_axis_;
};

}  // namespace

void register_reverse_sequence(Registry& reg) {
  reg.add("", "ReverseSequence", {10}, make<ReverseSequence>);
}

}  // namespace refeval::ops

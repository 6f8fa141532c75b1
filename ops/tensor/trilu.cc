// Trilu: keeps the upper (j - i >= k) or lower (j - i <= k) triangle of each matrix in the last two
// axes and zeroes the rest; k is an optional scalar input (default 0).
#include "tensor_common.h"

#include "refeval/registry.h"

namespace refeval::ops {
namespace {

class Trilu : public OpRun {
 public:
  using Types = All;
  explicit Trilu(const NodeContext& ctx) : upper_(ctx.attr<int64_t>("upper", 1) != 0) {}
  Values run(const Values& in, RunContext&) override {
    const Tensor& x = input_tensor(in, 0);
    if (x.rank() < 2) fail_runtime("Trilu: input must have rank >= 2");
    const int64_t rows = x.dim(x.rank() - 2), cols = x.dim(x.rank() - 1);
    int64_t k = 0;
    if (has_value(in, 1)) {
      const std::vector<int64_t> kv = to_int64s(input_tensor(in, 1));
      if (kv.size() != 1) fail_runtime("Trilu: k must be a scalar");
      k = std::clamp<int64_t>(kv[0], -(rows + cols), rows + cols);  // |j - i| < rows + cols
    }
    const int64_t mats = rows * cols == 0 ? 0 : x.size() / (rows * cols);
    Tensor y(x.dtype(), x.shape());
    visit_by_width(x.dtype(), [&]<class W>() {
      const W* src = raw_as<W>(x);
      W* dst = raw_as<W>(y);
      for (int64_t m = 0; m < mats; ++m)
        for (int64_t i = 0; i < rows; ++i)
          for (int64_t j = 0; j < cols; ++j) {
            const int64_t o = (m * rows + i) * cols + j;
            const bool keep = upper_ ? j - i >= k : j - i <= k;
            if (keep) dst[o] = src[o];
          }
    });
    return {y};
  }

 private:
  bool upper_;
};

}  // namespace

void register_trilu(Registry& reg) {
  reg.add("", "Trilu", {14}, make<Trilu>);
}

}  // namespace refeval::ops

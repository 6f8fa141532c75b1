// Normalizer: divides each row by its MAX, L1 (sum of |x|) or L2 (sqrt of sum of squares) norm;
// float output.
#include "ml_common.h"

namespace refeval::ops {
namespace {

class Normalizer : public OpRun {
 public:
  using Types = MlNumeric;
  explicit Normalizer(const NodeContext& ctx) : norm_(ctx.attr<std::string>("norm", "MAX")) {
    if (norm_ != "MAX" && norm_ != "L1" && norm_ != "L2") ctx.fail("norm must be MAX, L1 or L2, got '" + norm_ + "'");
  }
  Values run(const Values& in, RunContext&) override {
    const Tensor& x = input_tensor(in, 0);
    Rows r = read_rows<Types>(x);
    for (int64_t i = 0; i < r.n; ++i) {
      double* row = r.v.data() + i * r.c;
      double d = 0;
      if (norm_ == "MAX") {
        d = -INFINITY;
        for (int64_t j = 0; j < r.c; ++j) d = std::max(d, row[j]);
      } else if (norm_ == "L1") {
        for (int64_t j = 0; j < r.c; ++j) d += std::fabs(row[j]);
      } else {
        for (int64_t j = 0; j < r.c; ++j) d += row[j] * row[j];
        d = std::sqrt(d);
      }
      for (int64_t j = 0; j < r.c; ++j) row[j] = d == 0 ? row[j] : row[j] / d;
    }
    return {float_tensor(x.shape(), r.v)};
  }

 private:
  std::string norm_;
};

}  // namespace

void register_normalizer(Registry& reg) { reg.add(kMl, "Normalizer", {1}, make<Normalizer>); }

}  // namespace refeval::ops

// LayerNormalization (17): normalises over the dimensions axis..rank-1 (flattened),
// Y = (X - mean) * InvStdDev * Scale + B, InvStdDev = 1 / sqrt(var + epsilon). Statistics are
// computed in double and stored as stash_type in the optional outputs Mean and InvStdDev, whose
// shape is X's with the normalised dimensions set to 1. Scale and B broadcast to X.shape[axis:].
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "nn_common.h"
#include "refeval/elementwise.h"
#include "refeval/registry.h"

namespace refeval::ops {
namespace {

class LayerNormalization : public OpRun {
 public:
  using Types = Floats;
  explicit LayerNormalization(const NodeContext& ctx)
      : axis_(ctx.attr<int64_t>("axis", -1)),
        epsilon_(ctx.attr<float>("epsilon", 1e-5f)),
        stash_(DType(ctx.attr<int64_t>("stash_type", 1))),
        outputs_(std::min<size_t>(ctx.num_outputs(), 3)) {
    if (stash_ != DType::Float && stash_ != DType::Double && stash_ != DType::Float16 && stash_ != DType::BFloat16)
      ctx.fail(fmt::format("stash_type {} is not a floating type", int(stash_)));
  }

  Values run(const Values& in, RunContext& ctx) override {
    const Tensor& x = input_tensor(in, 0);
    const Tensor& scale = input_tensor(in, 1);
    const int64_t r = int64_t(x.rank());
    if (axis_ < -r || axis_ >= r) ctx.fail(fmt::format("axis {} is out of range for rank {}", axis_, r));
    const size_t axis = size_t(axis_ < 0 ? axis_ + r : axis_);
    const Shape norm_shape(x.shape().begin() + long(axis), x.shape().end());
    Shape stat_shape = x.shape();
    for (size_t d = axis; d < x.rank(); ++d) stat_shape[d] = 1;
    const int64_t n = shape_size(norm_shape), outer = n == 0 ? 0 : x.size() / n;
    Tensor y(x.dtype(), x.shape()), mean_t(stash_, stat_shape), inv_t(stash_, stat_shape);
    std::vector<double> mean(size_t(shape_size(stat_shape))), inv(mean.size());
    visit<Types>(x.dtype(), [&]<class T>() {
      if (scale.dtype() != x.dtype() || (has_value(in, 2) && input_tensor(in, 2).dtype() != x.dtype()))
        ctx.fail("Scale and B must have the element type of X");
      const std::vector<double> s = expand_to(scale, norm_shape, "Scale");
      const std::vector<double> b = has_value(in, 2) ? expand_to(input_tensor(in, 2), norm_shape, "B") : std::vector<double>(size_t(n), 0.0);
      const T* px = x.data<T>();
      T* py = y.data<T>();
      // Rows are independent: large inputs split them across threads.
      parallel_for(outer, kParallelElements / std::max<int64_t>(n, 1) + 1, [&](int64_t first, int64_t last) {
        for (int64_t o = first; o < last; ++o) {
          const T* row = px + o * n;
          auto at = [&](int64_t j) { return double(compute_t<T>(row[j])); };
          const double m = sum_of(n, at) / double(n);
          const double sq = sum_of(n, [&](int64_t j) { return (at(j) - m) * (at(j) - m); });
          const double is = 1.0 / std::sqrt(sq / double(n) + double(epsilon_));
          mean[size_t(o)] = m;
          inv[size_t(o)] = is;
          for (int64_t j = 0; j < n; ++j)
            py[o * n + j] = from_compute<T>((double(compute_t<T>(row[j])) - m) * is * s[size_t(j)] + b[size_t(j)]);
        }
      });
    });
    visit<Floats>(stash_, [&]<class U>() {
      for (size_t i = 0; i < mean.size(); ++i) {
        mean_t.data<U>()[i] = from_compute<U>(mean[i]);
        inv_t.data<U>()[i] = from_compute<U>(inv[i]);
      }
    });
    Values out = {y, mean_t, inv_t};
    out.resize(outputs_);
    return out;
  }

 private:
  int64_t axis_;
  float epsilon_;
  DType stash_;
  size_t outputs_;  // how many of Y, Mean, InvStdDev the node declares
};

}  // namespace

void register_layer_normalization(Registry& reg) { reg.add("", "LayerNormalization", {17}, make<LayerNormalization>); }

}  // namespace refeval::ops

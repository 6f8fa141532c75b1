// ORT's LayerNormalization and SimplifiedLayerNormalization, registered by ONNX Runtime in the
// default domain at version 1 (so fused models with opset < 17 resolve; ONNX's own op starts at
// 17) and here also in com.microsoft.
//   LayerNormalization(X, Scale, B?) -> Y, Mean?, InvStdDev?
//     over the dims [axis, rank): Y = (X - mean) / sqrt(var + epsilon) * Scale + B
//   SimplifiedLayerNormalization(X, Scale) -> Y, InvStdDev?      (RMS normalisation)
//     Y = X / sqrt(mean(X^2) + epsilon) * Scale
// Scale and B broadcast to the normalised shape; Y takes Scale's element type (ORT's V). Mean
// and InvStdDev have X's shape with the normalised dims set to 1, in stash_type (float/double).
// Statistics and Y are computed in double and rounded once; float32 row by row (normalize_row).
#include <algorithm>

#include "contrib_common.h"
#include "refeval/elementwise.h"
#include "refeval/registry.h"
#include "refeval/threads.h"

namespace refeval::ops::contrib {
namespace {

template <bool kRms>
class LayerNorm : public OpRun {
 public:
  using Types = FloatTypes;
  explicit LayerNorm(const NodeContext& ctx)
      : axis_(ctx.attr<int64_t>("axis", -1)),
        epsilon_(ctx.attr<float>("epsilon", 1e-5f)),
        stash_(DType(ctx.attr<int64_t>("stash_type", 1))) {
    if (stash_ != DType::Float && stash_ != DType::Double)
      ctx.fail(fmt::format("stash_type {} is neither float (1) nor double (11)", int(stash_)));
    if (epsilon_ < 0) ctx.fail(fmt::format("epsilon {} is negative", epsilon_));
  }

  Values run(const Values& in, RunContext&) override {
    const Tensor& x = input_tensor(in, 0);
    const Tensor& scale = input_tensor(in, 1);
    require_types<Types>(x.dtype());
    const int64_t r = int64_t(x.rank());
    if (axis_ < -r || axis_ >= r) fail_runtime(fmt::format("axis {} is out of range for X of rank {}", axis_, r));
    const size_t axis = size_t(axis_ < 0 ? axis_ + r : axis_);
    const Shape norm_shape(x.shape().begin() + long(axis), x.shape().end());
    // Statistics of no values: ONNX Runtime refuses such a node, and so does refeval.
    if (shape_size(norm_shape) == 0)
      fail_runtime(fmt::format("X.shape[{}:] = {} holds no element to normalize", axis, shape_to_string(norm_shape)));
    Shape stat_shape = x.shape();
    for (size_t d = axis; d < x.rank(); ++d) stat_shape[d] = 1;

    const std::vector<double> gamma = expand_to(scale, norm_shape, "Scale");
    std::vector<double> beta;
    if (has_value(in, 2)) {
      require_dtype(input_tensor(in, 2), scale.dtype(), "B");
      beta = expand_to(input_tensor(in, 2), norm_shape, "B");
    }
    const int64_t n = shape_size(norm_shape), rows = x.size() / n;
    std::vector<double> mean(static_cast<size_t>(rows)), inv_std(static_cast<size_t>(rows));
    Tensor y;
    if (x.dtype() == DType::Float && scale.dtype() == DType::Float) {
      // float32: row by row through a double buffer into the output, no whole-tensor copies
      y = Tensor(DType::Float, x.shape());
      const float* px = x.data<float>();
      float* py = y.data<float>();
      parallel_for(rows, std::max<int64_t>(1, kParallelElements / std::max<int64_t>(n, 1)), [&](int64_t begin, int64_t end) {
        std::vector<double> row(static_cast<size_t>(n));
        for (int64_t r = begin; r < end; ++r) {
          std::copy_n(px + r * n, n, row.begin());
          const RowStats st = normalize_row(row.data(), n, double(epsilon_), kRms, gamma.data(),
                                            beta.empty() ? nullptr : beta.data(), py + r * n);
          mean[size_t(r)] = st.mean, inv_std[size_t(r)] = st.inv_std;
        }
      });
    } else {
      std::vector<double> yd;
      normalize_rows(to_doubles(x), n, double(epsilon_), kRms, gamma, beta, yd, &mean, &inv_std);
      y = from_doubles(scale.dtype(), x.shape(), yd);
    }
    if constexpr (kRms)
      return {y, from_doubles(stash_, stat_shape, inv_std)};
    else
      return {y, from_doubles(stash_, stat_shape, mean), from_doubles(stash_, stat_shape, inv_std)};
  }

 private:
  int64_t axis_;
  float epsilon_;
  DType stash_;
};

}  // namespace

void register_layer_normalization(Registry& reg) {
  for (const char* domain : {"", "com.microsoft"}) {
    reg.add(domain, "LayerNormalization", {1}, make<LayerNorm<false>>);
    reg.add(domain, "SimplifiedLayerNormalization", {1}, make<LayerNorm<true>>);
  }
}

}  // namespace refeval::ops::contrib

// com.microsoft SkipLayerNormalization and SkipSimplifiedLayerNormalization (v1): the residual
// add of a transformer block fused with the LayerNormalization (or RMS normalisation) after it.
//   SkipLayerNormalization(input, skip, gamma, beta?, bias?) -> output, mean?, inv_std_var?, input_skip_bias_sum?
//   SkipSimplifiedLayerNormalization(input, skip, gamma, bias?) -> output, mean?, inv_std_var?, input_skip_bias_sum?
//     s = input + skip (+ bias);  over the last axis (H):
//     output = (s - mean(s)) / sqrt(var(s) + epsilon) * gamma (+ beta)        (Skip)
//     output = s / sqrt(mean(s^2) + epsilon) * gamma                          (SkipSimplified)
// input is (B, S, H) or (N, H); skip has input's shape, or it with batch 1, or without the batch
// dim, and repeats over the batch. mean / inv_std_var are float with the last dim set to 1;
// input_skip_bias_sum is s. epsilon defaults to 1e-12 (ORT's kDefaultSkipLayerNormEpsilon).
// s and the statistics are computed in double, each output rounded once; float32 row by row.
#include <algorithm>

#include "contrib_common.h"
#include "refeval/elementwise.h"
#include "refeval/registry.h"
#include "refeval/threads.h"

namespace refeval::ops::contrib {
namespace {

template <bool kRms>
class SkipLayerNorm : public OpRun {
 public:
  using Types = FloatTypes;
  static constexpr size_t kBiasInput = kRms ? 3 : 4;  // SkipSimplified has no beta before bias
  explicit SkipLayerNorm(const NodeContext& ctx) : epsilon_(ctx.attr<float>("epsilon", 1e-12f)) {
    if (epsilon_ < 0) ctx.fail(fmt::format("epsilon {} is negative", epsilon_));
    if (kRms && ctx.has_output(1))
      ctx.fail("output 1 (mean) is not defined for SkipSimplifiedLayerNormalization: RMS normalisation subtracts no mean");
  }

  Values run(const Values& in, RunContext&) override {
    const Tensor& x = input_tensor(in, 0);
    const Tensor& skip = input_tensor(in, 1);
    require_types<Types>(x.dtype());
    require_rank(x, 2, 3, "input");
    require_dtype(skip, x.dtype(), "skip");
    check_skip_shape(x.shape(), skip.shape());
    const int64_t hidden = x.shape().back();
    const std::vector<double> gamma = vector_input(in, 2, hidden, x.dtype(), "gamma");
    const std::vector<double> beta = kRms ? std::vector<double>{} : vector_input(in, 3, hidden, x.dtype(), "beta");
    const std::vector<double> bias = vector_input(in, kBiasInput, hidden, x.dtype(), "bias");

    Shape stat_shape = x.shape();
    stat_shape.back() = 1;
    const int64_t rows = hidden == 0 ? 0 : x.size() / hidden;
    std::vector<double> mean(static_cast<size_t>(rows)), inv_std(static_cast<size_t>(rows));
    Tensor y, sum_out;
    if (x.dtype() == DType::Float) {
      // float32: each row's sum in a double buffer, normalised into the output (no whole-tensor copies)
      y = Tensor(DType::Float, x.shape()), sum_out = Tensor(DType::Float, x.shape());
      const float *px = x.data<float>(), *ps = skip.data<float>();
      float *py = y.data<float>(), *psum = sum_out.data<float>();
      parallel_for(rows, std::max<int64_t>(1, kParallelElements / std::max<int64_t>(hidden, 1)), [&](int64_t begin, int64_t end) {
        std::vector<double> row(static_cast<size_t>(hidden));
        for (int64_t r = begin; r < end; ++r) {
          const float* xr = px + r * hidden;
          const float* sr = ps + (r * hidden) % skip.size();
          for (int64_t j = 0; j < hidden; ++j) row[size_t(j)] = double(xr[j]) + (double(sr[j]) + (bias.empty() ? 0.0 : bias[size_t(j)]));
          for (int64_t j = 0; j < hidden; ++j) psum[r * hidden + j] = float(row[size_t(j)]);
          const RowStats st = normalize_row(row.data(), hidden, double(epsilon_), kRms, gamma.data(),
                                            beta.empty() ? nullptr : beta.data(), py + r * hidden);
          mean[size_t(r)] = st.mean, inv_std[size_t(r)] = st.inv_std;
        }
      });
    } else {
      std::vector<double> sum = to_doubles(x), yd;
      const std::vector<double> s = to_doubles(skip);
      for (size_t i = 0; i < sum.size(); ++i)
        sum[i] += s[i % s.size()] + (bias.empty() ? 0.0 : bias[i % size_t(hidden)]);
      normalize_rows(sum, hidden, double(epsilon_), kRms, gamma, beta, yd, &mean, &inv_std);
      y = from_doubles(x.dtype(), x.shape(), yd), sum_out = from_doubles(x.dtype(), x.shape(), sum);
    }
    return {y, kRms ? Value() : Value(from_doubles(DType::Float, stat_shape, mean)),
            from_doubles(DType::Float, stat_shape, inv_std), sum_out};
  }

 private:
  static void check_skip_shape(const Shape& x, const Shape& skip) {
    Shape batch_one = x, no_batch(x.begin() + 1, x.end());
    batch_one[0] = 1;
    if (skip != x && !(x.size() == 3 && (skip == batch_one || skip == no_batch)))
      fail_runtime(fmt::format("skip has shape {}, expected input's shape {}{}", shape_to_string(skip), shape_to_string(x),
                               x.size() == 3 ? fmt::format(", {} or {}", shape_to_string(batch_one), shape_to_string(no_batch)) : ""));
  }
  float epsilon_;
};

}  // namespace

void register_skip_layer_normalization(Registry& reg) {
  reg.add("com.microsoft", "SkipLayerNormalization", {1}, make<SkipLayerNorm<false>>);
  reg.add("com.microsoft", "SkipSimplifiedLayerNormalization", {1}, make<SkipLayerNorm<true>>);
}

}  // namespace refeval::ops::contrib

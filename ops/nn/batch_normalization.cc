// BatchNormalization (1, 6, 7, 9, 14, 15). Inference: Y = (X - mean) / sqrt(var + epsilon) *
// scale + B per channel (axis 1). Training (training_mode=1 from 14; before 14, when the node
// asks for more than Y): the statistics are the batch's (biased variance) and the running ones
// are returned as input * momentum + batch * (1 - momentum); versions before 14 also return the
// batch mean and variance as saved_mean and saved_var. With spatial=0 (before 9) the parameters
// hold one value per element of X.shape[1:] instead of per channel.
#include <cmath>

#include "nn_common.h"
#include "refeval/registry.h"

namespace refeval::ops {
namespace {

class BatchNormalization : public OpRun {
 public:
  using Types = Floats;
  explicit BatchNormalization(const NodeContext& ctx)
      : epsilon_(ctx.attr<float>("epsilon", 1e-5f)), momentum_(ctx.attr<float>("momentum", 0.9f)), outputs_(ctx.num_outputs()) {
    const int v = ctx.since_version();
    if (v == 1) ctx.ignore("consumed_inputs");
    if (v < 7) ctx.attr<int64_t>("is_test", 0);  // the declared outputs decide, as in later versions
    if (v < 9) spatial_ = ctx.attr<int64_t>("spatial", 1) != 0;
    training_ = v >= 14 ? ctx.attr<int64_t>("training_mode", 0) != 0 : outputs_ > 1;
    if (v >= 14 && !training_ && outputs_ > 1) ctx.fail("running_mean and running_var are outputs only with training_mode=1");
  }

  Values run(const Values& in, RunContext& ctx) override {
    const Tensor& x = input_tensor(in, 0);
    if (x.rank() < 2) ctx.fail(fmt::format("X must be [N, C, ...], got {}", shape_to_string(x.shape())));
    visit<Types>(x.dtype(), [&]<class T>() {});  // checks X's type
    const int64_t N = x.dim(0), C = x.dim(1), inner = x.size() / std::max<int64_t>(1, N * C);
    const int64_t P = spatial_ ? C : C * inner;  // parameters per position of the channel block
    std::vector<std::vector<double>> p;
    for (size_t i = 1; i <= 4; ++i) {
      p.push_back(to_doubles(input_tensor(in, i)));
      if (int64_t(p.back().size()) != P) ctx.fail(fmt::format("input {} must hold {} values, got {}", i, P, p.back().size()));
    }
    auto param = [&](int64_t c, int64_t s) { return size_t(spatial_ ? c : c * inner + s); };
    if (!training_) return {infer(x, p, N, C, inner)};
    const std::vector<double> xv = to_doubles(x);
    std::vector<double> mean = p[2], var = p[3];
    if (training_) {
      std::vector<double> sum(size_t(P), 0.0), sq(size_t(P), 0.0);
      const double count = double(spatial_ ? N * inner : N);
      for (int64_t n = 0; n < N; ++n)
        for (int64_t c = 0; c < C; ++c)
          for (int64_t s = 0; s < inner; ++s) sum[param(c, s)] += xv[size_t((n * C + c) * inner + s)];
      for (int64_t k = 0; k < P; ++k) mean[size_t(k)] = sum[size_t(k)] / count;
      for (int64_t n = 0; n < N; ++n)
        for (int64_t c = 0; c < C; ++c)
          for (int64_t s = 0; s < inner; ++s) {
            const double d = xv[size_t((n * C + c) * inner + s)] - mean[param(c, s)];
            sq[param(c, s)] += d * d;
          }
      for (int64_t k = 0; k < P; ++k) var[size_t(k)] = sq[size_t(k)] / count;
    }
    std::vector<double> y(xv.size());
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < C; ++c)
        for (int64_t s = 0; s < inner; ++s) {
          const size_t k = param(c, s), i = size_t((n * C + c) * inner + s);
          y[i] = (xv[i] - mean[k]) / std::sqrt(var[k] + double(epsilon_)) * p[0][k] + p[1][k];
        }
    Values out = {from_doubles(x.dtype(), x.shape(), y)};
    if (training_) {
      std::vector<double> rm(static_cast<size_t>(P)), rv(static_cast<size_t>(P));
      for (size_t k = 0; k < size_t(P); ++k) {
        rm[k] = p[2][k] * double(momentum_) + mean[k] * (1.0 - double(momentum_));
        rv[k] = p[3][k] * double(momentum_) + var[k] * (1.0 - double(momentum_));
      }
      const Tensor& im = input_tensor(in, 3);
      const Tensor& iv = input_tensor(in, 4);
      out.push_back(from_doubles(im.dtype(), im.shape(), rm));
      out.push_back(from_doubles(iv.dtype(), iv.shape(), rv));
      out.push_back(from_doubles(im.dtype(), im.shape(), mean));
      out.push_back(from_doubles(iv.dtype(), iv.shape(), var));
    }
    out.resize(std::min(out.size(), outputs_));
    return out;
  }

 private:
  // Inference, reading X and writing Y in their own type with one rounding, the formula of the
  // training path with sqrt(var + epsilon) taken once per parameter (a double copy of X and Y
  // cost 6x the arithmetic).
  Tensor infer(const Tensor& x, const std::vector<std::vector<double>>& p, int64_t N, int64_t C, int64_t inner) const {
    const size_t P = p[0].size();
    std::vector<double> sd(P);
    for (size_t k = 0; k < P; ++k) sd[k] = std::sqrt(p[3][k] + double(epsilon_));
    Tensor y(x.dtype(), x.shape());
    visit<Types>(x.dtype(), [&]<class T>() {
      const T* px = x.data<T>();
      T* py = y.data<T>();
      for (int64_t n = 0; n < N; ++n)
        for (int64_t c = 0; c < C; ++c) {
          const int64_t row = (n * C + c) * inner;
          auto at = [&](int64_t s, size_t k) {
            return from_compute<T>((double(compute_t<T>(px[row + s])) - p[2][k]) / sd[k] * p[0][k] + p[1][k]);
          };
          if (spatial_) {
            for (int64_t s = 0; s < inner; ++s) py[row + s] = at(s, size_t(c));
          } else {
            for (int64_t s = 0; s < inner; ++s) py[row + s] = at(s, size_t(c * inner + s));
          }
        }
    });
    return y;
  }

  float epsilon_, momentum_;
  size_t outputs_;
  bool spatial_ = true;
  bool training_ = false;
};

}  // namespace

void register_batch_normalization(Registry& reg) {
  reg.add("", "BatchNormalization", {1, 6, 7, 9, 14, 15}, make<BatchNormalization>);
}

}  // namespace refeval::ops

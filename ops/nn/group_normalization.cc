// InstanceNormalization (1, 6, 22) and GroupNormalization (18, 21). X is [N, C, ...]; the mean and
// (biased) variance are taken per sample over the channels of a group and all spatial positions,
// Y = (X - mean) / sqrt(var + epsilon) * scale + bias. InstanceNormalization is the case of one
// channel per group. GroupNormalization-18 has one scale and bias per group, version 21 one per
// channel (and stash_type).
#include <cmath>

#include "nn_common.h"
#include "refeval/registry.h"

namespace refeval::ops {
namespace {

// per_channel: scale and bias hold C values, otherwise `groups` values. Statistics in double, the
// output rounded once to x's type.
Tensor group_norm(const Tensor& x, const Tensor& scale, const Tensor& bias, int64_t groups, bool per_channel, double eps) {
  if (x.rank() < 2) fail_runtime(fmt::format("X must be [N, C, ...], got {}", shape_to_string(x.shape())));
  const int64_t N = x.dim(0), C = x.dim(1), inner = N * C == 0 ? 0 : x.size() / (N * C);
  if (groups <= 0 || C % groups != 0) fail_runtime(fmt::format("{} channels do not split into {} groups", C, groups));
  const std::vector<double> s = to_doubles(scale), b = to_doubles(bias);
  const size_t want = size_t(per_channel ? C : groups);
  if (s.size() != want || b.size() != want)
    fail_runtime(fmt::format("scale and bias must hold {} values, got {} and {}", want, s.size(), b.size()));
  const int64_t channels = C / groups, per_group = channels * inner;
  Tensor y(x.dtype(), x.shape());
  visit<Floats>(x.dtype(), [&]<class T>() {
    for (int64_t n = 0; n < N; ++n)
      for (int64_t g = 0; g < groups; ++g) {
        const int64_t base = (n * groups + g) * per_group;
        const T* xg = x.data<T>() + base;
        T* yg = y.data<T>() + base;
        auto at = [&](int64_t i) { return double(compute_t<T>(xg[i])); };
        const double mean = sum_of(per_group, at) / double(per_group);
        const double sq = sum_of(per_group, [&](int64_t i) { return (at(i) - mean) * (at(i) - mean); });
        const double inv = 1.0 / std::sqrt(sq / double(per_group) + eps);
        for (int64_t c = 0; c < channels; ++c) {
          const size_t k = per_channel ? size_t(g * channels + c) : size_t(g);
          const double sk = s[k], bk = b[k];
          for (int64_t i = c * inner; i < (c + 1) * inner; ++i) yg[i] = from_compute<T>((at(i) - mean) * inv * sk + bk);
        }
      }
  });
  return y;
}

class InstanceNormalization : public OpRun {
 public:
  using Types = Floats;
  explicit InstanceNormalization(const NodeContext& ctx) : epsilon_(ctx.attr<float>("epsilon", 1e-5f)) {
    if (ctx.since_version() == 1) ctx.ignore("consumed_inputs");
  }
  Values run(const Values& in, RunContext&) override {
    const Tensor& x = input_tensor(in, 0);
    visit<Types>(x.dtype(), [&]<class T>() {});
    return {group_norm(x, input_tensor(in, 1), input_tensor(in, 2), x.rank() >= 2 ? x.dim(1) : 0, true, epsilon_)};
  }

 private:
  float epsilon_;
};

class GroupNormalization : public OpRun {
 public:
  using Types = Floats;
  explicit GroupNormalization(const NodeContext& ctx)
      : epsilon_(ctx.attr<float>("epsilon", 1e-5f)),
        groups_(ctx.required<int64_t>("num_groups")),
        per_channel_(ctx.since_version() >= 21) {
    if (per_channel_) {
      const DType stash = DType(ctx.attr<int64_t>("stash_type", 1));
      if (!Floats::contains(stash)) ctx.fail(fmt::format("stash_type {} is not a floating type", int(stash)));
    }
  }
  Values run(const Values& in, RunContext&) override {
    const Tensor& x = input_tensor(in, 0);
    visit<Types>(x.dtype(), [&]<class T>() {});
    return {group_norm(x, input_tensor(in, 1), input_tensor(in, 2), groups_, per_channel_, epsilon_)};
  }

 private:
  float epsilon_;
  int64_t groups_;
  bool per_channel_;
};

}  // namespace

void register_group_normalization(Registry& reg) {
  reg.add("", "InstanceNormalization", {1, 6, 22}, make<InstanceNormalization>);
  reg.add("", "GroupNormalization", {18, 21}, make<GroupNormalization>);
}

}  // namespace refeval::ops

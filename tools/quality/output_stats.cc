#include "output_stats.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "refeval/compute_vector.h"
#include "refeval/dispatch.h"
#include "refeval/error.h"

namespace refeval::quality {
namespace {

// Any numeric or bool output as doubles: a model's token ids or TopK indices are outputs too (their
// SNR is that of the ids as numbers; max_abs 0 says they are equal). Other types name the output.
std::vector<double> values_of(const Tensor& t, const std::string& name) {
  if (!NumericAndBool::contains(t.dtype()))
    fail_runtime(fmt::format("output '{}': {} values have no error measure", name, dtype_short_name(t.dtype())));
  return visit<NumericAndBool>(t.dtype(), [&]<class T>() {
    const T* p = t.data<T>();
    std::vector<double> v(size_t(t.size()));
    for (size_t i = 0; i < v.size(); ++i) v[i] = double(compute_t<T>(p[i]));
    return v;
  });
}

}  // namespace

void OutputStats::add(const std::string& set, const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape())
    fail_runtime(fmt::format("output '{}' in set {}: shapes {} and {} differ", name, set, shape_to_string(a.shape()),
                             shape_to_string(b.shape())));
  const std::vector<double> x = values_of(a, name), y = values_of(b, name);
  double dot = 0, xx = 0, yy = 0, noise = 0;
  bool unequal_specials = false;  // NaN or an infinity on one side only, or infinities of two signs
  for (size_t i = 0; i < x.size(); ++i) {
    if (!std::isfinite(x[i]) || !std::isfinite(y[i])) {
      const bool same = (std::isnan(x[i]) && std::isnan(y[i])) || x[i] == y[i];
      unequal_specials = unequal_specials || !same;
      if (!same) max_abs = std::numeric_limits<double>::infinity();
      continue;
    }
    const double d = std::fabs(x[i] - y[i]);
    max_abs = std::max(max_abs, d);
    if (y[i] != 0) max_rel = std::max(max_rel, d / std::fabs(y[i]));
    dot += x[i] * y[i], xx += x[i] * x[i], yy += y[i] * y[i], noise += (x[i] - y[i]) * (x[i] - y[i]);
  }
  // Two zero vectors are the same direction; one zero against another vector is not. A NaN or an
  // infinity where the other side has none is no agreement at all (it failed silently before:
  // the comparisons with NaN were all false, so a NaN output read as equal).
  const double cosine = unequal_specials ? 0.0 : xx == 0 && yy == 0 ? 1.0 : xx == 0 || yy == 0 ? 0.0 : dot / std::sqrt(xx * yy);
  const double snr = unequal_specials ? -std::numeric_limits<double>::infinity()
                     : noise == 0     ? std::numeric_limits<double>::infinity()
                                      : 10 * std::log10(xx / noise);
  cosine_mean = (cosine_mean * sets + cosine) / (sets + 1);
  if (std::isfinite(snr)) snr_sum_ += snr, ++snr_finite_;
  // The mean over the sets that differ at all; infinite when none does.
  snr_db_mean = snr_finite_ ? snr_sum_ / double(snr_finite_) : std::numeric_limits<double>::infinity();
  cosine_min = std::min(cosine_min, cosine);
  if (sets == 0 || snr < snr_db_min) snr_db_min = snr, worst_set = set;
  ++sets;
  const int64_t last = a.rank() ? a.dim(a.rank() - 1) : 1;
  if (last > 0)
    for (size_t r = 0; r + size_t(last) <= x.size(); r += size_t(last)) {
      const auto ia = std::max_element(x.begin() + long(r), x.begin() + long(r) + last) - x.begin();
      const auto ib = std::max_element(y.begin() + long(r), y.begin() + long(r) + last) - y.begin();
      ++rows;
      top1_same += ia == ib;
    }
}

nlohmann::ordered_json OutputStats::to_json() const {
  auto number = [](double v) { return std::isfinite(v) ? nlohmann::ordered_json(v) : nlohmann::ordered_json(v > 0 ? "inf" : "-inf"); };
  return {{"name", name},           {"sets", sets},
          {"max_abs", max_abs},     {"max_rel", max_rel},
          {"cosine_min", cosine_min}, {"cosine_mean", cosine_mean},
          {"snr_db_min", number(snr_db_min)}, {"snr_db_mean", number(snr_db_mean)},
          {"top1_agreement", top1_agreement()}, {"rows", rows},
          {"worst_set", worst_set}};
}

}  // namespace refeval::quality

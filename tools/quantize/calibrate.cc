#include "calibrate.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include <fmt/format.h>

#include "refeval/error.h"

namespace refeval::quantize {
namespace {

constexpr int kQuantizedBins = 128;  // ORT's num_quantized_bins

// numpy.histogram's n equal bins over [lo, hi] for float32 data: its linspace in double, each
// edge rounded to float (a single value widened by 0.5 each way).
std::vector<float> uniform_edges(float lo, float hi, size_t n) {
  if (lo == hi) lo -= 0.5f, hi += 0.5f;
  std::vector<float> e(n + 1);
  for (size_t i = 0; i < n; ++i) e[i] = float(double(lo) + double(i) * (double(hi) - double(lo)) / double(n));
  e[n] = hi;
  return e;
}

// Counts of `x` in the bins of `edges`: bin i holds edges[i] <= x < edges[i + 1], the last bin its
// upper edge too; values outside (and NaN) are not counted, as numpy.histogram.
template <typename Edge>
std::vector<int64_t> counts(const std::vector<float>& x, const std::vector<Edge>& edges) {
  std::vector<int64_t> c(edges.size() - 1, 0);
  for (const float v : x) {
    if (!(Edge(v) >= edges.front() && Edge(v) <= edges.back())) continue;
    const size_t i = size_t(std::upper_bound(edges.begin(), edges.end(), Edge(v)) - edges.begin());
    ++c[std::min(i, c.size()) - 1];
  }
  return c;
}

std::pair<float, float> min_max(const std::vector<float>& x) {
  float lo = std::numeric_limits<float>::infinity(), hi = -lo;
  for (const float v : x)
    if (!std::isnan(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  if (lo > hi) lo = hi = 0;  // empty or all NaN
  return {lo, hi};
}

// ORT's smooth_distribution: eps moved onto the empty bins, taken evenly from the others; false
// when every bin is empty.
bool smooth(std::vector<double>& p) {
  const double eps = 0.0001;
  const auto zeros = double(std::count(p.begin(), p.end(), 0.0));
  const double nonzeros = double(p.size()) - zeros;
  if (nonzeros == 0) return false;
  const double eps1 = eps * zeros / nonzeros;
  for (double& v : p) v = double(float(v == 0 ? v + eps : v - eps1));
  return true;
}

// scipy.stats.entropy(p, q): both normalized, sum p log(p / q).
double kl(const std::vector<double>& p, const std::vector<double>& q) {
  const double sp = std::accumulate(p.begin(), p.end(), 0.0), sq = std::accumulate(q.begin(), q.end(), 0.0);
  double d = 0;
  for (size_t i = 0; i < p.size(); ++i)
    if (p[i] > 0) d += p[i] / sp * std::log((p[i] / sp) / (q[i] / sq));
  return d;
}

// TensorRT's threshold search as ORT's get_entropy_threshold: for each window of 2i + 1 bins
// around the zero bin (i from half the levels to half the bins), the reference p (the window, the
// outliers folded into its end bins) against q (the window merged into the levels and spread back
// over its non-empty bins by integer division); the window of the smallest KL divergence.
std::pair<float, float> entropy_threshold(const std::vector<int64_t>& hist, const std::vector<float>& edges) {
  const size_t n = hist.size(), zero = n / 2, half = kQuantizedBins / 2;
  double best = std::numeric_limits<double>::infinity();
  std::pair<float, float> threshold{edges.front(), edges.back()};
  bool first = true;
  for (size_t i = half; i <= zero; ++i) {
    const size_t start = zero - i, end = std::min(zero + i + 1, n);
    std::vector<double> p(hist.begin() + int64_t(start), hist.begin() + int64_t(end));
    const std::vector<int64_t> window(hist.begin() + int64_t(start), hist.begin() + int64_t(end));
    p.front() += double(std::accumulate(hist.begin(), hist.begin() + int64_t(start), int64_t(0)));
    p.back() += double(std::accumulate(hist.begin() + int64_t(end), hist.end(), int64_t(0)));
    const size_t merged = window.size() / kQuantizedBins;
    std::vector<int64_t> levels(kQuantizedBins, 0);
    for (size_t l = 0; l < size_t(kQuantizedBins); ++l)
      levels[l] = std::accumulate(window.begin() + int64_t(l * merged), window.begin() + int64_t(l * merged + merged), int64_t(0));
    levels.back() += std::accumulate(window.begin() + int64_t(kQuantizedBins * merged), window.end(), int64_t(0));
    std::vector<double> q(p.size(), 0.0);
    for (size_t l = 0; l < size_t(kQuantizedBins); ++l) {
      int64_t norm = 0;
      for (size_t k = l * merged; k < l * merged + merged; ++k) norm += p[k] != 0;
      if (norm)
        for (size_t k = l * merged; k < l * merged + merged; ++k) q[k] = double(levels[l] / norm);
    }
    const double d = smooth(p) && smooth(q) ? kl(p, q) : std::numeric_limits<double>::infinity();
    if (first || d < best) best = d, threshold = {edges[start], edges[end]}, first = false;
  }
  return threshold;
}

}  // namespace

RangeCollector::RangeCollector(CalibrationOptions options) : o_(std::move(options)) {
  if (o_.method != "minmax" && o_.method != "percentile" && o_.method != "entropy")
    fail_usage(fmt::format("--calibrate-method: '{}' is not minmax, percentile or entropy", o_.method));
  if (o_.percentile <= 0 || o_.percentile > 100) fail_usage(fmt::format("--calibrate-percentile: {} is not in (0, 100]", o_.percentile));
  if (o_.bins == 0) o_.bins = o_.method == "percentile" ? 2048 : kQuantizedBins;
  if (o_.method == "entropy" && o_.bins < kQuantizedBins)
    fail_usage(fmt::format("--calibrate-bins: entropy needs at least {} bins (its levels), not {}", kQuantizedBins, o_.bins));
  if (o_.bins < 1) fail_usage(fmt::format("--calibrate-bins: {} is not a number of bins", o_.bins));
}

void RangeCollector::add(const std::string& name, const std::vector<float>& x) {
  const auto [lo, hi] = min_max(x);
  auto it = values_.find(name);
  const bool fresh = it == values_.end();
  Histogram& h = fresh ? values_[name] : it->second;
  h.min = fresh ? lo : std::min(h.min, lo), h.max = fresh ? hi : std::max(h.max, hi);
  if (o_.method == "minmax") return;
  if (o_.method == "percentile") {
    std::vector<float> a(x.size());
    std::transform(x.begin(), x.end(), a.begin(), [](float v) { return std::fabs(v); });
    const auto [alo, ahi] = min_max(a);
    std::vector<int64_t> c;
    if (fresh) {
      h.edges = uniform_edges(alo, ahi, size_t(o_.bins));
      c = counts(a, h.edges);
    } else if (ahi > h.edges.back()) {
      // More bins of the same width, up to one past the new largest: numpy's arange of the float
      // edges, in double from its float second value (start + i * (float(start + width) - start));
      // counted on those, kept as float.
      const float width = h.edges[1] - h.edges[0], start = h.edges.back() + width;
      const double from = double(start), to = double(ahi + width), delta = double(start + width) - from;
      std::vector<double> wide(h.edges.begin(), h.edges.end());
      const auto more = int64_t(std::ceil((to - from) / double(width)));
      for (int64_t k = 0; k < more; ++k) wide.push_back(k == 0 ? from : from + double(k) * delta);
      c = counts(a, wide);
      h.edges.assign(wide.begin(), wide.end());
    } else {
      c = counts(a, h.edges);
    }
    for (size_t i = 0; i < h.counts.size(); ++i) c[i] += h.counts[i];
    h.counts = std::move(c);
    return;
  }
  // entropy: a histogram of x over [-t, t]
  const float t = std::max(std::fabs(lo), std::fabs(hi));
  if (fresh) {
    h.threshold = t;
    h.edges = uniform_edges(-t, t, size_t(o_.bins));
    h.counts = counts(x, h.edges);
    return;
  }
  const float old_t = h.threshold;
  const size_t n = h.counts.size();
  if (t <= old_t) {
    std::vector<int64_t> c = counts(x, h.edges);
    for (size_t i = 0; i < n; ++i) h.counts[i] += c[i];
  } else if (old_t == 0) {  // ORT adds the old counts bin for bin over the new range
    h.threshold = t;
    h.edges = uniform_edges(-t, t, n);
    std::vector<int64_t> c = counts(x, h.edges);
    for (size_t i = 0; i < n; ++i) c[i] += h.counts[i];
    h.counts = std::move(c);
  } else {  // whole bins of the old width on both sides
    const float stride = 2 * old_t / float(n);
    const auto extra = size_t(std::floor((t - old_t) / stride) + 1);
    const float new_t = float(extra) * stride + old_t;
    h.threshold = new_t;
    h.edges = uniform_edges(-new_t, new_t, n + 2 * extra);
    std::vector<int64_t> c = counts(x, h.edges);
    for (size_t i = 0; i < n; ++i) c[extra + i] += h.counts[i];
    h.counts = std::move(c);
  }
}

std::map<std::string, std::pair<float, float>> RangeCollector::ranges() const {
  std::map<std::string, std::pair<float, float>> out;
  for (const auto& [name, h] : values_) {
    std::pair<float, float> r{h.min, h.max};
    if (o_.method == "percentile") {
      const double total = double(std::accumulate(h.counts.begin(), h.counts.end(), int64_t(0)));
      double cdf = 0;
      size_t i = 0;
      for (; i < h.counts.size(); ++i) {
        cdf += double(h.counts[i]) / total;
        if (cdf >= o_.percentile / 100.0) break;
      }
      const float t = h.edges[std::min(i, h.edges.size() - 1)];
      r = {-t, t};
    } else if (o_.method == "entropy") {
      r = entropy_threshold(h.counts, h.edges);
    }
    out[name] = {std::max(r.first, h.min), std::min(r.second, h.max)};
  }
  return out;
}

}  // namespace refeval::quantize

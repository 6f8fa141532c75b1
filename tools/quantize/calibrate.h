// The activation ranges of `quantize --int8 --calibrate` (static QDQ), collected over the input sets
// as ONNX Runtime's quantize_static calibrators collect them (calibrate.py), one method each:
//   minmax      the smallest and largest element (MinMaxCalibrater);
//   percentile  a histogram of |x|: `bins` bins (2048) over [min |x|, max |x|] of the first set,
//               widened by bins of the same width when a later set goes further; the range is
//               (-t, t), t the edge where the cumulative count reaches `percentile` percent
//               (99.999), clipped to [min, max]. That is ORT's symmetric form
//               (CalibTensorRangeSymmetric); its default form takes the lower end from the same
//               |x| histogram, a number >= 0, which drops every negative value;
//   entropy     a histogram of x: `bins` bins (128, ORT's CalibNumBins) over [-a, a], a the
//               largest |x| of the first set, widened symmetrically by whole bins when a later set
//               goes further; the range is the window of bins around the zero bin whose merge into
//               128 levels keeps the distribution closest in KL divergence (TensorRT's method, as
//               ORT's get_entropy_threshold computes it, its integer division of merged counts
//               included), clipped to [min, max]. With as many bins as levels (ORT's default) the
//               window is the whole histogram.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace refeval::quantize {

struct CalibrationOptions {
  std::string method = "minmax";  // minmax, percentile or entropy
  double percentile = 99.999;
  int bins = 0;  // 0: the method's default (2048 for percentile, 128 for entropy)
};

class RangeCollector {
 public:
  explicit RangeCollector(CalibrationOptions options);
  // One value of one input set (float elements).
  void add(const std::string& name, const std::vector<float>& x);
  // (low, high) per value name.
  std::map<std::string, std::pair<float, float>> ranges() const;

 private:
  struct Histogram {
    std::vector<int64_t> counts;
    std::vector<float> edges;  // counts.size() + 1
    float min = 0, max = 0;
    float threshold = 0;  // entropy: the histogram's range is [-threshold, threshold] (widened by 0.5 at 0)
  };
  CalibrationOptions o_;
  std::map<std::string, Histogram> values_;
};

}  // namespace refeval::quantize

// MelWeightMatrix (17): [dft_length/2 + 1, num_mel_bins] triangular filters that map a linear
// spectrum to mel bands. num_mel_bins + 2 points are spaced evenly on the mel scale
// (mel = 2595 log10(1 + hz / 700)) from lower_edge_hertz to upper_edge_hertz, mapped to spectrum
// bins floor((dft_length + 1) * hz / sample_rate); filter i rises from point i to point i+1 and
// falls to point i+2.
#include <cmath>

#include "signal_common.h"

namespace refeval::ops {
namespace {

class MelWeightMatrix : public OpRun {
 public:
  using Types = SignalOutTypes;
  explicit MelWeightMatrix(const NodeContext& ctx) : dtype_(output_datatype(ctx)) {}
  Values run(const Values& in, RunContext&) override {
    const int64_t mel_bins = scalar_int(input_tensor(in, 0), "num_mel_bins");
    const int64_t dft_length = scalar_int(input_tensor(in, 1), "dft_length");
    const int64_t sample_rate = scalar_int(input_tensor(in, 2), "sample_rate");
    const double lower = scalar_double(input_tensor(in, 3), "lower_edge_hertz");
    const double upper = scalar_double(input_tensor(in, 4), "upper_edge_hertz");
    if (mel_bins < 0 || dft_length < 1 || sample_rate < 1)
      fail_runtime("num_mel_bins must be >= 0, dft_length and sample_rate positive");
    const int64_t spectrum_bins = dft_length / 2 + 1;
    auto to_mel = [](double hz) { return 2595 * std::log10(1 + hz / 700); };
    const double low_mel = to_mel(lower), high_mel = to_mel(upper);
    const double step = (high_mel - low_mel) / double(mel_bins + 2);
    std::vector<double> w = scratch_vector<double>(shape_size({spectrum_bins, mel_bins}), "the mel weight matrix");
    std::vector<int64_t> point(size_t(mel_bins + 2));
    for (int64_t i = 0; i < mel_bins + 2; ++i) {
      const double hz = 700 * (std::pow(10.0, (double(i) * step + low_mel) / 2595) - 1);
      point[size_t(i)] = int64_t(std::floor(double(dft_length + 1) * hz / double(sample_rate)));
    }
    auto set = [&](int64_t row, int64_t col, double v) {
      if (row < 0 || row >= spectrum_bins) fail_runtime(fmt::format("mel filter edge {} is outside the spectrum", row));
      w[size_t(row * mel_bins + col)] = v;
    };
    for (int64_t i = 0; i < mel_bins; ++i) {
      const int64_t lo = point[size_t(i)], center = point[size_t(i + 1)], hi = point[size_t(i + 2)];
      if (center == lo) set(center, i, 1);
      else for (int64_t j = lo; j <= center; ++j) set(j, i, double(j - lo) / double(center - lo));
      for (int64_t j = center; j < hi; ++j) set(j, i, double(hi - j) / double(hi - center));
    }
    return {numeric_from_doubles(dtype_, {spectrum_bins, mel_bins}, w)};
  }
 private:
  DType dtype_;
};

}  // namespace

void register_mel_weight_matrix(Registry& reg) { reg.add("", "MelWeightMatrix", {17}, make<MelWeightMatrix>); }

}  // namespace refeval::ops

// HannWindow, HammingWindow, BlackmanWindow (17): w[k] = sum_m a_m cos(2 pi m k / N) for
// k in [0, size), with N = size when periodic, size - 1 when symmetric.
#include <numbers>

#include "signal_common.h"

namespace refeval::ops {
namespace {

// Cosine-sum coefficients a_0, a_1, a_2 (signs included).
struct Hann { static constexpr double a[3] = {0.5, -0.5, 0}; };
struct Hamming { static constexpr double a[3] = {25.0 / 46, -21.0 / 46, 0}; };
struct Blackman { static constexpr double a[3] = {0.42, -0.5, 0.08}; };

template <class W>
class Window : public OpRun {
 public:
  using Types = SignalOutTypes;
  explicit Window(const NodeContext& ctx)
      : dtype_(output_datatype(ctx)), periodic_(ctx.attr<int64_t>("periodic", 1) != 0) {}
  Values run(const Values& in, RunContext&) override {
    const int64_t size = scalar_int(input_tensor(in, 0), "size");
    if (size < 0) fail_runtime(fmt::format("size must not be negative, got {}", size));
    const double n = double(periodic_ ? size : size - 1);
    std::vector<double> w = scratch_vector<double>(size, "the window");
    for (int64_t k = 0; k < size; ++k) {
      const double angle = n == 0 ? 0.0 : 2 * std::numbers::pi * double(k) / n;  // a 1-point symmetric window
      w[size_t(k)] = W::a[0] + W::a[1] * std::cos(angle) + W::a[2] * std::cos(2 * angle);
    }
    return {numeric_from_doubles(dtype_, {size}, w)};
  }
 private:
  DType dtype_;
  bool periodic_;
};

}  // namespace

void register_windows(Registry& reg) {
  reg.add("", "HannWindow", {17}, make<Window<Hann>>);
  reg.add("", "HammingWindow", {17}, make<Window<Hamming>>);
  reg.add("", "BlackmanWindow", {17}, make<Window<Blackman>>);
}

}  // namespace refeval::ops

// STFT (17): frames of frame_length samples every frame_step samples, each multiplied by the
// window and transformed by a DFT; onesided keeps the frame_length/2+1 non-redundant bins.
// Output shape [batch, frames, bins, 2].
#include "signal_common.h"

namespace refeval::ops {
namespace {

class STFT : public OpRun {
 public:
  using Types = Floats;
  explicit STFT(const NodeContext& ctx) : onesided_(ctx.attr<int64_t>("onesided", 1) != 0) {}

  Values run(const Values& in, RunContext&) override {
    const Tensor& signal = input_tensor(in, 0);
    if (signal.rank() != 3 || (signal.dim(2) != 1 && signal.dim(2) != 2))
      fail_runtime("signal must have shape [batch, length, 1 or 2], got " + shape_to_string(signal.shape()));
    const int64_t batch = signal.dim(0), length = signal.dim(1), comps = signal.dim(2);
    const int64_t step = scalar_int(input_tensor(in, 1), "frame_step");
    std::vector<double> window;
    if (has_value(in, 2)) {
      const Tensor& w = input_tensor(in, 2);
      if (w.rank() != 1) fail_runtime("window must be 1-D");
      window = to_doubles(w);
    }
    int64_t frame = int64_t(window.size());
    if (has_value(in, 3)) {
      frame = scalar_int(input_tensor(in, 3), "frame_length");
      if (!window.empty() && frame != int64_t(window.size()))
        fail_runtime(fmt::format("frame_length {} differs from the window length {}", frame, window.size()));
    } else if (!has_value(in, 2)) {
      fail_runtime("one of window and frame_length must be given");
    }
    if (step < 1) fail_runtime(fmt::format("frame_step must be positive, got {}", step));
    if (frame < 1 || frame > length) fail_runtime(fmt::format("frame_length {} must be in [1, {}]", frame, length));
    if (onesided_ && comps == 2) fail_runtime("onesided STFT needs a real signal");
    if (window.empty()) window.assign(size_t(frame), 1.0);

    const int64_t frames = 1 + (length - frame) / step, bins = onesided_ ? frame / 2 + 1 : frame;
    const Shape out_shape{batch, frames, bins, 2};
    std::vector<double> ys = scratch_vector<double>(shape_size(out_shape), "the STFT output");
    const std::vector<double> xs = to_doubles(signal);
    std::vector<cdouble> line(static_cast<size_t>(frame));
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t f = 0; f < frames; ++f) {
        for (int64_t j = 0; j < frame; ++j) {
          const size_t k = size_t((b * length + f * step + j) * comps);
          line[size_t(j)] = cdouble(xs[k], comps == 2 ? xs[k + 1] : 0.0) * window[size_t(j)];
        }
        fft(line, false);
        for (int64_t k = 0; k < bins; ++k) {
          const size_t dst = size_t(((b * frames + f) * bins + k) * 2);
          ys[dst] = line[size_t(k)].real();
          ys[dst + 1] = line[size_t(k)].imag();
        }
      }
    return {from_doubles(signal.dtype(), out_shape, ys)};
  }

 private:
  bool onesided_;
};

}  // namespace

void register_stft(Registry& reg) { reg.add("", "STFT", {17}, make<STFT>); }

}  // namespace refeval::ops

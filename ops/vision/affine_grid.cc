// AffineGrid (20): the sampling grid of GridSample for affine matrices theta (N, 2, 3) or
// (N, 3, 4): grid[n, ..., :] = theta[n] @ [x, y, (z,) 1], where each base coordinate spans
// [-1, 1] over its dimension (pixel corners with align_corners, pixel centres otherwise).
#include "vision_common.h"

namespace refeval::ops {
namespace {

class AffineGrid : public OpRun {
 public:
  using Types = Floats;
  explicit AffineGrid(const NodeContext& ctx) : align_corners_(ctx.attr<int64_t>("align_corners", 0) != 0) {}

  Values run(const Values& in, RunContext&) override {
    const Tensor& theta = input_tensor(in, 0);
    const std::vector<int64_t> size = ints_of(input_tensor(in, 1));
    if (size.size() != 4 && size.size() != 5) fail_runtime("size must be (N, C, H, W) or (N, C, D, H, W)");
    const size_t r = size.size() - 2;  // spatial dims: 2 or 3
    if (theta.rank() != 3 || theta.dim(0) != size[0] || theta.dim(1) != int64_t(r) || theta.dim(2) != int64_t(r + 1))
      fail_runtime(fmt::format("theta shape {} does not match size", shape_to_string(theta.shape())));
    for (int64_t s : size)
      if (s < 0) fail_runtime("size must not be negative");
    // Spatial dims in output order (D,) H, W; base coordinates are listed x (W) first.
    const Shape spatial(size.begin() + 2, size.end());
    auto base = [&](size_t d, int64_t i) {
      const double len = double(spatial[d]);
      if (align_corners_) return len <= 1 ? -1.0 : -1.0 + 2.0 * double(i) / (len - 1);
      return (2.0 * double(i) + 1.0) / len - 1.0;
    };
    const std::vector<double> th = to_doubles(theta);
    Shape out_shape{size[0]};
    out_shape.insert(out_shape.end(), spatial.begin(), spatial.end());
    out_shape.push_back(int64_t(r));
    const int64_t points = shape_size(spatial);
    std::vector<double> ys(size_t(shape_size(out_shape)));
    std::vector<int64_t> pos(r);
    std::vector<double> v(r + 1);
    for (int64_t n = 0; n < size[0]; ++n)
      for (int64_t p = 0; p < points; ++p) {
        int64_t rest = p;
        for (size_t d = r; d-- > 0;) pos[d] = rest % spatial[d], rest /= spatial[d];
        for (size_t k = 0; k < r; ++k) v[k] = base(r - 1 - k, pos[r - 1 - k]);  // x, y, (z)
        v[r] = 1;
        for (size_t row = 0; row < r; ++row) {
          double acc = 0;
          for (size_t k = 0; k <= r; ++k) acc += th[size_t(n) * r * (r + 1) + row * (r + 1) + k] * v[k];
          ys[size_t((n * points + p) * int64_t(r)) + row] = acc;
        }
      }
    return {from_doubles(theta.dtype(), out_shape, ys)};
  }

 private:
  bool align_corners_;
};

}  // namespace

void register_affine_grid(Registry& reg) { reg.add("", "AffineGrid", {20}, make<AffineGrid>); }

}  // namespace refeval::ops

// GridSample (16: 4-D, modes bilinear/nearest/bicubic; 20, 22: N-D, modes linear/nearest/cubic).
// Y[n, c, p] samples X[n, c] at the point grid[n, p], whose components are normalised to [-1, 1]
// and listed innermost dimension first (x, y, z). Out-of-range samples read zeros, the border
// value, or the reflection of the coordinate (padding_mode).
#include <algorithm>
#include <cmath>
#include <complex>

#include "vision_common.h"

namespace refeval::ops {
namespace {

enum class Mode { Linear, Nearest, Cubic };
enum class Padding { Zeros, Border, Reflection };

// Reflects x into [lo, hi] (repeatedly, like a mirror hall).
double reflect(double x, double lo, double hi) {
  const double range = hi - lo;
  if (range <= 0) return lo;
  if (x < lo || x > hi) {
    const double dx = x < lo ? lo - x : x - hi;
    const double k = std::floor(dx / range), r = dx - k * range;
    const bool even = std::fmod(k, 2.0) == 0;
    x = (x < lo) == even ? lo + r : hi - r;
  }
  return x;
}

void cubic_coeffs(double t, double c[4]) {
  const double A = -0.75;
  auto far = [&](double s) { return ((A * s - 5 * A) * s + 8 * A) * s - 4 * A; };
  auto near = [&](double s) { return ((A + 2) * s - (A + 3)) * s * s + 1; };
  c[0] = far(t + 1), c[1] = near(t), c[2] = near(1 - t), c[3] = far(2 - t);
}

class GridSample : public OpRun {
 public:
  // Numeric types interpolate; bool, string and complex are sampled by nearest only.
  using Types = Concat<Numeric, TypeList<bool, std::string>, Complex>;
  explicit GridSample(const NodeContext& ctx) : since_(ctx.since_version()) {
    align_corners_ = ctx.attr<int64_t>("align_corners", 0) != 0;
    const std::string mode = ctx.attr<std::string>("mode", since_ >= 20 ? "linear" : "bilinear");
    const std::string pad = ctx.attr<std::string>("padding_mode", "zeros");
    if (mode == (since_ >= 20 ? "linear" : "bilinear")) mode_ = Mode::Linear;
    else if (mode == "nearest") mode_ = Mode::Nearest;
    else if (mode == (since_ >= 20 ? "cubic" : "bicubic")) mode_ = Mode::Cubic;
    else ctx.fail("unsupported mode " + mode);
    if (pad == "zeros") padding_ = Padding::Zeros;
    else if (pad == "border") padding_ = Padding::Border;
    else if (pad == "reflection") padding_ = Padding::Reflection;
    else ctx.fail("unsupported padding_mode " + pad);
  }

  Values run(const Values& in, RunContext&) override {
    const Tensor& x = input_tensor(in, 0);
    const Tensor& grid = input_tensor(in, 1);
    const size_t r = x.rank() < 2 ? 0 : x.rank() - 2;
    if (r == 0 || (since_ < 20 && r != 2)) fail_runtime("X must be (N, C, D1, ...)" + std::string(since_ < 20 ? " with 2 spatial dims" : ""));
    if (grid.rank() != r + 2 || grid.dim(0) != x.dim(0) || grid.dim(r + 1) != int64_t(r))
      fail_runtime(fmt::format("grid shape {} does not fit X shape {}", shape_to_string(grid.shape()), shape_to_string(x.shape())));
    Shape out_shape{x.dim(0), x.dim(1)};
    for (size_t d = 1; d <= r; ++d) out_shape.push_back(grid.dim(d));
    const int64_t points = shape_size(out_shape) / std::max<int64_t>(1, x.dim(0) * x.dim(1));
    const Shape dims(x.shape().begin() + 2, x.shape().end());
    const int64_t plane = shape_size(dims);
    if (plane == 0 && shape_size(out_shape) > 0) fail_runtime("cannot sample an empty image");
    // Sample coordinates, denormalised in the grid's own precision (as the reference does).
    const std::vector<double> coords = visit<Floats>(grid.dtype(), [&]<class G>() {
      using C = compute_t<G>;
      const G* g = grid.data<G>();
      std::vector<double> v(size_t(grid.size()));
      for (int64_t p = 0; p < grid.size() / int64_t(r); ++p)
        for (size_t i = 0; i < r; ++i) {
          const C len = C(dims[r - 1 - i]), t = C(g[p * int64_t(r) + int64_t(i)]);
          const C c = align_corners_ ? (t + C(1)) / C(2) * (len - C(1)) : ((t + C(1)) * len - C(1)) / C(2);
          v[size_t(p * int64_t(r) + int64_t(r - 1 - i))] = double(c);  // reversed: outermost dim first
        }
      return v;
    });
    if (!Numeric::contains(x.dtype())) {  // other element types: nearest only, a gather
      if (mode_ != Mode::Nearest) fail_runtime("only nearest mode samples non-numeric element types");
      return {visit<Concat<TypeList<bool, std::string>, Complex>>(x.dtype(), [&]<class T>() {
        Tensor y(x.dtype(), out_shape);
        const T* xs = x.data<T>();
        T* out = y.data<T>();
        for (int64_t n = 0; n < x.dim(0); ++n)
          for (int64_t p = 0; p < points; ++p) {
            const int64_t off = nearest_offset(dims, &coords[size_t((n * points + p) * int64_t(r))]);
            for (int64_t c = 0; c < x.dim(1); ++c)
              out[(n * x.dim(1) + c) * points + p] = off < 0 ? T{} : xs[(n * x.dim(1) + c) * plane + off];
          }
        return y;
      })};
    }
    return {visit<Numeric>(x.dtype(), [&]<class T>() {
      const T* xs = x.data<T>();
      std::vector<double> ys(size_t(shape_size(out_shape)));
      for (int64_t n = 0; n < x.dim(0); ++n)
        for (int64_t p = 0; p < points; ++p) {
          const double* pt = &coords[size_t((n * points + p) * int64_t(r))];
          for (int64_t c = 0; c < x.dim(1); ++c)
            ys[size_t((n * x.dim(1) + c) * points + p)] = sample(xs + (n * x.dim(1) + c) * plane, dims, pt);
        }
      Tensor y(x.dtype(), out_shape);
      T* out = y.data<T>();
      for (size_t i = 0; i < ys.size(); ++i) out[i] = store_double<T>(ys[i]);
      return y;
    })};
  }

 private:
  // The value of one plane at coordinate pt (outermost dim first).
  template <class T>
  double sample(const T* plane, const Shape& dims, const double* pt) const {
    const size_t r = dims.size();
    std::vector<double> v(pt, pt + r);
    std::vector<double> lo(r), hi(r);
    for (size_t i = 0; i < r; ++i) {
      lo[i] = align_corners_ ? 0.0 : -0.5;
      hi[i] = align_corners_ ? double(dims[i] - 1) : double(dims[i]) - 0.5;
      if (mode_ == Mode::Nearest) v[i] = std::nearbyint(v[i]);  // half to even
      if (v[i] < lo[i] || v[i] > hi[i]) {
        if (padding_ == Padding::Border) v[i] = std::clamp(v[i], 0.0, double(dims[i] - 1));
        else if (padding_ == Padding::Reflection) v[i] = reflect(v[i], lo[i], hi[i]);
      }
    }
    // Per dim: the taps (index, weight); then the sum over every combination of taps.
    const int taps = mode_ == Mode::Nearest ? 1 : mode_ == Mode::Linear ? 2 : 4;
    std::vector<int64_t> idx(r * size_t(taps));
    std::vector<double> w(r * size_t(taps));
    for (size_t i = 0; i < r; ++i) {
      int64_t* ix = &idx[i * size_t(taps)];
      double* wi = &w[i * size_t(taps)];
      if (mode_ == Mode::Nearest) { ix[0] = int64_t(v[i]); wi[0] = 1; continue; }
      const double f = std::floor(v[i]), t = v[i] - f;
      const int64_t x0 = int64_t(f);
      if (mode_ == Mode::Linear) {
        ix[0] = x0, ix[1] = x0 + 1, wi[0] = 1 - t, wi[1] = t;
      } else {
        for (int k = 0; k < 4; ++k) ix[k] = x0 - 1 + k;
        cubic_coeffs(t, wi);
      }
    }
    double total = 0;
    std::vector<int> k(r, 0);
    while (true) {
      double weight = 1;
      int64_t off = 0;
      bool zero = false;
      for (size_t i = 0; i < r; ++i) {
        weight *= w[i * size_t(taps) + size_t(k[i])];
        int64_t j = idx[i * size_t(taps) + size_t(k[i])];
        if (j < 0 || j >= dims[i]) {
          if (padding_ == Padding::Zeros) zero = true;
          else if (padding_ == Padding::Border) j = std::clamp<int64_t>(j, 0, dims[i] - 1);
          else j = std::clamp<int64_t>(int64_t(reflect(double(j), lo[i], hi[i])), 0, dims[i] - 1);
        }
        off = off * dims[i] + j;
      }
      if (!zero && weight != 0) total += weight * double(compute_t<T>(plane[off]));
      size_t d = r;
      while (d-- > 0 && ++k[d] == taps) k[d] = 0;
      if (d == size_t(-1)) break;
    }
    return total;
  }

  // Nearest mode: the offset of the sampled element in its plane, -1 for a zero-padded sample.
  int64_t nearest_offset(const Shape& dims, const double* pt) const {
    int64_t off = 0;
    for (size_t i = 0; i < dims.size(); ++i) {
      const double lo = align_corners_ ? 0.0 : -0.5, hi = align_corners_ ? double(dims[i] - 1) : double(dims[i]) - 0.5;
      double v = std::nearbyint(pt[i]);
      if (v < lo || v > hi) {
        if (padding_ == Padding::Border) v = std::clamp(v, 0.0, double(dims[i] - 1));
        else if (padding_ == Padding::Reflection) v = reflect(v, lo, hi);
      }
      int64_t j = int64_t(v);
      if (j < 0 || j >= dims[i]) {
        if (padding_ == Padding::Zeros) return -1;
        j = std::clamp<int64_t>(j, 0, dims[i] - 1);
      }
      off = off * dims[i] + j;
    }
    return off;
  }

  int since_;
  bool align_corners_;
  Mode mode_ = Mode::Linear;
  Padding padding_ = Padding::Zeros;
};

}  // namespace

void register_grid_sample(Registry& reg) { reg.add("", "GridSample", {16, 20, 22}, make<GridSample>); }

}  // namespace refeval::ops

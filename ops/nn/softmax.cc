// Softmax, LogSoftmax, Hardmax. Versions 1 and 11 coerce the input to 2-D at `axis` (default 1)
// and normalise each row of prod(shape[axis:]) elements; version 13 normalises along the one
// axis (default -1). Softmax subtracts the maximum first, so it cannot overflow; float
// exponentials run on the vector math library and a row's sum is numpy's pairwise sum.
#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "../math/vector_math.h"
#include "refeval/elementwise.h"
#include "refeval/registry.h"
#include "refeval/threads.h"

namespace refeval::ops {
namespace {

enum class Kind { Softmax, LogSoftmax, Hardmax };

template <Kind K>
class SoftmaxFamily : public OpRun {
 public:
  using Types = Floats;
  explicit SoftmaxFamily(const NodeContext& ctx)
      : coerce_2d_(ctx.since_version() < 13), axis_(ctx.attr<int64_t>("axis", ctx.since_version() < 13 ? 1 : -1)) {}

  Values run(const Values& in, RunContext& ctx) override {
    const Tensor& x = input_tensor(in, 0);
    const int64_t r = int64_t(x.rank());
    if (axis_ < -r || axis_ > r - 1)  // a scalar has no axis to normalise along
      ctx.fail(fmt::format("axis {} is out of range for rank {}", axis_, r));
    const size_t axis = size_t(axis_ < 0 ? axis_ + r : axis_);
    int64_t outer = 1, n = 1, inner = 1;
    for (size_t d = 0; d < x.rank(); ++d) {
      if (d < axis) outer *= x.dim(d);
      else if (d == axis || coerce_2d_) n *= x.dim(d);
      else inner *= x.dim(d);
    }
    Tensor y(x.dtype(), x.shape());
    if constexpr (K != Kind::Hardmax) {
      // float rows across a middle axis: a whole (n x inner) slab at a time, the columns side by side.
      if (x.dtype() == DType::Float && inner > 1 && n > 0) {
        const float* px = x.data<float>();
        float* py = y.data<float>();
        parallel_for(outer, std::max<int64_t>(1, kParallelElements / std::max<int64_t>(n * inner, 1)), [&](int64_t first, int64_t last) {
          std::vector<float> scratch;
          for (int64_t o = first; o < last; ++o) normalise_columns(px + o * n * inner, py + o * n * inner, n, inner, scratch);
        });
        return {y};
      }
    }
    visit<Types>(x.dtype(), [&]<class T>() {
      using C = compute_t<T>;
      const T* px = x.data<T>();
      T* py = y.data<T>();
      // Rows (o, i) are independent: large inputs split them across threads. A float row along
      // the last axis is normalised where it lies.
      parallel_for(outer * inner, kParallelElements / std::max<int64_t>(n, 1) + 1, [&](int64_t first, int64_t last) {
        std::vector<C> row(static_cast<size_t>(inner == 1 && std::is_same_v<T, C> ? 0 : n)), scratch;
        for (int64_t r = first; r < last; ++r) {
          const int64_t base = (r / inner) * n * inner + r % inner;
          if constexpr (std::is_same_v<T, C>) {
            if (inner == 1) {
              normalise(px + base, py + base, n, scratch);
              continue;
            }
          }
          for (int64_t j = 0; j < n; ++j) row[size_t(j)] = C(px[base + j * inner]);
          normalise(row.data(), row.data(), n, scratch);
          for (int64_t j = 0; j < n; ++j) py[base + j * inner] = from_compute<T>(row[size_t(j)]);
        }
      });
    });
    return {y};
  }

 private:
  // The sum of v[0, n) as numpy sums a contiguous array (pairwise: 8 partial sums per block of up
  // to 128, blocks halved recursively), not one chain of n dependent additions.
  template <class C>
  static C pairwise_sum(const C* v, int64_t n) {
    if (n < 8) {
      C sum = 0;
      for (int64_t i = 0; i < n; ++i) sum += v[i];
      return sum;
    }
    if (n <= 128) {
      typedef C C8 __attribute__((vector_size(8 * sizeof(C))));  // the 8 sums in vector registers
      C8 r, w;
      __builtin_memcpy(&r, v, sizeof r);
      int64_t i = 8;
      for (; i < n - n % 8; i += 8) {
        __builtin_memcpy(&w, v + i, sizeof w);
        r += w;
      }
      C sum = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
      for (; i < n; ++i) sum += v[i];
      return sum;
    }
    int64_t half = n / 2;
    half -= half % 8;
    return pairwise_sum(v, half) + pairwise_sum(v + half, n - half);
  }

  // e^v for n values (float through the vector math library, ops/math/vector_math.h).
  template <class C>
  static void exp_of(const C* v, C* out, int64_t n) {
    if constexpr (std::is_same_v<C, float>) exp_floats(v, out, n);
    else
      for (int64_t i = 0; i < n; ++i) out[i] = std::exp(v[i]);
  }

  // The maximum of x[0, n), NaN if there is one (as numpy's max). Float rows compare 8 lanes at a
  // time (a row's maximum value does not depend on the order of the comparisons).
  template <class C>
  static C row_max(const C* x, int64_t n) {
    bool nan = false;
    C m = x[0];
    if constexpr (std::is_same_v<C, float>) {
      m = extreme_floats<true>(x, n, nan);
    } else {
      for (int64_t j = 0; j < n; ++j) nan |= x[j] != x[j], m = x[j] > m ? x[j] : m;
    }
    if (nan)
      for (int64_t j = 0;; ++j)
        if (std::isnan(x[j])) return x[j];
    return m;
  }

  // y = normalised x (n values; y may be x); LogSoftmax keeps its exponentials in `scratch`.
  template <class C>
  static void normalise(const C* x, C* y, int64_t n, std::vector<C>& scratch) {
    if (n == 0) return;
    if constexpr (K == Kind::Hardmax) {
      int64_t arg = 0;  // first maximum (NaN wins, as numpy's argmax)
      for (int64_t j = 1; j < n; ++j)
        if (!std::isnan(x[arg]) && (std::isnan(x[j]) || x[j] > x[arg])) arg = j;
      for (int64_t j = 0; j < n; ++j) y[j] = C(j == arg ? 1 : 0);
      return;
    }
    const C m = row_max(x, n);
    if constexpr (K == Kind::Softmax) {
      for (int64_t j = 0; j < n; ++j) y[j] = x[j] - m;
      exp_of(y, y, n);
      const C sum = pairwise_sum(y, n);
      for (int64_t j = 0; j < n; ++j) y[j] /= sum;
    } else {
      scratch.resize(static_cast<size_t>(n));
      for (int64_t j = 0; j < n; ++j) scratch[size_t(j)] = x[j] - m;
      exp_of(scratch.data(), scratch.data(), n);
      const C log_sum = std::log(pairwise_sum(scratch.data(), n));
      for (int64_t j = 0; j < n; ++j) y[j] = x[j] - m - log_sum;
    }
  }

  // pairwise_sum over the rows of e (n rows of w values) for every column at once: the same
  // additions in the same order as pairwise_sum makes for one column, so the same bits.
  static void pairwise_rows(const float* e, int64_t n, int64_t w, float* out, std::vector<float>& tmp) {
    const auto add_row = [w](float* acc, const float* row) {
      for (int64_t c = 0; c < w; ++c) acc[c] += row[c];
    };
    if (n < 8) {
      std::fill(out, out + w, 0.0f);
      for (int64_t i = 0; i < n; ++i) add_row(out, e + i * w);
      return;
    }
    if (n <= 128) {
      const size_t base = tmp.size();
      tmp.resize(base + size_t(8 * w));
      float* r = tmp.data() + base;
      std::copy_n(e, 8 * w, r);
      int64_t i = 8;
      for (; i < n - n % 8; i += 8)
        for (int64_t j = 0; j < 8; ++j) add_row(r + j * w, e + (i + j) * w);
      for (int64_t c = 0; c < w; ++c) {
        const float* l = r + c;
        out[c] = ((l[0] + l[w]) + (l[2 * w] + l[3 * w])) + ((l[4 * w] + l[5 * w]) + (l[6 * w] + l[7 * w]));
      }
      for (; i < n; ++i) add_row(out, e + i * w);
      tmp.resize(base);
      return;
    }
    int64_t half = n / 2;
    half -= half % 8;
    const size_t base = tmp.size();
    tmp.resize(base + size_t(w));
    pairwise_rows(e, half, w, out, tmp);
    pairwise_rows(e + half * w, n - half, w, tmp.data() + base, tmp);
    for (int64_t c = 0; c < w; ++c) out[c] += tmp[base + size_t(c)];
    tmp.resize(base);
  }

  // normalise() of every column of a float (n x w) slab, the columns side by side (w contiguous
  // values a row): the same maximum (the first NaN of a column if it has one), the same
  // exponentials (lane by lane) and the same pairwise sums, so the same bits as gathering each
  // column into a row, without the strided gathers.
  static void normalise_columns(const float* x, float* y, int64_t n, int64_t w, std::vector<float>& scratch) {
    scratch.assign(size_t(2 * w), 0.0f);
    float* m = scratch.data();
    float* sum = m + w;
    std::copy_n(x, w, m);
    bool nan = false;
    for (int64_t j = 0; j < n; ++j)
      for (int64_t c = 0; c < w; ++c) {
        const float v = x[j * w + c];
        nan |= v != v;
        m[c] = v > m[c] ? v : m[c];
      }
    if (nan)
      for (int64_t c = 0; c < w; ++c)
        for (int64_t j = 0; j < n; ++j)
          if (std::isnan(x[j * w + c])) {
            m[c] = x[j * w + c];
            break;
          }
    float* e = K == Kind::Softmax ? y : nullptr;
    std::vector<float> exps;
    if constexpr (K == Kind::LogSoftmax) {
      exps.resize(size_t(n * w));
      e = exps.data();
    }
    for (int64_t j = 0; j < n; ++j)
      for (int64_t c = 0; c < w; ++c) e[j * w + c] = x[j * w + c] - m[c];
    exp_floats(e, e, n * w);
    std::vector<float> tmp;
    pairwise_rows(e, n, w, sum, tmp);
    if constexpr (K == Kind::Softmax) {
      for (int64_t j = 0; j < n; ++j)
        for (int64_t c = 0; c < w; ++c) y[j * w + c] /= sum[c];
    } else {
      for (int64_t c = 0; c < w; ++c) sum[c] = std::log(sum[c]);
      for (int64_t j = 0; j < n; ++j)
        for (int64_t c = 0; c < w; ++c) y[j * w + c] = x[j * w + c] - m[c] - sum[c];
    }
  }

  bool coerce_2d_;
  int64_t axis_;
};

}  // namespace

void register_softmax(Registry& reg) {
  reg.add("", "Softmax", {1, 11, 13}, make<SoftmaxFamily<Kind::Softmax>>);
  reg.add("", "LogSoftmax", {1, 11, 13}, make<SoftmaxFamily<Kind::LogSoftmax>>);
  reg.add("", "Hardmax", {1, 11, 13}, make<SoftmaxFamily<Kind::Hardmax>>);
}

}  // namespace refeval::ops

#include "oracle.h"

#include <algorithm>
#include <cmath>
#include <memory>

#ifdef __AVX2__
#include <immintrin.h>
#endif

#include <fmt/format.h>

#include "refeval/compute_vector.h"
#include "refeval/error.h"

namespace refeval::accuracy {
namespace {

// The spacing of the model's type at |x|: 2^(e - p) with x = m·2^e, m in [0.5, 1), the exponent
// held at the smallest normal's so subnormals share its spacing.
double ulp_at(DType t, double x) {
  int p = 24, emin = -125;  // float32 (and bfloat16's exponent range)
  if (t == DType::Float16) p = 11, emin = -13;
  else if (t == DType::BFloat16) p = 8;
  else if (t == DType::Double) p = 53, emin = -1021;
  int e = emin;
  if (x != 0 && std::isfinite(x)) std::frexp(std::fabs(x), &e);
  return std::ldexp(1.0, std::max(e, emin) - p);
}

Tensor widen_tensor(const Tensor& t) {
  if (t.dtype() == DType::Float) {
    Tensor out = Tensor::uninitialized(DType::Double, t.shape());
    const float* src = t.data<float>();
    double* dst = out.data<double>();
    for (int64_t i = 0; i < t.size(); ++i) dst[i] = src[i];
    return out;
  }
  return is_widened(t.dtype()) ? from_doubles(DType::Double, t.shape(), to_doubles(t)) : t;
}

void widen_type(ValueType& t) {
  if (is_widened(t.dtype)) t.dtype = DType::Double;
  if (t.elem) {
    auto elem = std::make_shared<ValueType>(*t.elem);
    widen_type(*elem);
    t.elem = elem;
  }
}

void widen_nodes(std::vector<Node>& nodes) {
  for (Node& n : nodes) {
    const bool plain = n.domain.empty();
    for (Attribute& a : n.attributes) {
      if (a.type == AttrType::Tensor) a.t = widen_tensor(a.t);
      for (Tensor& t : a.tensors) t = widen_tensor(t);
      // Cast's `to`, EyeLike's and the Random* ops' `dtype`: a float target becomes double.
      if (plain && a.type == AttrType::Int && (a.name == "to" || a.name == "dtype") && is_valid_dtype(int32_t(a.i)) &&
          is_widened(DType(a.i)))
        a.i = int64_t(DType::Double);
      // Constant's float attributes would make a float32 tensor: make them a double tensor.
      if (plain && n.op_type == "Constant" && (a.name == "value_float" || a.name == "value_floats")) {
        a.t = a.name == "value_float" ? Tensor::scalar<double>(a.f)
                                      : Tensor::from_vector<double>({int64_t(a.floats.size())},
                                                                    std::vector<double>(a.floats.begin(), a.floats.end()));
        a.name = "value";
        a.type = AttrType::Tensor;
      }
      if (a.g) {
        auto g = std::make_shared<Graph>(*a.g);
        widen_graph(*g);
        a.g = g;
      }
      for (auto& body : a.graphs) {
        auto g = std::make_shared<Graph>(*body);
        widen_graph(*g);
        body = g;
      }
    }
  }
}

}  // namespace

void ErrorAccumulator::add(const Tensor& model, const Tensor& reference, const std::string& what, DType ulp_type) {
  if (ulp_type == DType::Undefined) ulp_type = model.dtype();
  if (model.shape() != reference.shape())
    fail_runtime(fmt::format("'{}': shape {} in the model run but {} in the reference", what, shape_to_string(model.shape()),
                             shape_to_string(reference.shape())));
  // The common pairs read in place (a profile measures every value of two runs); others widened.
  if (model.dtype() == DType::Float && reference.dtype() == DType::Double)
    add_elements(model.data<float>(), reference.data<double>(), size_t(model.size()), ulp_type);
  else if (model.dtype() == DType::Float && reference.dtype() == DType::Float)
    add_elements(model.data<float>(), reference.data<float>(), size_t(model.size()), ulp_type);
  else if (model.dtype() == DType::Double && reference.dtype() == DType::Double)
    add_elements(model.data<double>(), reference.data<double>(), size_t(model.size()), ulp_type);
  else {
    const std::vector<double> m = to_doubles(model), o = to_doubles(reference);
    add_elements(m.data(), o.data(), m.size(), ulp_type);
  }
}

namespace {

// One block's figures over four lanes: the largest |m - r|, the largest |m - r| / |r| (0 where
// they are equal), the sums of (m - r)^2 and r^2; `finite` false when an element is NaN or Inf
// (the figures are then meaningless). AVX2 where the build has it: the error pass reads every
// value of two runs, once, so it is bound by memory when it is vectorised and by the divide when
// it is not.
struct BlockFigures {
  double max_abs = 0, max_rel = 0, d2 = 0, o2 = 0;
  bool finite = true;
};

#ifdef __AVX2__
inline __m256d load4(const float* p) { return _mm256_cvtps_pd(_mm_loadu_ps(p)); }
inline __m256d load4(const double* p) { return _mm256_loadu_pd(p); }
inline double hmax(__m256d v) {
  alignas(32) double l[4];
  _mm256_store_pd(l, v);
  return std::max(std::max(l[0], l[1]), std::max(l[2], l[3]));
}
inline double hsum(__m256d v) {
  alignas(32) double l[4];
  _mm256_store_pd(l, v);
  return (l[0] + l[1]) + (l[2] + l[3]);
}
#endif

template <class M, class R>
BlockFigures block_figures(const M* model, const R* reference, size_t n) {
  BlockFigures f;
  size_t i = 0;
#ifdef __AVX2__
  const __m256d sign = _mm256_set1_pd(-0.0), huge = _mm256_set1_pd(std::numeric_limits<double>::max()), zero = _mm256_setzero_pd();
  __m256d max_abs = zero, max_rel = zero, d2 = zero, o2 = zero, finite = _mm256_castsi256_pd(_mm256_set1_epi64x(-1));
  for (; i + 4 <= n; i += 4) {
    const __m256d m = load4(model + i), o = load4(reference + i);
    const __m256d abs_o = _mm256_andnot_pd(sign, o), d = _mm256_andnot_pd(sign, _mm256_sub_pd(m, o));
    finite = _mm256_and_pd(finite, _mm256_and_pd(_mm256_cmp_pd(_mm256_andnot_pd(sign, m), huge, _CMP_LE_OQ),
                                                 _mm256_cmp_pd(abs_o, huge, _CMP_LE_OQ)));
    max_abs = _mm256_max_pd(max_abs, d);
    // d / 0 is infinite, as a relative error of a nonzero difference at zero should be; 0 / 0 masked.
    max_rel = _mm256_max_pd(max_rel, _mm256_andnot_pd(_mm256_cmp_pd(d, zero, _CMP_EQ_OQ), _mm256_div_pd(d, abs_o)));
    d2 = _mm256_add_pd(d2, _mm256_mul_pd(d, d));
    o2 = _mm256_add_pd(o2, _mm256_mul_pd(o, o));
  }
  f.finite = _mm256_movemask_pd(finite) == 0xF;
  f.max_abs = hmax(max_abs), f.max_rel = hmax(max_rel), f.d2 = hsum(d2), f.o2 = hsum(o2);
#endif
  for (; i < n; ++i) {
    const double m = double(model[i]), o = double(reference[i]), d = std::fabs(m - o);
    f.finite = f.finite && std::isfinite(m) && std::isfinite(o);
    f.max_abs = std::max(f.max_abs, d);
    if (d != 0) f.max_rel = std::max(f.max_rel, d / std::fabs(o));
    f.d2 += d * d;
    f.o2 += o * o;
  }
  return f;
}

}  // namespace

template <class M, class R>
void ErrorAccumulator::add_elements(const M* model, const R* reference, size_t n, DType ulp_type) {
  // Blocks small enough to stay in cache: one pass for the figures; a block holding a NaN or Inf
  // is gone over again element by element. The ulps are measured at the first element of the
  // largest error, found again in its block.
  constexpr size_t kBlock = 1024;
  for (size_t b = 0; b < n; b += kBlock) {
    const size_t e = std::min(n, b + kBlock);
    const BlockFigures f = block_figures(model + b, reference + b, e - b);
    if (!f.finite) {
      for (size_t i = b; i < e; ++i) {
        const double m = double(model[i]), o = double(reference[i]);
        if (!std::isfinite(m) || !std::isfinite(o)) {
          if (!((std::isnan(m) && std::isnan(o)) || m == o)) ++nonfinite_;
          continue;
        }
        add_finite(m, o, ulp_type);
      }
      continue;
    }
    if (f.max_abs > max_abs_ || count_ == 0)
      for (size_t k = b; k < e; ++k) {
        const double o = double(reference[k]), d = std::fabs(double(model[k]) - o);
        if (d == f.max_abs) {
          max_abs_ = d;
          ulps_ = d / ulp_at(ulp_type, o);
          break;
        }
      }
    max_rel_ = std::max(max_rel_, f.max_rel);
    sum_d2_ += f.d2;
    sum_o2_ += f.o2;
    count_ += int64_t(e - b);
  }
}

void ErrorAccumulator::add_finite(double m, double o, DType ulp_type) {
  const double d = std::fabs(m - o);
  if (d > max_abs_ || count_ == 0) {
    max_abs_ = d;
    ulps_ = d / ulp_at(ulp_type, o);
  }
  if (d != 0) max_rel_ = std::max(max_rel_, o != 0 ? d / std::fabs(o) : std::numeric_limits<double>::infinity());
  sum_d2_ += d * d;
  sum_o2_ += o * o;
  ++count_;
}

Error ErrorAccumulator::result() const {
  Error e;
  e.count = count_;
  e.nonfinite = nonfinite_;
  if (count_ == 0) return e;
  e.max_abs = max_abs_;
  e.max_rel = max_rel_;
  e.ulps = ulps_;
  e.rms = std::sqrt(sum_d2_ / double(count_));
  e.rel_rms = sum_d2_ == 0 ? 0 : sum_o2_ == 0 ? std::numeric_limits<double>::infinity() : std::sqrt(sum_d2_ / sum_o2_);
  const double eps = std::numeric_limits<double>::epsilon();
  e.sqnr_db = 20 * std::log10(std::max(std::sqrt(sum_o2_), eps) / std::max(std::sqrt(sum_d2_), eps));
  return e;
}

Error error_of(const Tensor& model, const Tensor& reference, const std::string& what) {
  ErrorAccumulator acc;
  acc.add(model, reference, what);
  return acc.result();
}

bool is_widened(DType t) { return t == DType::Float || t == DType::Float16 || t == DType::BFloat16; }

bool is_float_tensor(const Value& v) { return v.is_tensor() && is_float_dtype(v.tensor().dtype()); }

void widen_graph(Graph& g) {
  for (Initializer& i : g.initializers) i.value = widen_tensor(i.value);
  for (auto* infos : {&g.inputs, &g.outputs, &g.value_info})
    for (ValueInfo& vi : *infos) widen_type(vi.type);
  widen_nodes(g.nodes);
}

void widen_function(Function& f) {
  widen_nodes(f.nodes);
  for (ValueInfo& vi : f.value_info) widen_type(vi.type);
}

Model widen_model(const Model& model) {
  Model m = model;
  widen_graph(m.graph);
  for (Function& f : m.functions) widen_function(f);
  return m;
}

Value widen_value(const Value& v) {
  if (v.is_tensor()) return widen_tensor(v.tensor());
  if (v.is_sequence()) {
    Sequence s = v.sequence();
    if (is_widened(s.elem_dtype)) s.elem_dtype = DType::Double;
    for (Value& item : s.items) item = widen_value(item);
    return s;
  }
  return v;
}

}  // namespace refeval::accuracy

// ScatterElements (and the deprecated Scatter, the same op without reduction), ScatterND, and
// TensorScatter. Each copies `data` and writes `updates` into it at computed positions; a
// `reduction` (add, mul from 16; max, min from 18) combines them instead of overwriting.
// Negative indices count from the end; out-of-range ones are an error.
#include "tensor_common.h"

#include "refeval/registry.h"

namespace refeval::ops {
namespace {

enum class Reduction { None, Add, Mul, Max, Min };

Reduction read_reduction(const NodeContext& ctx) {
  const int v = ctx.since_version();
  if (v < 16) return Reduction::None;
  const std::string r = ctx.attr<std::string>("reduction", "none");
  if (r == "none") return Reduction::None;
  if (r == "add") return Reduction::Add;
  if (r == "mul") return Reduction::Mul;
  if (r == "max" && v >= 18) return Reduction::Max;
  if (r == "min" && v >= 18) return Reduction::Min;
  ctx.fail("unsupported reduction '" + r + "'");
}

// dst = reduce(dst, src) in the element type T (narrow floats through float; integers wrap).
template <class T>
void combine(T& dst, const T& src, Reduction r) {
  if (r == Reduction::None) { dst = src; return; }
  if constexpr (std::is_same_v<T, std::string> || std::is_same_v<T, bool>) {
    if constexpr (std::is_same_v<T, bool>) {
      if (r == Reduction::Add || r == Reduction::Max) { dst = dst || src; return; }
      if (r == Reduction::Mul || r == Reduction::Min) { dst = dst && src; return; }
    }
    fail_runtime("this reduction is not defined for the element type");
  } else if constexpr (requires { T::wrap(0); }) {  // 4- and 2-bit integers wrap
    const int64_t a = int(dst), b = int(src);
    int64_t v = r == Reduction::Add ? a + b : r == Reduction::Mul ? a * b : r == Reduction::Max ? std::max(a, b) : std::min(a, b);
    dst = T::wrap(v);
  } else {
    using C = compute_t<T>;
    const C a = C(dst), b = C(src);
    C v{};
    if constexpr (std::is_integral_v<C>) {
      using U = std::make_unsigned_t<std::conditional_t<(sizeof(C) < sizeof(int)), int, C>>;
      if (r == Reduction::Add) v = C(U(a) + U(b));
      else if (r == Reduction::Mul) v = C(U(a) * U(b));
      else v = r == Reduction::Max ? std::max(a, b) : std::min(a, b);
    } else if constexpr (std::is_same_v<C, std::complex<float>> || std::is_same_v<C, std::complex<double>>) {
      if (r == Reduction::Add) v = a + b;
      else if (r == Reduction::Mul) v = a * b;
      else fail_runtime("max and min are not defined for complex numbers");
    } else {
      if (r == Reduction::Add) v = a + b;
      else if (r == Reduction::Mul) v = a * b;
      else if (a != a || b != b) v = a + b;  // NaN propagates, as numpy's maximum / minimum
      else v = r == Reduction::Max ? (a < b ? b : a) : (b < a ? b : a);
    }
    dst = from_compute<T>(v);
  }
}

using ScatterTypes = Concat<Numeric, TypeList<bool, std::string>, Complex, Float8s, SmallInts, TypeList<float8e8m0, float4e2m1>>;

int64_t checked_index(int64_t i, int64_t dim, const char* op) {
  if (i < -dim || i >= dim) fail_runtime(fmt::format("{}: index {} is out of range for an axis of size {}", op, i, dim));
  return i < 0 ? i + dim : i;
}

class ScatterElements : public OpRun {
 public:
  using Types = ScatterTypes;
  explicit ScatterElements(const NodeContext& ctx) : axis_(ctx.attr<int64_t>("axis", 0)), reduction_(read_reduction(ctx)) {}
  Values run(const Values& in, RunContext&) override {
    const Tensor& x = input_tensor(in, 0);
    const Tensor& ind = input_tensor(in, 1);
    const Tensor& upd = input_tensor(in, 2);
    const size_t rank = x.rank();
    if (rank == 0) fail_runtime("ScatterElements: data must have rank >= 1");
    if (ind.shape() != upd.shape()) fail_runtime("ScatterElements: indices and updates must have one shape");
    if (ind.rank() != rank) fail_runtime("ScatterElements: indices must have the rank of data");
    if (upd.dtype() != x.dtype()) fail_runtime("ScatterElements: updates must have the data's element type");
    const size_t axis = size_t(normalize_axis(axis_, int64_t(rank)));
    for (size_t d = 0; d < rank; ++d)
      if (d != axis && ind.dim(d) > x.dim(d)) fail_runtime("ScatterElements: indices shape exceeds data shape");
    const std::vector<int64_t> idx = to_int64s(ind);
    const std::vector<int64_t> xs = dense_strides(x.shape());
    Tensor y = x.clone();
    visit<Types>(x.dtype(), [&]<class T>() {
      const T* u = upd.data<T>();
      T* out = y.data<T>();
      std::vector<int64_t> pos(rank, 0);
      for (int64_t k = 0; k < ind.size(); ++k) {
        int64_t off = 0;
        for (size_t d = 0; d < rank; ++d)
          off += (d == axis ? checked_index(idx[size_t(k)], x.dim(axis), "ScatterElements") : pos[d]) * xs[d];
        combine(out[off], u[k], reduction_);
        for (size_t d = rank; d-- > 0;) {
          if (++pos[d] < ind.dim(d)) break;
          pos[d] = 0;
        }
      }
    });
    return {y};
  }

 private:
  int64_t axis_;
  Reduction reduction_;
};

class ScatterND : public OpRun {
 public:
  using Types = ScatterTypes;
  explicit ScatterND(const NodeContext& ctx) : reduction_(read_reduction(ctx)) {}
  Values run(const Values& in, RunContext&) override {
    const Tensor& x = input_tensor(in, 0);
    const Tensor& ind = input_tensor(in, 1);
    const Tensor& upd = input_tensor(in, 2);
    const size_t r = x.rank(), q = ind.rank();
    if (r < 1 || q < 1) fail_runtime("ScatterND: data and indices must have rank >= 1");
    if (upd.dtype() != x.dtype()) fail_runtime("ScatterND: updates must have the data's element type");
    const size_t k = size_t(ind.dim(q - 1));
    if (k > r) fail_runtime(fmt::format("ScatterND: index tuples of length {} for data of rank {}", k, r));
    Shape expected(ind.shape().begin(), ind.shape().end() - 1);
    expected.insert(expected.end(), x.shape().begin() + long(k), x.shape().end());
    if (upd.shape() != expected)
      fail_runtime(fmt::format("ScatterND: updates shape {} should be {}", shape_to_string(upd.shape()), shape_to_string(expected)));
    const int64_t slice = dims_product(x.shape(), k, r), tuples = dims_product(ind.shape(), 0, q - 1);
    const std::vector<int64_t> xs = dense_strides(x.shape());
    const std::vector<int64_t> idx = to_int64s(ind);
    Tensor y = x.clone();
    visit<Types>(x.dtype(), [&]<class T>() {
      const T* u = upd.data<T>();
      T* out = y.data<T>();
      for (int64_t t = 0; t < tuples; ++t) {
        int64_t off = 0;
        for (size_t j = 0; j < k; ++j) off += checked_index(idx[size_t(t) * k + j], x.dim(j), "ScatterND") * xs[j];
        for (int64_t e = 0; e < slice; ++e) combine(out[off + e], u[t * slice + e], reduction_);
      }
    });
    return {y};
  }

 private:
  Reduction reduction_;
};

// TensorScatter (24), inputs (past_cache, update, write_indices?): a copy of past_cache with
// update (same shape except along `axis`, default -2, never the batch axis 0) written along the
// sequence axis starting at write_indices[batch] (int64 (batch,), default 0). mode "linear"
// needs 0 <= write_index and write_index + update length <= cache length; "circular" writes
// position (write_index + s) mod cache length (a negative index wraps too).
class TensorScatter : public OpRun {
 public:
  using Types = All;
  explicit TensorScatter(const NodeContext& ctx) : axis_(ctx.attr<int64_t>("axis", -2)) {
    const std::string mode = ctx.attr<std::string>("mode", "linear");
    if (mode != "linear" && mode != "circular") ctx.fail("mode must be linear or circular, got " + mode);
    circular_ = mode == "circular";
  }
  Values run(const Values& in, RunContext&) override {
    const Tensor& past = input_tensor(in, 0);
    const Tensor& upd = input_tensor(in, 1);
    const size_t rank = past.rank();
    if (rank < 2) fail_runtime("TensorScatter: past_cache must have rank >= 2");
    const size_t axis = size_t(normalize_axis(axis_, int64_t(rank)));
    if (axis == 0) fail_runtime("TensorScatter: axis cannot be the batch axis");
    if (upd.rank() != rank || upd.dtype() != past.dtype()) fail_runtime("TensorScatter: update must match past_cache's rank and type");
    for (size_t d = 0; d < rank; ++d)
      if (d != axis && upd.dim(d) != past.dim(d))
        fail_runtime(fmt::format("TensorScatter: update shape {} differs from past_cache shape {} off the axis",
                                 shape_to_string(upd.shape()), shape_to_string(past.shape())));
    const int64_t max_seq = past.dim(axis), seq = upd.dim(axis), batch = past.dim(0);
    if (seq > max_seq) fail_runtime(fmt::format("TensorScatter: update length {} exceeds the cache length {}", seq, max_seq));
    std::vector<int64_t> wi(size_t(batch), 0);
    if (has_value(in, 2)) {
      const Tensor& w = input_tensor(in, 2);
      if (w.dtype() != DType::Int64 || w.shape() != Shape{batch})
        fail_runtime(fmt::format("TensorScatter: write_indices must be int64 of shape ({}), got {}", batch, shape_to_string(w.shape())));
      wi = w.to_vector<int64_t>();
    }
    for (int64_t w : wi)
      if (!circular_ && (w < 0 || w > max_seq - seq))
        fail_runtime(fmt::format("TensorScatter: writing {} entries at {} goes beyond the cache length {}", seq, w, max_seq));
    const int64_t inner = dims_product(past.shape(), axis + 1, rank);
    const int64_t per_batch = dims_product(past.shape(), 1, axis);  // prefixes within one batch
    Tensor y = past.clone();
    if (max_seq == 0) return {y};  // an empty cache takes only an empty update (and mod 0 is undefined)
    visit_by_width(past.dtype(), [&]<class W>() {
      const W* u = raw_as<W>(upd);
      W* out = raw_as<W>(y);
      for (int64_t b = 0; b < batch; ++b) {
        const int64_t start = circular_ ? ((wi[size_t(b)] % max_seq) + max_seq) % max_seq : wi[size_t(b)];
        for (int64_t p = 0; p < per_batch; ++p) {
          const int64_t prefix = b * per_batch + p;
          for (int64_t s = 0; s < seq; ++s) {
            const int64_t pos = circular_ ? (start + s) % max_seq : start + s;
            copy_elems(u + (prefix * seq + s) * inner, out + (prefix * max_seq + pos) * inner, inner);
          }
        }
      }
    });
    return {y};
  }

 private:
  int64_t axis_;
  bool circular_ = false;
};

}  // namespace

void register_scatter(Registry& reg) {
  reg.add("", "Scatter", {9, 11}, make<ScatterElements>);
  reg.add("", "ScatterElements", {11, 13, 16, 18}, make<ScatterElements>);
  reg.add("", "ScatterND", {11, 13, 16, 18}, make<ScatterND>);
  reg.add("", "TensorScatter", {24}, make<TensorScatter>);
}

}  // namespace refeval::ops

// Unique: the distinct elements (or, with `axis`, the distinct slices along it) with the index of
// each one's first occurrence, the inverse mapping and the counts. sorted=1 (default) orders them
// ascending (slices lexicographically); sorted=0 keeps first-occurrence order. NaNs are equal.
#include "tensor_common.h"

#include <algorithm>
#include <numeric>

#include "refeval/registry.h"

namespace refeval::ops {
namespace {

// -1, 0, 1 for a < b, a == b, a > b, with NaN after every number and equal to NaN.
template <class C> int compare3(const C& a, const C& b) {
  if constexpr (std::is_floating_point_v<C>) {
    const bool na = a != a, nb = b != b;
    if (na || nb) return na == nb ? 0 : (na ? 1 : -1);
  }
  return a < b ? -1 : (b < a ? 1 : 0);
}

class Unique : public OpRun {
 public:
  using Types = Concat<Numeric, TypeList<bool, std::string>>;
  explicit Unique(const NodeContext& ctx)
      : axis_(ctx.optional_attr<int64_t>("axis")), sorted_(ctx.attr<int64_t>("sorted", 1) != 0) {}
  Values run(const Values& in, RunContext&) override {
    const Tensor& x0 = input_tensor(in, 0);
    // Bring the axis to the front so that each "row" is one slice.
    std::vector<int64_t> perm;
    Tensor x = x0;
    if (axis_) {
      const int64_t rank = int64_t(x0.rank());
      const int64_t axis = normalize_axis(*axis_, rank);
      perm.push_back(axis);
      for (int64_t d = 0; d < rank; ++d)
        if (d != axis) perm.push_back(d);
      x = transpose(x0, perm);
    } else {
      x = x0.reshaped({x0.size()});
    }
    const int64_t n = x.dim(0), row = n == 0 ? 0 : x.size() / n;
    std::vector<int64_t> order(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    std::vector<int64_t> group_first, counts, inverse(static_cast<size_t>(n));
    visit<Types>(x.dtype(), [&]<class T>() {
      using C = compute_t<T>;
      const T* p = x.data<T>();
      auto cmp = [&](int64_t a, int64_t b) {
        for (int64_t e = 0; e < row; ++e) {
          const int c = compare3(C(p[a * row + e]), C(p[b * row + e]));
          if (c != 0) return c;
        }
        return 0;
      };
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return cmp(a, b) < 0; });
      std::vector<int64_t> group_of(static_cast<size_t>(n));
      for (size_t i = 0; i < order.size(); ++i) {
        if (i == 0 || cmp(order[i - 1], order[i]) != 0) {
          group_first.push_back(order[i]);
          counts.push_back(0);
        }
        group_of[size_t(order[i])] = int64_t(group_first.size()) - 1;
        ++counts.back();
      }
      // Unsorted: renumber groups by first occurrence.
      std::vector<int64_t> rank_of(group_first.size());
      std::iota(rank_of.begin(), rank_of.end(), 0);
      if (!sorted_) {
        std::vector<int64_t> g(group_first.size());
        std::iota(g.begin(), g.end(), 0);
        std::sort(g.begin(), g.end(), [&](int64_t a, int64_t b) { return group_first[size_t(a)] < group_first[size_t(b)]; });
        std::vector<int64_t> f2, c2;
        for (size_t i = 0; i < g.size(); ++i) {
          rank_of[size_t(g[i])] = int64_t(i);
          f2.push_back(group_first[size_t(g[i])]);
          c2.push_back(counts[size_t(g[i])]);
        }
        group_first = f2;
        counts = c2;
      }
      for (int64_t i = 0; i < n; ++i) inverse[size_t(i)] = rank_of[size_t(group_of[size_t(i)])];
    });
    const int64_t u = int64_t(group_first.size());
    Shape ys = x.shape();
    ys[0] = u;
    Tensor y(x.dtype(), ys);
    visit_by_width(x.dtype(), [&]<class W>() {
      for (int64_t g = 0; g < u; ++g) copy_elems(raw_as<W>(x) + group_first[size_t(g)] * row, raw_as<W>(y) + g * row, row);
    });
    if (axis_) {
      std::vector<int64_t> inv(perm.size());
      for (size_t i = 0; i < perm.size(); ++i) inv[size_t(perm[i])] = int64_t(i);
      y = transpose(y, inv);
    }
    // The engine drops the outputs a node does not declare.
    return {y, Tensor::from_vector<int64_t>({u}, group_first), Tensor::from_vector<int64_t>({n}, inverse),
            Tensor::from_vector<int64_t>({u}, counts)};
  }

 private:
  std::optional<int64_t> axis_;
  bool sorted_;
};

}  // namespace

void register_unique(Registry& reg) {
  reg.add("", "Unique", {11}, make<Unique>);
}

}  // namespace refeval::ops

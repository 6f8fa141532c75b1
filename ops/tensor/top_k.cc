// TopK: the k largest (or smallest, from 11) elements along an axis with their int64 indices.
// k is an attribute in version 1 and a 1-element input from 10. Ties keep the lower index first;
// NaN counts as larger than every number. Results are always sorted (the spec leaves the order
// free when sorted=0).
#include "tensor_common.h"

#include <algorithm>

#include "refeval/registry.h"

namespace refeval::ops {
namespace {

class TopK : public OpRun {
 public:
  using Types = Numeric;
  explicit TopK(const NodeContext& ctx) : axis_(ctx.attr<int64_t>("axis", -1)) {
    if (ctx.since_version() < 10) k_attr_ = ctx.required<int64_t>("k");
    if (ctx.since_version() >= 11) {
      largest_ = ctx.attr<int64_t>("largest", 1) != 0;
      ctx.attr<int64_t>("sorted", 1);  // results are sorted either way
    }
  }
  Values run(const Values& in, RunContext&) override {
    const Tensor& x = input_tensor(in, 0);
    int64_t k = k_attr_;
    if (has_value(in, 1)) {
      const std::vector<int64_t> kv = to_int64s(input_tensor(in, 1));
      if (kv.size() != 1) fail_runtime("TopK: K must hold one element");
      k = kv[0];
    }
    const int64_t rank = int64_t(x.rank());
    if (rank == 0) fail_runtime("TopK: input must have rank >= 1");
    const size_t axis = size_t(normalize_axis(axis_, rank));
    const int64_t dim = x.dim(axis);
    if (k < 0 || k > dim) fail_runtime(fmt::format("TopK: k = {} is out of range for an axis of size {}", k, dim));
    Shape out = x.shape();
    out[axis] = k;
    const int64_t outer = dims_product(x.shape(), 0, axis), inner = dims_product(x.shape(), axis + 1, x.rank());
    Tensor values(x.dtype(), out), indices(DType::Int64, out);
    visit<Types>(x.dtype(), [&]<class T>() {
      using C = compute_t<T>;
      const T* src = x.data<T>();
      T* vo = values.data<T>();
      int64_t* io = indices.data<int64_t>();
      // A strict total order on (value, index) pairs: NaN is the largest value, ties go by index,
      // so that keeping the first k in a heap gives the same elements in the same order as a
      // stable sort of the whole axis (in O(n log k); most elements lose one comparison with the
      // heap's top, the k-th so far).
      using Entry = std::pair<C, int64_t>;
      auto greater = [](C va, C vb) {
        if (va != va) return !(vb != vb);
        if (vb != vb) return false;
        return vb < va;
      };
      const bool largest = largest_;
      auto before = [&](const Entry& a, const Entry& b) {
        const bool ab = largest ? greater(a.first, b.first) : greater(b.first, a.first);
        const bool ba = largest ? greater(b.first, a.first) : greater(a.first, b.first);
        return ab || (!ba && a.second < b.second);
      };
      std::vector<Entry> heap(static_cast<size_t>(k));
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t j = 0; j < inner; ++j) {
          const T* row = src + o * dim * inner + j;
          if (k > 0) {
            for (int64_t i = 0; i < k; ++i) heap[size_t(i)] = {C(row[i * inner]), i};
            std::make_heap(heap.begin(), heap.end(), before);  // the top is the worst kept
            // A value can only enter when it beats the top's value outright (a later equal one
            // loses the tie): one comparison rejects most elements.
            C top = heap.front().first;
            for (int64_t i = k; i < dim; ++i) {
              const C v = C(row[i * inner]);
              if (largest ? !(v > top || v != v || top != top) : !(v < top || (top != top && v == v))) continue;
              const Entry e{v, i};
              if (!before(e, heap.front())) continue;
              std::pop_heap(heap.begin(), heap.end(), before);
              heap.back() = e;
              std::push_heap(heap.begin(), heap.end(), before);
              top = heap.front().first;
            }
            std::sort_heap(heap.begin(), heap.end(), before);
          }
          for (int64_t i = 0; i < k; ++i) {
            const int64_t p = (o * k + i) * inner + j;
            vo[p] = row[heap[size_t(i)].second * inner];
            io[p] = heap[size_t(i)].second;
          }
        }
    });
    return {values, indices};
  }

 private:
  int64_t axis_, k_attr_ = 0;
  bool largest_ = true;
};

}  // namespace

void register_top_k(Registry& reg) {
  reg.add("", "TopK", {1, 10, 11, 24}, make<TopK>);
}

}  // namespace refeval::ops

// Einsum (12): "ij,jk->ik" style equations with repeated labels (diagonals), "..." for broadcast
// dimensions and the implicit output (ellipsis dims, then the labels used once, alphabetically).
// Evaluated by the definition: one pass over the joint index space of all labels, summing the
// products into the output. Integers wrap; floats accumulate in double.
#include <algorithm>
#include <cctype>
#include <map>

#include <fmt/format.h>

#include "refeval/registry.h"

namespace refeval::ops {
namespace {

// A term as label ids: letters are 0..51, ellipsis dims are 52.. (aligned right over all inputs).
struct Equation {
  std::vector<std::string> inputs;
  std::string output;
  bool explicit_output = false;
};

Equation parse(const std::string& eq_in) {
  std::string eq;
  for (char c : eq_in)
    if (!std::isspace(static_cast<unsigned char>(c))) eq += c;
  Equation e;
  const size_t arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow);
  if (arrow != std::string::npos) { e.explicit_output = true; e.output = eq.substr(arrow + 2); }
  size_t start = 0;
  while (true) {
    const size_t comma = lhs.find(',', start);
    e.inputs.push_back(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return e;
}

int letter_id(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';  // ids in ASCII order, as the implicit output sorts
  if (c >= 'a' && c <= 'z') return 26 + c - 'a';
  fail_runtime(fmt::format("Einsum: '{}' is not a label", c));
}

// Label ids of one term for an operand of rank `rank` (ellipsis expanded), given `ell` ellipsis
// dims in total.
std::vector<int> labels(const std::string& term, int64_t rank, int64_t ell, bool is_output) {
  std::vector<int> out;
  const size_t dots = term.find("...");
  const int64_t letters = int64_t(term.size()) - (dots == std::string::npos ? 0 : 3);
  const int64_t own_ell = is_output ? ell : rank - letters;
  if (dots == std::string::npos && !is_output && letters != rank)
    fail_runtime(fmt::format("Einsum: term '{}' has {} labels for an operand of rank {}", term, letters, rank));
  if (own_ell < 0) fail_runtime(fmt::format("Einsum: term '{}' has too many labels for rank {}", term, rank));
  for (size_t i = 0; i < term.size(); ++i) {
    if (i == dots) {
      for (int64_t k = 0; k < own_ell; ++k) out.push_back(int(52 + ell - own_ell + k));
      i += 2;
    } else {
      out.push_back(letter_id(term[i]));
    }
  }
  return out;
}

// Floats accumulate in double; integers in an unsigned type of at least 32 bits (wrapping).
template <class C, class = void> struct Accumulator { using type = double; };
template <class C> struct Accumulator<C, std::enable_if_t<std::is_integral_v<C>>> {
  using type = std::make_unsigned_t<std::conditional_t<(sizeof(C) < 4), int32_t, C>>;
};

class Einsum : public OpRun {
 public:
  using Types = Numeric;
  explicit Einsum(const NodeContext& ctx) : eq_(parse(ctx.required<std::string>("equation"))) {}

  Values run(const Values& in, RunContext& ctx) override {
    if (eq_.inputs.size() != in.size())
      ctx.fail(fmt::format("the equation has {} operands, the node {}", eq_.inputs.size(), in.size()));
    std::vector<const Tensor*> xs;
    int64_t ell = 0;
    for (size_t i = 0; i < in.size(); ++i) {
      xs.push_back(&input_tensor(in, i));
      if (xs[i]->dtype() != xs[0]->dtype()) ctx.fail("all operands must have one element type");
      const std::string& t = eq_.inputs[i];
      if (t.find("...") != std::string::npos) ell = std::max<int64_t>(ell, int64_t(xs[i]->rank()) - int64_t(t.size() - 3));
    }
    // Sizes of every label; ellipsis dims broadcast (size 1 stretches).
    std::map<int, int64_t> size;
    std::map<int, int> count;
    std::vector<std::vector<int>> in_labels;
    for (size_t i = 0; i < xs.size(); ++i) {
      in_labels.push_back(labels(eq_.inputs[i], int64_t(xs[i]->rank()), ell, false));
      for (size_t d = 0; d < in_labels[i].size(); ++d) {
        const int l = in_labels[i][d];
        const int64_t n = xs[i]->dim(d);
        ++count[l];
        auto [it, fresh] = size.emplace(l, n);
        if (!fresh && it->second != n) {
          if (l >= 52 && (it->second == 1 || n == 1)) it->second = std::max(it->second, n);
          else ctx.fail(fmt::format("label '{}' has sizes {} and {}", eq_.inputs[i], it->second, n));
        }
      }
    }
    std::vector<int> out_labels;
    if (eq_.explicit_output) {
      out_labels = labels(eq_.output, 0, ell, true);
      for (int l : out_labels)
        if (!size.count(l)) ctx.fail(fmt::format("output label {} is not in any input", eq_.output));
    } else {
      for (auto [l, c] : count)
        if (l >= 52 || c == 1) out_labels.push_back(l);
      std::stable_partition(out_labels.begin(), out_labels.end(), [](int l) { return l >= 52; });
    }
    // The joint index space: output labels first, then the summed ones.
    std::vector<int> all = out_labels;
    for (auto [l, n] : size)
      if (std::find(all.begin(), all.end(), l) == all.end()) all.push_back(l);
    const size_t nl = all.size();
    std::vector<int64_t> dims(nl);
    for (size_t k = 0; k < nl; ++k) dims[k] = size[all[k]];
    Shape out_shape;
    for (int l : out_labels) out_shape.push_back(size[l]);
    // Strides of each operand (and the output) per joint label; repeated labels add up (diagonals).
    auto strides_for = [&](const std::vector<int>& ls, const Shape& shape) {
      std::vector<int64_t> st(nl, 0);
      int64_t s = 1;
      for (size_t d = ls.size(); d-- > 0;) {
        const size_t k = size_t(std::find(all.begin(), all.end(), ls[d]) - all.begin());
        if (shape[d] != 1) st[k] += s;
        s *= shape[d];
      }
      return st;
    };
    std::vector<std::vector<int64_t>> in_st;
    for (size_t i = 0; i < xs.size(); ++i) in_st.push_back(strides_for(in_labels[i], xs[i]->shape()));
    const std::vector<int64_t> out_st = strides_for(out_labels, out_shape);
    Tensor y(xs[0]->dtype(), out_shape);
    visit<Types>(xs[0]->dtype(), [&]<class T>() {
      using C = compute_t<T>;
      using A = typename Accumulator<C>::type;
      std::vector<A> acc(size_t(y.size()), A(0));
      const int64_t total = shape_size(dims);
      std::vector<int64_t> idx(nl, 0), off(xs.size(), 0);
      int64_t o = 0;
      for (int64_t step = 0; step < total; ++step) {
        A p = A(1);
        for (size_t i = 0; i < xs.size(); ++i) p = A(p * A(C(xs[i]->data<T>()[off[i]])));
        acc[size_t(o)] = A(acc[size_t(o)] + p);
        for (size_t k = nl; k-- > 0;) {
          ++idx[k];
          o += out_st[k];
          for (size_t i = 0; i < xs.size(); ++i) off[i] += in_st[i][k];
          if (idx[k] < dims[k]) break;
          o -= out_st[k] * dims[k];
          for (size_t i = 0; i < xs.size(); ++i) off[i] -= in_st[i][k] * dims[k];
          idx[k] = 0;
        }
      }
      T* py = y.data<T>();
      for (size_t i = 0; i < acc.size(); ++i) {
        if constexpr (std::is_floating_point_v<C>) py[i] = from_compute<T>(acc[i]);
        else py[i] = T(acc[i]);
      }
    });
    return {y};
  }

 private:
  Equation eq_;
};

}  // namespace

void register_einsum(Registry& reg) { reg.add("", "Einsum", {12}, make<Einsum>); }

}  // namespace refeval::ops

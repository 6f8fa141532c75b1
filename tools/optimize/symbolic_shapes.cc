#include "symbolic_shapes.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "pattern.h"

namespace refeval::optimize {
namespace {

// A polynomial over the model's dim symbols with integer coefficients: monomial -> coefficient.
class Poly {
 public:
  Poly() = default;
  static Poly constant(int64_t c) {
    Poly p;
    if (c != 0) p.terms_[{}] = c;
    return p;
  }
  static Poly symbol(const std::string& s) {
    Poly p;
    p.terms_[{s}] = 1;
    return p;
  }
  // Every coefficient negative: below zero whatever the (positive) sizes (`-seq` of `x[:, -s:]`).
  bool negative() const {
    return !terms_.empty() && std::all_of(terms_.begin(), terms_.end(), [](const auto& t) { return t.second < 0; });
  }
  std::optional<int64_t> fixed() const {
    if (terms_.empty()) return 0;
    if (terms_.size() == 1 && terms_.begin()->first.empty()) return terms_.begin()->second;
    return std::nullopt;
  }
  Poly operator+(const Poly& o) const {
    Poly r = *this;
    for (const auto& [m, c] : o.terms_) r.add(m, c);
    return r;
  }
  Poly operator-(const Poly& o) const { return *this + o * Poly::constant(-1); }
  Poly operator*(const Poly& o) const {
    Poly r;
    for (const auto& [ma, ca] : terms_)
      for (const auto& [mb, cb] : o.terms_) {
        std::vector<std::string> m = ma;
        m.insert(m.end(), mb.begin(), mb.end());
        std::sort(m.begin(), m.end());
        r.add(m, ca * cb);
      }
    return r;
  }
  // Exact division by a single monomial (a constant, a symbol, a product); nullopt otherwise.
  std::optional<Poly> divided_by(const Poly& d) const {
    if (d.terms_.size() != 1) return std::nullopt;
    const auto& [dm, dc] = *d.terms_.begin();
    if (dc == 0) return std::nullopt;
    Poly r;
    for (const auto& [m, c] : terms_) {
      std::multiset<std::string> left(m.begin(), m.end());
      for (const std::string& s : dm) {
        auto it = left.find(s);
        if (it == left.end()) return std::nullopt;
        left.erase(it);
      }
      if (c % dc != 0) return std::nullopt;
      r.add({left.begin(), left.end()}, c / dc);
    }
    return r;
  }
  bool operator==(const Poly& o) const { return terms_ == o.terms_; }
  const std::map<std::vector<std::string>, int64_t>& terms() const { return terms_; }
  // Each symbol with an entry in `by` replaced by that polynomial.
  template <class Lookup>
  Poly substituted(Lookup by) const {
    Poly r;
    for (const auto& [m, c] : terms_) {
      Poly t = Poly::constant(c);
      for (const std::string& s : m) {
        const std::optional<Poly> p = by(s);
        t = t * (p ? *p : Poly::symbol(s));
      }
      r = r + t;
    }
    return r;
  }
  // "past + seq", "batch*seq", "2*seq - 1": the constant last, monomials in a fixed order.
  std::string text() const {
    std::string out;
    auto term = [&](const std::vector<std::string>& m, int64_t c) {
      const bool first = out.empty();
      if (!first) out += c < 0 ? " - " : " + ";
      else if (c < 0) out += "-";
      const int64_t a = c < 0 ? -c : c;
      if (m.empty()) return void(out += std::to_string(a));
      if (a != 1) out += std::to_string(a) + "*";
      out += fmt::format("{}", fmt::join(m, "*"));
    };
    for (const auto& [m, c] : terms_)
      if (!m.empty()) term(m, c);
    if (auto it = terms_.find({}); it != terms_.end()) term({}, it->second);
    return out.empty() ? "0" : out;
  }

 private:
  void add(const std::vector<std::string>& m, int64_t c) {
    if ((terms_[m] += c) == 0) terms_.erase(m);
  }
  std::map<std::vector<std::string>, int64_t> terms_;
};

using Elem = std::optional<Poly>;
using Shape_ = std::vector<Elem>;

// A dim's text as a polynomial: our own canonical text ("past + seq", "2*seq - 1"), and the
// same for exporters' names written that way (Optimum's "past_sequence_length + 1"); any other
// text is one symbol.
Poly parse(const std::string& text) {
  Poly out;
  size_t at = 0;
  int64_t sign = 1;
  if (text.rfind("-", 0) == 0) sign = -1, at = 1;
  for (;;) {
    size_t next = text.size();
    int64_t next_sign = 1;
    for (const char* sep : {" + ", " - "}) {
      const size_t k = text.find(sep, at);
      if (k != std::string::npos && k < next) next = k, next_sign = sep[1] == '-' ? -1 : 1;
    }
    const std::string term = text.substr(at, next - at);
    Poly t = Poly::constant(sign);
    size_t from = 0;
    for (;;) {
      const size_t star = term.find('*', from);
      const std::string factor = term.substr(from, star == std::string::npos ? std::string::npos : star - from);
      if (!factor.empty() && std::all_of(factor.begin(), factor.end(), [](char c) { return c >= '0' && c <= '9'; }) && factor.size() < 18)
        t = t * Poly::constant(std::stoll(factor));
      else
        t = t * Poly::symbol(factor);
      if (star == std::string::npos) break;
      from = star + 1;
    }
    out = out + t;
    if (next == text.size()) break;
    at = next + 3, sign = next_sign;
  }
  return out;
}

Elem from_dim(const Dim& d) {
  if (d.fixed()) return Poly::constant(d.value);
  if (!d.param.empty()) return parse(d.param);
  return std::nullopt;
}

Dim to_dim(const Elem& e) {
  if (!e) return Dim{};
  if (auto f = e->fixed()) return *f >= 0 ? Dim{*f, ""} : Dim{};
  return Dim{-1, e->text()};
}

// ONNX's own placeholder for a dim it could not name: a fresh symbol, true but uninformative.
bool onnx_placeholder(const Dim& d) { return !d.fixed() && (d.param.empty() || d.param.rfind("unk__", 0) == 0); }

class Propagation {
 public:
  Propagation(const Model& m, Inference& inf) : g_(m.graph), inf_(inf), index_(m.graph, &inf) {}

  void run() {
    for (const ValueInfo& v : g_.inputs) set_declared(v.name, v.type);
    for (const Node& n : g_.nodes) {
      node(n);
      for (const std::string& out : n.outputs)
        if (!out.empty()) publish(out);
    }
  }

 private:
  void set_declared(const std::string& name, const ValueType& t) {
    if (t.kind != ValueType::Kind::Tensor || !t.has_shape) return;
    Shape_ s;
    for (const Dim& d : t.dims) s.push_back(from_dim(d));
    dims_[name] = s;
  }

  // Our dims of a value: computed here, else ONNX's, else a constant's.
  const Shape_* dims(const std::string& v) {
    if (auto it = dims_.find(v); it != dims_.end()) return &it->second;
    if (const std::vector<Dim>* d = index_.dims(v)) {
      Shape_ s;
      for (const Dim& x : *d) s.push_back(from_dim(x));
      return &(dims_[v] = s);
    }
    return nullptr;
  }

  // The elements of a small integer value: computed here, a constant's, or ONNX's data.
  const Shape_* data(const std::string& v) {
    if (auto it = data_.find(v); it != data_.end()) return &it->second;
    if (const Tensor* t = index_.constant(v); t && t->rank() <= 1 && t->size() <= 64) {
      if (auto ints = index_.ints(v)) {
        Shape_ s;
        for (int64_t i : *ints) s.push_back(Poly::constant(i));
        return &(data_[v] = s);
      }
    }
    if (const std::vector<Dim>* d = index_.shape_data(v)) {
      Shape_ s;
      for (const Dim& x : *d) s.push_back(from_dim(x));
      return &(data_[v] = s);
    }
    return nullptr;
  }

  // A constant's integers, or a value computed from shapes whose every element is known (torch
  // writes a Slice's axes and steps so when they come from a size() call).
  std::optional<std::vector<int64_t>> known_ints(const std::string& v) {
    if (auto c = index_.ints(v)) return c;
    const Shape_* d = data(v);
    if (!d) return std::nullopt;
    std::vector<int64_t> out;
    for (const Elem& e : *d) {
      if (!e || !e->fixed()) return std::nullopt;
      out.push_back(*e->fixed());
    }
    return out;
  }

  std::optional<int64_t> const_int(const std::string& v) {
    const Shape_* d = data(v);
    if (!d || d->size() != 1 || !(*d)[0]) return std::nullopt;
    return (*d)[0]->fixed();
  }

  static Elem broadcast(const Elem& a, const Elem& b) {
    auto one = [](const Elem& e) { return e && e->fixed() == std::optional<int64_t>(1); };
    if (one(a)) return b;
    if (one(b)) return a;
    if (a && b && *a == *b) return a;
    // A known size other than 1 wins: the other operand must then be 1 or equal to it.
    if (a && a->fixed() && !b) return a;
    if (b && b->fixed() && !a) return b;
    // A symbolic dim broadcast against an unknown or another symbol: taken as equal, as ORT's
    // symbolic shape inference merges them (a mask's `total` with the scores' `seq`); the other
    // case, a symbol that is 1 at run time, broadcasts a mask over keys, which no export does.
    return a ? a : b;
  }

  static std::optional<Shape_> broadcast_all(const std::vector<const Shape_*>& shapes) {
    size_t rank = 0;
    for (const Shape_* s : shapes) {
      if (!s) return std::nullopt;
      rank = std::max(rank, s->size());
    }
    Shape_ out(rank, Poly::constant(1));
    for (const Shape_* s : shapes)
      for (size_t i = 0; i < s->size(); ++i) {
        Elem& o = out[rank - s->size() + i];
        o = broadcast(o, (*s)[i]);
      }
    return out;
  }

  static int64_t axis_of(int64_t a, size_t rank) { return a < 0 ? a + int64_t(rank) : a; }

  std::vector<int64_t> axes(const Node& n, size_t input) {
    std::vector<int64_t> a = ints_attr(n, "axes");
    if (n.inputs.size() > input && !n.inputs[input].empty()) a = index_.ints(n.inputs[input]).value_or(std::vector<int64_t>{});
    return a;
  }

  Elem numel(const Shape_& s) {
    Poly p = Poly::constant(1);
    for (const Elem& e : s) {
      if (!e) return std::nullopt;
      p = p * *e;
    }
    return p;
  }

  // The first output of the attention operators the optimizer writes, which ONNX 1.12 has no
  // schema for: (batch, query length, heads x value head size), or the query's 4-D layout for
  // ONNX's Attention with 4-D inputs. Presents and the other outputs stay unknown.
  void attention_output(const Node& n) {
    const std::string& op = n.op_type;
    auto in = [&](size_t i) { return i < n.inputs.size() && !n.inputs[i].empty() ? dims(n.inputs[i]) : nullptr; };
    auto set0 = [&](Shape_ s) {
      if (!n.outputs.empty() && !n.outputs[0].empty()) dims_[n.outputs[0]] = std::move(s), same_type(n, 0, 0);
    };
    const Shape_* q = in(0);
    if (op == "EmbedLayerNormalization") {
      const Shape_ *ids = in(0), *gamma = in(5);
      if (ids && gamma && ids->size() == 2 && gamma->size() == 1) {
        dims_[n.outputs[0]] = {(*ids)[0], (*ids)[1], (*gamma)[0]};
        if (const Shape_* beta = in(6); beta) same_type(n, 0, 6);
      }
      return;
    }
    if (!q) return;
    if (op == "Attention" && n.domain == "com.microsoft") {
      const Shape_* w = in(1);
      const std::vector<int64_t> sizes = ints_attr(n, "qkv_hidden_sizes");
      if (q->size() != 3) return;
      if (sizes.size() == 3) return set0({(*q)[0], (*q)[1], Poly::constant(sizes[2])});
      if (w && w->size() == 2 && (*w)[1] && (*w)[1]->fixed() && *(*w)[1]->fixed() % 3 == 0)
        return set0({(*q)[0], (*q)[1], Poly::constant(*(*w)[1]->fixed() / 3)});
      return;
    }
    if (op == "MultiHeadAttention") {
      const Shape_* v = in(2);
      const int64_t heads = int_attr(n, "num_heads", 0);
      if (q->size() == 3 && v && v->size() == 3) return set0({(*q)[0], (*q)[1], (*v)[2]});
      if (q->size() == 3 && v && v->size() == 4 && (*v)[3]) return set0({(*q)[0], (*q)[1], *(*v)[3] * Poly::constant(heads)});
      if (q->size() == 3 && !v && (*q)[2]) {  // packed q/k/v in the query's hidden axis: a third of it
        if (auto third = (*q)[2]->divided_by(Poly::constant(3))) return set0({(*q)[0], (*q)[1], *third});
      }
      if (q->size() == 5 && (*q)[2] && (*q)[4]) return set0({(*q)[0], (*q)[1], *(*q)[2] * *(*q)[4]});
      return;
    }
    if (op == "GroupQueryAttention") {
      const int64_t heads = int_attr(n, "num_heads", 0), kv_heads = int_attr(n, "kv_num_heads", 0);
      if (q->size() != 3 || !(*q)[2] || heads <= 0) return;
      if (in(1)) return set0({(*q)[0], (*q)[1], *(*q)[2]});
      if (auto head = (*q)[2]->divided_by(Poly::constant(heads + 2 * kv_heads)))
        return set0({(*q)[0], (*q)[1], *head * Poly::constant(heads)});
      return;
    }
    if (op == "Attention") {  // ONNX's (opset 23)
      const Shape_* v = in(2);
      if (!v) return;
      if (q->size() == 4 && v->size() == 4) return set0({(*q)[0], (*q)[1], (*q)[2], (*v)[3]});
      const int64_t q_heads = int_attr(n, "q_num_heads", 0), kv_heads = int_attr(n, "kv_num_heads", 0);
      if (q->size() == 3 && v->size() == 3 && (*v)[2] && kv_heads > 0)
        if (auto head = (*v)[2]->divided_by(Poly::constant(kv_heads))) return set0({(*q)[0], (*q)[1], *head * Poly::constant(q_heads)});
    }
  }

  void node(const Node& n) {
    const std::string& op = n.op_type;
    auto in = [&](size_t i) { return i < n.inputs.size() && !n.inputs[i].empty() ? dims(n.inputs[i]) : nullptr; };
    auto set = [&](size_t i, Shape_ s) {
      if (i < n.outputs.size() && !n.outputs[i].empty()) dims_[n.outputs[i]] = std::move(s);
    };
    // com.microsoft operators whose first output has the shape and type of their first input.
    static const std::set<std::string> ms_same = {"SkipLayerNormalization", "SkipSimplifiedLayerNormalization", "FastGelu",
                                                  "Gelu", "BiasGelu", "QuickGelu", "RotaryEmbedding", "SimplifiedLayerNormalization"};
    if (n.domain == "com.microsoft" || (n.domain.empty() && op == "SimplifiedLayerNormalization")) {
      if (op == "FusedMatMul" && n.inputs.size() >= 2) {
        matmul(n);
        same_type(n, 0, 0);
        return;
      }
      if (!ms_same.count(op)) return attention_output(n);
      if (const Shape_* s = in(0)) set(0, *s), same_type(n, 0, 0);
      if ((op == "SkipLayerNormalization" || op == "SkipSimplifiedLayerNormalization") && n.outputs.size() > 3)
        if (const Shape_* s = in(0)) set(3, *s), same_type(n, 3, 0);
      return;
    }
    if (!n.domain.empty() && n.domain != "ai.onnx") return;
    if (op == "Attention") return attention_output(n);
    // Too few inputs: the model fails to plan anyway; nothing to say about its shapes.
    static const std::map<std::string, size_t> arity = {{"Reshape", 2}, {"Expand", 2}, {"Range", 3}, {"Gather", 2}, {"MatMul", 2},
                                                        {"Gemm", 2},    {"Where", 3},  {"Slice", 3}, {"ConstantOfShape", 1}};
    if (auto it = arity.find(op); it != arity.end() && n.inputs.size() < it->second) return;
    if (n.inputs.empty() || n.outputs.empty()) return;
    static const std::set<std::string> same = {"Cast", "Softmax", "LogSoftmax", "Neg", "Sqrt", "Reciprocal", "Tanh", "Erf", "Sigmoid",
                                               "Relu", "Not", "Exp", "Log", "Abs", "Identity", "Dropout", "LayerNormalization",
                                               "Gelu", "IsNaN", "Sin", "Cos", "CastLike", "Trilu", "Clip", "Floor", "Ceil",
                                               "RMSNormalization", "HardSigmoid", "Softplus", "Elu", "LeakyRelu",
                                               "ScatterND", "ScatterElements"};
    static const std::set<std::string> elementwise = {"Add", "Sub", "Mul", "Div", "Pow", "Where", "Equal", "Less", "Greater",
                                                      "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor", "Max", "Min", "Mod"};
    if (same.count(op)) {
      if (const Shape_* s = in(0)) set(0, *s);
      if (op == "Neg") elementwise_data(n);
      if (op != "Cast" && op != "Not" && op != "IsNaN") same_type(n, 0, 0);
    } else if (elementwise.count(op)) {
      std::vector<const Shape_*> shapes;
      for (size_t i = 0; i < n.inputs.size(); ++i) shapes.push_back(in(i));
      if (auto s = broadcast_all(shapes)) set(0, *s);
      elementwise_data(n);
      if (op == "Equal") equal_data(n);
      if (op == "Where") where_data(n);
    } else if (op == "MatMul") {
      matmul(n);
    } else if (op == "Gemm") {
      const Shape_ *a = in(0), *b = in(1);
      if (a && b && a->size() == 2 && b->size() == 2)
        set(0, {(*a)[int_attr(n, "transA", 0) ? 1 : 0], (*b)[int_attr(n, "transB", 0) ? 0 : 1]});
    } else if (op == "Transpose") {
      if (const Shape_* s = in(0)) {
        std::vector<int64_t> perm = ints_attr(n, "perm");
        if (perm.empty())
          for (size_t i = s->size(); i-- > 0;) perm.push_back(int64_t(i));
        // An invalid perm (the evaluator refuses it when the node runs) propagates nothing.
        if (perm.size() != s->size() || !is_permutation(perm)) return;
        Shape_ o;
        for (int64_t p : perm) o.push_back((*s)[size_t(p)]);
        set(0, o);
      }
    } else if (op == "Reshape") {
      reshape(n);
    } else if (op == "Slice") {
      slice(n);
    } else if (op == "Concat") {
      concat(n);
    } else if (op == "Split") {
      split(n);
    } else if (op == "Gather") {
      gather(n);
    } else if (op == "Unsqueeze" || op == "Squeeze") {
      squeeze(n);
    } else if (op == "Shape") {
      shape(n);
    } else if (op == "Expand") {
      const Shape_* s = in(0);
      const Shape_* t = data(n.inputs[1]);
      if (s && t) {
        if (auto o = broadcast_all({s, t})) set(0, *o);
      }
    } else if (op == "ConstantOfShape") {
      if (const Shape_* t = data(n.inputs[0])) {
        set(0, *t);
        constant_of_shape_data(n, *t);
      }
    } else if (op == "Range") {
      const Shape_ *start = data(n.inputs[0]), *limit = data(n.inputs[1]);
      const auto delta = const_int(n.inputs[2]);
      if (start && limit && start->size() == 1 && limit->size() == 1 && (*start)[0] && (*limit)[0] && delta == 1)
        set(0, {*(*limit)[0] - *(*start)[0]});
    } else if (op == "ReduceMean" || op == "ReduceSum" || op == "ReduceMax" || op == "ReduceMin") {
      reduce(n);
    }
  }

  void elementwise_data(const Node& n) {
    const std::string& op = n.op_type;
    if (op == "Neg" && n.inputs.size() == 1) {
      if (const Shape_* a = data(n.inputs[0])) {
        Shape_ out;
        for (const Elem& x : *a) out.push_back(x ? std::optional<Poly>(*x * Poly::constant(-1)) : std::nullopt);
        data_[n.outputs[0]] = out;
      }
      return;
    }
    if ((op != "Add" && op != "Sub" && op != "Mul" && op != "Div") || n.inputs.size() != 2) return;
    const Shape_ *a = data(n.inputs[0]), *b = data(n.inputs[1]);
    // An empty operand broadcasts against nothing but an empty one (a Gather out of range, which
    // the evaluator refuses when it runs, gives one here).
    if (!a || !b || a->empty() || b->empty() || (a->size() != b->size() && a->size() != 1 && b->size() != 1)) return;
    const size_t size = std::max(a->size(), b->size());
    Shape_ out;
    for (size_t i = 0; i < size; ++i) {
      const Elem &x = (*a)[a->size() == 1 ? 0 : i], &y = (*b)[b->size() == 1 ? 0 : i];
      if (!x || !y) {
        out.push_back(std::nullopt);
        continue;
      }
      if (op == "Add") out.push_back(*x + *y);
      else if (op == "Sub") out.push_back(*x - *y);
      else if (op == "Mul") out.push_back(*x * *y);
      else if (auto fx = x->fixed(), fy = y->fixed(); fx && fy && *fy != 0) out.push_back(Poly::constant(*fx / *fy));  // integer division as ONNX
      else out.push_back(y->fixed() && *y->fixed() > 0 ? x->divided_by(*y) : std::nullopt);
    }
    data_[n.outputs[0]] = out;
  }

  // torch's expand(): Where(Equal(shape, -1s), 1s, shape) picks each size: the data of
  // ConstantOfShape, Equal and Where on shape values.
  void constant_of_shape_data(const Node& n, const Shape_& shape) {
    if (shape.size() != 1 || !shape[0] || !shape[0]->fixed() || *shape[0]->fixed() < 0 || *shape[0]->fixed() > 64) return;
    int64_t v = 0;
    if (const Attribute* a = n.find_attribute("value"); a && a->type == AttrType::Tensor) {
      const Tensor& t = a->t;
      if (t.size() != 1 || (t.dtype() != DType::Int64 && t.dtype() != DType::Int32)) return;
      v = t.dtype() == DType::Int64 ? t.data<int64_t>()[0] : t.data<int32_t>()[0];
    }
    data_[n.outputs[0]] = Shape_(size_t(*shape[0]->fixed()), Poly::constant(v));
  }

  void equal_data(const Node& n) {
    const Shape_ *a = data(n.inputs[0]), *b = data(n.inputs[1]);
    if (!a || !b || (a->size() != b->size() && a->size() != 1 && b->size() != 1)) return;
    Shape_ out;
    for (size_t i = 0; i < std::max(a->size(), b->size()); ++i) {
      const Elem &x = (*a)[a->size() == 1 ? 0 : i], &y = (*b)[b->size() == 1 ? 0 : i];
      if (!x || !y) return;
      const auto fx = x->fixed(), fy = y->fixed();
      if (fx && fy) out.push_back(Poly::constant(*fx == *fy));
      else if (*x == *y) out.push_back(Poly::constant(1));
      else if ((fx && *fx < 0) || (fy && *fy < 0)) out.push_back(Poly::constant(0));  // a size is never negative
      else return;
    }
    data_[n.outputs[0]] = out;
  }

  void where_data(const Node& n) {
    const Shape_ *c = data(n.inputs[0]), *x = data(n.inputs[1]), *y = data(n.inputs[2]);
    if (!c || !x || !y) return;
    const size_t size = std::max({c->size(), x->size(), y->size()});
    Shape_ out;
    for (size_t i = 0; i < size; ++i) {
      auto at = [&](const Shape_* s) -> const Elem* { return s->size() == 1 ? &(*s)[0] : i < s->size() ? &(*s)[i] : nullptr; };
      const Elem *ce = at(c), *xe = at(x), *ye = at(y);
      if (!ce || !xe || !ye || !*ce || !(*ce)->fixed()) return;
      out.push_back(*(*ce)->fixed() ? *xe : *ye);
    }
    data_[n.outputs[0]] = out;
  }

  // MatMul, and com.microsoft FusedMatMul (transA / transB swap an operand's last two axes).
  void matmul(const Node& n) {
    const Shape_ *a = dims(n.inputs[0]), *b = dims(n.inputs[1]);
    if (!a || !b || a->empty() || b->empty()) return;
    Shape_ x = *a, y = *b;
    if (n.op_type == "FusedMatMul") {
      if (int_attr(n, "transBatchA", 0) || int_attr(n, "transBatchB", 0)) return;
      if (int_attr(n, "transA", 0) && x.size() >= 2) std::swap(x[x.size() - 1], x[x.size() - 2]);
      if (int_attr(n, "transB", 0) && y.size() >= 2) std::swap(y[y.size() - 1], y[y.size() - 2]);
    }
    const bool va = x.size() == 1, vb = y.size() == 1;
    if (va) x.insert(x.begin(), Poly::constant(1));
    if (vb) y.push_back(Poly::constant(1));
    const Shape_ bx(x.begin(), x.end() - 2), by(y.begin(), y.end() - 2);
    auto batch = broadcast_all({&bx, &by});
    if (!batch) return;
    Shape_ out = *batch;
    if (!va) out.push_back(x[x.size() - 2]);
    if (!vb) out.push_back(y.back());
    dims_[n.outputs[0]] = out;
  }

  void reshape(const Node& n) {
    const Shape_* s = dims(n.inputs[0]);
    const Shape_* t = data(n.inputs[1]);
    if (!t) return;
    Shape_ out;
    int infer_at = -1;
    for (size_t i = 0; i < t->size(); ++i) {
      const Elem& e = (*t)[i];
      const auto f = e ? e->fixed() : std::nullopt;
      if (f == 0 && int_attr(n, "allowzero", 0) == 0) out.push_back(s && i < s->size() ? (*s)[i] : std::nullopt);
      else if (f == -1) out.push_back(std::nullopt), infer_at = int(i);
      else out.push_back(e);
    }
    if (infer_at >= 0 && s) {
      Shape_ rest = out;
      rest.erase(rest.begin() + infer_at);
      const Elem total = numel(*s), known = numel(rest);
      if (total && known) out[size_t(infer_at)] = total->divided_by(*known);
    }
    dims_[n.outputs[0]] = out;
    if (const Shape_* d = data(n.inputs[0]); d && out.size() <= 1) data_[n.outputs[0]] = *d;
  }

  // Slice bounds as ONNX clamps them: a negative bound counts from the end, a huge one is the
  // end; a symbolic bound is taken as in range (the model fails at run time otherwise).
  Elem bound(const Elem& b, const Elem& dim) {
    if (!b) return std::nullopt;
    if (auto f = b->fixed()) {
      if (*f >= (int64_t(1) << 31)) return dim;
      if (*f < 0) return dim ? std::optional<Poly>(*dim + *b) : std::nullopt;
      if (dim && dim->fixed()) return Poly::constant(std::min(*f, *dim->fixed()));
    }
    if (b->negative()) return dim ? std::optional<Poly>(*dim + *b) : std::nullopt;
    return b;
  }

  void slice(const Node& n) {
    const Shape_* s = dims(n.inputs[0]);
    const Shape_* starts = n.inputs.size() > 1 ? data(n.inputs[1]) : nullptr;
    const Shape_* ends = n.inputs.size() > 2 ? data(n.inputs[2]) : nullptr;
    if (!s) return;
    std::vector<int64_t> ax;
    if (n.inputs.size() > 3 && !n.inputs[3].empty()) {
      const auto a = known_ints(n.inputs[3]);
      if (!a) return;
      ax = *a;
    } else if (starts) {
      for (size_t i = 0; i < starts->size(); ++i) ax.push_back(int64_t(i));
    } else {
      return;
    }
    if (!starts || !ends || starts->size() != ends->size()) {
      // Bounds computed at run time (`[:, -s:]`): the rank and the axes not sliced are known.
      Shape_ out = *s;
      for (int64_t a : ax) {
        const int64_t k = axis_of(a, s->size());
        if (k < 0 || k >= int64_t(s->size())) return;
        out[size_t(k)] = std::nullopt;
      }
      dims_[n.outputs[0]] = out;
      return;
    }
    if (n.inputs.size() > 4 && !n.inputs[4].empty()) {
      const auto steps = known_ints(n.inputs[4]);
      if (!steps || std::any_of(steps->begin(), steps->end(), [](int64_t v) { return v != 1; })) return;
    }
    if (ax.size() != starts->size()) return;
    Shape_ out = *s;
    for (size_t i = 0; i < ax.size(); ++i) {
      const int64_t a = axis_of(ax[i], s->size());
      if (a < 0 || a >= int64_t(s->size())) return;
      const Elem dim = (*s)[size_t(a)];
      const Elem b = bound((*starts)[i], dim), e = bound((*ends)[i], dim);
      out[size_t(a)] = b && e ? std::optional<Poly>(*e - *b) : std::nullopt;
    }
    dims_[n.outputs[0]] = out;
    // The elements of a sliced 1-D shape value.
    if (const Shape_* d = data(n.inputs[0]); d && ax.size() == 1 && s->size() == 1) {
      const auto b = (*starts)[0] ? (*starts)[0]->fixed() : std::nullopt;
      const auto e = (*ends)[0] ? (*ends)[0]->fixed() : std::nullopt;
      if (!b || !e) return;
      const int64_t size = int64_t(d->size());
      const int64_t lo = std::clamp(*b < 0 ? *b + size : *b, int64_t(0), size);
      const int64_t hi = std::clamp(*e < 0 ? *e + size : *e, int64_t(0), size);
      data_[n.outputs[0]] = Shape_(d->begin() + lo, d->begin() + std::max(lo, hi));
    }
  }

  void concat(const Node& n) {
    const int64_t axis = int_attr(n, "axis", 0);
    Shape_ out;
    Shape_ values;
    bool all_data = true;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const Shape_* s = dims(n.inputs[i]);
      if (const Shape_* d = data(n.inputs[i])) values.insert(values.end(), d->begin(), d->end());
      else all_data = false;
      if (!s) {
        out.clear();
        break;
      }
      if (i == 0) {
        out = *s;
        continue;
      }
      const int64_t a = axis_of(axis, s->size());
      if (s->size() != out.size() || a < 0 || a >= int64_t(out.size())) {
        out.clear();
        break;
      }
      const Elem& x = out[size_t(a)];
      const Elem& y = (*s)[size_t(a)];
      out[size_t(a)] = x && y ? std::optional<Poly>(*x + *y) : std::nullopt;
      for (size_t k = 0; k < out.size(); ++k)
        if (int64_t(k) != a) out[k] = broadcast(out[k], (*s)[k]);
    }
    if (!out.empty()) dims_[n.outputs[0]] = out;
    if (all_data) data_[n.outputs[0]] = values;
  }

  void split(const Node& n) {
    const Shape_* s = dims(n.inputs[0]);
    if (!s) return;
    const int64_t a = axis_of(int_attr(n, "axis", 0), s->size());
    if (a < 0 || a >= int64_t(s->size())) return;
    std::vector<int64_t> sizes = ints_attr(n, "split");
    if (n.inputs.size() > 1 && !n.inputs[1].empty()) sizes = index_.ints(n.inputs[1]).value_or(std::vector<int64_t>{});
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      Shape_ o = *s;
      if (!sizes.empty()) {
        if (sizes.size() != n.outputs.size()) return;
        o[size_t(a)] = Poly::constant(sizes[i]);
      } else {
        const Elem& d = (*s)[size_t(a)];
        o[size_t(a)] = d ? d->divided_by(Poly::constant(int64_t(n.outputs.size()))) : std::nullopt;
      }
      if (!n.outputs[i].empty()) dims_[n.outputs[i]] = o;
    }
  }

  void gather(const Node& n) {
    const Shape_ *s = dims(n.inputs[0]), *idx = dims(n.inputs[1]);
    const int64_t a = s ? axis_of(int_attr(n, "axis", 0), s->size()) : -1;
    if (s && idx && a >= 0 && a < int64_t(s->size())) {
      Shape_ o(s->begin(), s->begin() + a);
      o.insert(o.end(), idx->begin(), idx->end());
      o.insert(o.end(), s->begin() + a + 1, s->end());
      dims_[n.outputs[0]] = o;
    }
    const Shape_* d = data(n.inputs[0]);
    const auto indices = index_.ints(n.inputs[1]);
    if (!d || !indices || a != 0) return;
    Shape_ values;
    for (int64_t i : *indices) {
      const int64_t k = i < 0 ? i + int64_t(d->size()) : i;
      if (k < 0 || k >= int64_t(d->size())) return;
      values.push_back((*d)[size_t(k)]);
    }
    data_[n.outputs[0]] = values;
  }

  void squeeze(const Node& n) {
    const Shape_* s = dims(n.inputs[0]);
    if (const Shape_* d = data(n.inputs[0])) data_[n.outputs[0]] = *d;  // elements unchanged (rank 0 <-> 1)
    if (!s) return;
    std::vector<int64_t> ax = axes(n, 1);
    if (n.op_type == "Unsqueeze") {
      const size_t rank = s->size() + ax.size();
      std::vector<bool> added(rank, false);
      for (int64_t a : ax) {
        const int64_t k = axis_of(a, rank);
        if (k < 0 || k >= int64_t(rank) || added[size_t(k)]) return;  // invalid: the evaluator refuses it when it runs
        added[size_t(k)] = true;
      }
      Shape_ o;
      size_t j = 0;
      for (size_t i = 0; i < rank; ++i) o.push_back(added[i] ? Elem(Poly::constant(1)) : (*s)[j++]);
      dims_[n.outputs[0]] = o;
    } else {
      Shape_ o;
      for (size_t i = 0; i < s->size(); ++i) {
        const bool dropped = ax.empty() ? (*s)[i] && (*s)[i]->fixed() == std::optional<int64_t>(1)
                                        : std::any_of(ax.begin(), ax.end(), [&](int64_t a) { return axis_of(a, s->size()) == int64_t(i); });
        if (!dropped) o.push_back((*s)[i]);
      }
      dims_[n.outputs[0]] = o;
    }
  }

  void shape(const Node& n) {
    const Shape_* s = dims(n.inputs[0]);
    if (!s) return;
    const int64_t rank = int64_t(s->size());
    int64_t start = int_attr(n, "start", 0), end = int_attr(n, "end", rank);
    start = std::clamp(start < 0 ? start + rank : start, int64_t(0), rank);
    end = std::clamp(end < 0 ? end + rank : end, int64_t(0), rank);
    data_[n.outputs[0]] = Shape_(s->begin() + start, s->begin() + std::max(start, end));
    dims_[n.outputs[0]] = {Poly::constant(std::max(int64_t(0), end - start))};
  }

  void reduce(const Node& n) {
    const Shape_* s = dims(n.inputs[0]);
    if (!s) return;
    std::vector<int64_t> ax = axes(n, 1);
    const bool keep = int_attr(n, "keepdims", 1) != 0;
    if (ax.empty()) return;  // all axes or none (noop_with_empty_axes): left to ONNX
    Shape_ o;
    for (size_t i = 0; i < s->size(); ++i) {
      const bool reduced = std::any_of(ax.begin(), ax.end(), [&](int64_t a) { return axis_of(a, s->size()) == int64_t(i); });
      if (!reduced) o.push_back((*s)[i]);
      else if (keep) o.push_back(Poly::constant(1));
    }
    dims_[n.outputs[0]] = o;
  }

  // Output `out` has input `in`'s element type: typed here when ONNX did not (an operator it
  // does not know), so that the fusions after it still see shapes.
  void same_type(const Node& n, size_t out, size_t in) {
    if (out >= n.outputs.size() || n.outputs[out].empty() || in >= n.inputs.size() || inf_.types.count(n.outputs[out])) return;
    if (const ValueType* t = index_.type(n.inputs[in]); t && t->kind == ValueType::Kind::Tensor)
      inf_.types[n.outputs[out]] = ValueType::tensor_of_unknown_rank(t->dtype);
  }

  // Writes what is known of `v` into the inference where ONNX knows less.
  void publish(const std::string& v) {
    if (auto it = dims_.find(v); it != dims_.end()) {
      auto t = inf_.types.find(v);
      if (t != inf_.types.end() && t->second.kind == ValueType::Kind::Tensor) {
        ValueType& type = t->second;
        if (!type.has_shape) {
          type.has_shape = true;
          for (const Elem& e : it->second) type.dims.push_back(to_dim(e));
        } else if (type.dims.size() == it->second.size()) {
          for (size_t i = 0; i < type.dims.size(); ++i) {
            const Dim mine = to_dim(it->second[i]);
            if (onnx_placeholder(type.dims[i]) && (mine.fixed() || !mine.param.empty())) type.dims[i] = mine;
          }
        }
        // Our view follows ONNX's names where it knew them; our polynomials elsewhere. A name
        // ONNX gave to what we know as a polynomial of other symbols is an alias for it.
        for (size_t i = 0; i < type.dims.size() && i < it->second.size(); ++i) {
          if (onnx_placeholder(type.dims[i])) continue;
          const Elem& mine = it->second[i];
          if (mine && !mine->fixed() && !type.dims[i].fixed() && !(*mine == parse(type.dims[i].param)))
            inf_.aliases.emplace(type.dims[i].param, mine->text());
          it->second[i] = from_dim(type.dims[i]);
        }
      }
    }
    if (auto it = data_.find(v); it != data_.end()) {
      std::vector<Dim> mine;
      for (const Elem& e : it->second) mine.push_back(to_dim(e));
      auto d = inf_.shape_data.find(v);
      if (d == inf_.shape_data.end()) {
        inf_.shape_data[v] = mine;
      } else if (d->second.size() == mine.size()) {
        for (size_t i = 0; i < mine.size(); ++i)
          if (onnx_placeholder(d->second[i]) && (mine[i].fixed() || !mine[i].param.empty())) d->second[i] = mine[i];
      }
    }
  }

  const Graph& g_;
  Inference& inf_;
  GraphIndex index_;
  std::map<std::string, Shape_> dims_, data_;
};

}  // namespace

void refine_symbolic_shapes(const Model& model, Inference& inference) { Propagation(model, inference).run(); }

namespace {
// A dim as a polynomial, each symbol ONNX named for a polynomial the propagation found replaced by it.
Elem resolved(const Dim& d, const Inference* inference) {
  Elem e = from_dim(d);
  if (!e || !inference || inference->aliases.empty()) return e;
  return e->substituted([&](const std::string& s) -> std::optional<Poly> {
    auto it = inference->aliases.find(s);
    return it == inference->aliases.end() ? std::nullopt : std::optional<Poly>(parse(it->second));
  });
}
}  // namespace

std::optional<Dim> dim_difference(const Dim& a, const Dim& b, const Inference* inference) {
  const Elem x = resolved(a, inference), y = resolved(b, inference);
  if (!x || !y) return std::nullopt;
  return to_dim(*x - *y);
}

bool dims_equal(const Dim& a, const Dim& b, const Inference* inference) {
  const Elem x = resolved(a, inference), y = resolved(b, inference);
  return x && y && *x == *y;
}

std::optional<std::map<std::string, int64_t>> linear_terms(const Dim& d, const Inference* inference) {
  const Elem e = resolved(d, inference);
  if (!e) return std::nullopt;
  std::map<std::string, int64_t> out;
  for (const auto& [monomial, c] : e->terms()) {
    if (monomial.size() > 1) return std::nullopt;
    out[monomial.empty() ? "" : monomial[0]] = c;
  }
  return out;
}

}  // namespace refeval::optimize

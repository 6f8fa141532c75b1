// Tracing the cos and sin operands of a rotation, the caches RotaryEmbedding takes, and the fused
// node (rotary_common.h).
//   - gathered: Gather(T, p) of a constant table T (max_pos, h) (maybe Slice(T, 0:len) or Squeezed
//     from (1, 1, max_pos, h)); for rotate-half T must be cat(freqs, freqs): its two column halves
//     equal, and the op's cache (max_pos, h/2) is the first half; a rotation written pair by pair
//     gathers the (max_pos, h/2) cache itself;
//   - computed: Cos / Sin of f (pair by pair) or of Concat(f, f) (rotate-half) with
//     f[b, s, i] = float(p[b, s]) * inv_freq[i] written any way an exporter does (trace_outer):
//     Transpose(MatMul(inv_freq (.., h/2, 1), Unsqueeze(p, 1) as float), 0 2 1) as transformers
//     >= 4.38, `p[..., None].float() * inv_freq` as Phi-3 and Meta's llama, torch.outer's MatMul
//     over a unit axis, an Einsum without summation, transposed or not; the caches are
//     materialised for positions 0 .. kComputedPositions - 1 with float products as torch rounds
//     them. A position past that is out of the caches' range, and the fused node fails where the
//     original computed: refeval "position 5000 is outside the cos/sin caches' 4096 rows", ORT 1.30
//     "position_ids value 5000 at index 0 is out of range [0, 4096)".
// The positions p must be one int64 (B, S) tensor for cos and sin, with x's B and S, given or
// computed in the graph; RotaryEmbedding reads p. Caches are emitted once per distinct source
// (q and k share them). The cos/sin chains stay until dead-code removal (other layers read them).
#include "rotary_common.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "refeval/builder.h"
#include "refeval/compute_vector.h"

namespace refeval::optimize::rotary {

std::optional<std::vector<int64_t>> known_ints(const GraphIndex& g, const std::string& v) {
  if (auto c = g.ints(v)) return c;
  const std::vector<Dim>* d = g.shape_data(v);
  if (!d) return std::nullopt;
  std::vector<int64_t> out;
  for (const Dim& x : *d) {
    if (!x.fixed()) return std::nullopt;
    out.push_back(x.value);
  }
  return out;
}

std::string dims_string(const std::vector<Dim>& dims) {
  std::vector<std::string> s;
  for (const Dim& d : dims) s.push_back(d.fixed() ? std::to_string(d.value) : d.param.empty() ? "?" : d.param);
  return fmt::format("({})", fmt::join(s, ", "));
}

std::optional<std::pair<int64_t, int64_t>> last_axis_range(const GraphIndex& g, const Node& s, int64_t h, size_t rank) {
  const auto last = [rank](int64_t axis) { return axis == -1 || axis == int64_t(rank) - 1; };
  std::optional<std::vector<int64_t>> starts, ends, axes, steps = std::vector<int64_t>{1};
  if (s.inputs.size() == 1) {  // opset < 10: attributes
    starts = ints_attr(s, "starts"), ends = ints_attr(s, "ends"), axes = ints_attr(s, "axes");
  } else {
    starts = known_ints(g, s.inputs[1]), ends = known_ints(g, s.inputs[2]);
    axes = s.inputs.size() > 3 && !s.inputs[3].empty() ? known_ints(g, s.inputs[3]) : std::nullopt;
    if (s.inputs.size() > 4 && !s.inputs[4].empty()) steps = known_ints(g, s.inputs[4]);
  }
  if (!starts || !ends || !axes || !steps || starts->size() != 1 || ends->size() != 1 || axes->size() != 1 || !last((*axes)[0]) ||
      *steps != std::vector<int64_t>{1})
    return std::nullopt;
  const auto clamp = [h](int64_t i) { return std::clamp(i < 0 ? i + h : i, int64_t(0), h); };
  return std::pair{clamp((*starts)[0]), clamp((*ends)[0])};
}

namespace {

constexpr int64_t kComputedPositions = 4096;


// Where a cos or sin operand comes from.
struct Trig {
  bool computed = false;
  std::string table;      // gathered: the constant table (.., max_pos, h)
  std::string freqs;      // computed: the Concat(f, f) value
  std::string inv_freq;   // computed: the constant (.., h/2, 1)
  std::string function;   // computed: "Cos" or "Sin"
  std::string positions;  // the int64 (B, S) position ids
  int64_t axis = 0;       // the Unsqueeze axis: 1 for x (B, N, S, h), 2 for (B, S, N, h)
  double scale = 1;       // constant factors on the way
};

// The (.., max_pos, h) constant, all leading dims 1, a Gather's data comes from through Slices of
// the rows from 0, Squeezes of the leading dims and Casts, arriving 2-D; empty with `why` otherwise.
std::string trace_table(const GraphIndex& g, std::string v, std::string& why) {
  std::vector<const Node*> chain;
  for (const Node* n = g.producer_node(v); n && !g.constant(v); n = g.producer_node(v)) {
    if (n->op_type != "Squeeze" && n->op_type != "Cast" && n->op_type != "Slice") {
      why = fmt::format("the cos/sin table '{}' is computed by {} ('{}'), not sliced from a constant", v, n->op_type, n->name);
      return "";
    }
    chain.push_back(n);
    v = n->inputs[0];
  }
  const Tensor* t = g.constant(v);
  bool leading_ones = t && t->rank() >= 2;
  for (size_t i = 0; leading_ones && i + 2 < t->rank(); ++i) leading_ones = t->dim(i) == 1;
  if (!leading_ones) {
    why = fmt::format("the cos/sin table '{}' is not a constant (.., max_pos, h) with leading dims 1", v);
    return "";
  }
  // Forward from the constant: the rank, and what each step does to it.
  int64_t rank = int64_t(t->rank());
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    const Node& n = **it;
    if (n.op_type == "Squeeze") {
      auto axes = axes_of(n, g);
      if (axes && axes->empty()) {  // no axes: every unit dim, which must be leading ones only
        const std::vector<Dim>* d = g.dims(n.inputs[0]);
        axes.reset();
        if (d && int64_t(d->size()) == rank && std::all_of(d->begin(), d->end(), [](const Dim& x) { return x.fixed(); })) {
          axes.emplace();
          for (int64_t a = 0; a < rank; ++a)
            if ((*d)[size_t(a)].value == 1) axes->push_back(a);
        }
      }
      bool leading = axes && !axes->empty();
      for (int64_t& a : axes.value_or(std::vector<int64_t>{})) leading = leading && (a < 0 ? a + rank : a) < rank - 2;
      if (!leading) {
        why = fmt::format("'{}' does not squeeze leading unit dims of the cos/sin table", n.name);
        return "";
      }
      rank -= int64_t(axes->size());
    } else if (n.op_type == "Slice") {
      // Without axes a Slice of one start cuts axis 0 (the rows of a 2-D table).
      const auto starts = n.inputs.size() > 2 ? g.ints(n.inputs[1]) : std::nullopt;
      const auto axes = n.inputs.size() > 3 && !n.inputs[3].empty() ? g.ints(n.inputs[3])
                        : n.inputs.size() > 2                        ? std::optional(std::vector<int64_t>{0})
                                                                     : std::nullopt;
      const auto steps = n.inputs.size() > 4 && !n.inputs[4].empty() ? g.ints(n.inputs[4]) : std::optional(std::vector<int64_t>{1});
      if (!starts || !axes || !steps || *starts != std::vector<int64_t>{0} || axes->size() != 1 || *steps != std::vector<int64_t>{1} ||
          ((*axes)[0] != rank - 2 && (*axes)[0] != -2)) {
        why = fmt::format("'{}' does not slice the cos/sin table's rows from 0", n.name);
        return "";
      }
    }
  }
  if (rank != 2) {
    why = fmt::format("the cos/sin table gathered from '{}' is {}-D, not (max_pos, h)", v, rank);
    return "";
  }
  return v;
}

// Frequencies computed on the fly are an outer product f[b, s, i] = float(p[b, s]) * inv_freq[i],
// written as a broadcast Mul (`position_ids[..., None].float() * inv_freq`), a MatMul over a unit
// axis (transformers >= 4.38: `inv_freq[None, :, None] @ position_ids[:, None, :]`, transposed;
// `torch.outer`), or an Einsum without summation (`einsum("bs,d->bsd", ...)`), each maybe
// transposed. Tracing gives each axis of a value a role: 'b' and 's' (the positions' batch and
// sequence), 'i' (inv_freq's index) or '1' (the value does not vary along it: a unit or broadcast
// axis). f fuses when its roles are (b, s, i).
struct Outer {
  std::vector<char> roles;
  std::string inv;        // the constant inv_freq: one axis of h/2 values, the others 1
  std::string positions;  // the int64 (B, S) position ids
};

std::vector<std::string> role_names(const std::vector<char>& roles) {
  std::vector<std::string> out;
  for (const char r : roles) out.push_back(r == 'b' ? "batch" : r == 's' ? "sequence" : r == 'i' ? "inv_freq" : "1");
  return out;
}

std::optional<std::vector<char>> unsqueezed(std::vector<char> roles, std::vector<int64_t> axes) {
  const int64_t rank = int64_t(roles.size() + axes.size());
  for (int64_t& a : axes) {
    if (a < -rank || a >= rank) return std::nullopt;
    a = a < 0 ? a + rank : a;
  }
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) return std::nullopt;
  for (const int64_t a : axes) roles.insert(roles.begin() + a, '1');
  return roles;
}

// Numpy broadcasting of two role lists (right-aligned); nullopt when both vary along one axis.
std::optional<std::vector<char>> broadcast(const std::vector<char>& a, const std::vector<char>& b) {
  const size_t rank = std::max(a.size(), b.size());
  std::vector<char> out(rank, '1');
  for (size_t k = 0; k < rank; ++k) {
    const char ra = k + a.size() < rank ? '1' : a[k + a.size() - rank];
    const char rb = k + b.size() < rank ? '1' : b[k + b.size() - rank];
    if (ra != '1' && rb != '1') return std::nullopt;
    out[k] = ra != '1' ? ra : rb;
  }
  return out;
}

bool casts_to_float(const Node& n) {
  const int64_t to = int_attr(n, "to", 0);
  return to == int64_t(DType::Float) || to == int64_t(DType::Double);
}

// `v` as the position ids: the int64 (B, S) ids through Unsqueezes and Casts to float (or double
// then float: the same rounding of an integer), arriving float.
std::optional<Outer> position_side(const GraphIndex& g, const std::string& v) {
  std::vector<const Node*> chain;
  std::string cur = v;
  for (;;) {
    const ValueType* t = g.type(cur);
    const std::vector<Dim>* d = g.dims(cur);
    if (t && t->dtype == DType::Int64 && d && d->size() == 2) break;
    const Node* n = g.producer_node(cur);
    if (!n || !n->domain.empty() || (n->op_type != "Unsqueeze" && n->op_type != "Identity" && !(n->op_type == "Cast" && casts_to_float(*n))))
      return std::nullopt;
    chain.push_back(n);
    cur = n->inputs[0];
  }
  Outer o{{'b', 's'}, "", cur};
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    if ((*it)->op_type != "Unsqueeze") continue;
    const auto axes = axes_of(**it, g);
    const auto roles = axes ? unsqueezed(o.roles, *axes) : std::nullopt;
    if (!roles) return std::nullopt;
    o.roles = *roles;
  }
  const ValueType* t = g.type(v);
  if (!t || t->dtype != DType::Float) return std::nullopt;
  return o;
}

// `v` as inv_freq: a float constant with one non-unit axis, through Unsqueezes, Expands (over the
// batch) and Casts to float; a float16 or bfloat16 constant when a Cast widens it (exactly).
std::optional<Outer> inv_freq_side(const GraphIndex& g, const std::string& v) {
  std::vector<const Node*> chain;
  std::string cur = v;
  bool widened = false;
  while (!g.constant(cur)) {
    const Node* n = g.producer_node(cur);
    if (!n || !n->domain.empty() ||
        (n->op_type != "Unsqueeze" && n->op_type != "Expand" && n->op_type != "Identity" && !(n->op_type == "Cast" && casts_to_float(*n))))
      return std::nullopt;
    widened = widened || n->op_type == "Cast";
    chain.push_back(n);
    cur = n->inputs[0];
  }
  const Tensor* c = g.constant(cur);
  const bool half = c->dtype() == DType::Float16 || c->dtype() == DType::BFloat16;
  if (c->dtype() != DType::Float && c->dtype() != DType::Double && !(half && widened)) return std::nullopt;
  Outer o{{}, cur, ""};
  for (size_t k = 0; k < c->rank(); ++k) o.roles.push_back(c->dim(k) == 1 ? '1' : 'i');
  if (std::count(o.roles.begin(), o.roles.end(), 'i') != 1) return std::nullopt;
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    const Node& n = **it;
    if (n.op_type == "Unsqueeze") {
      const auto axes = axes_of(n, g);
      const auto roles = axes ? unsqueezed(o.roles, *axes) : std::nullopt;
      if (!roles) return std::nullopt;
      o.roles = *roles;
    } else if (n.op_type == "Expand") {  // new leading axes and unit axes repeated: the values do not vary along them
      const std::vector<Dim>* d = g.dims(n.outputs[0]);
      if (!d || d->size() < o.roles.size()) return std::nullopt;
      o.roles.insert(o.roles.begin(), d->size() - o.roles.size(), '1');
    }
  }
  return o;
}

// The roles of an Einsum's output from its operands', for an equation without summation or
// diagonals (every input label in the output once); nullopt otherwise.
std::optional<std::vector<char>> einsum_roles(const std::string& equation, const std::vector<char>& a, const std::vector<char>& b) {
  std::string e;
  for (const char ch : equation)
    if (ch != ' ') e += ch;
  const size_t arrow = e.find("->");
  const std::string lhs = e.substr(0, arrow);
  const size_t comma = lhs.find(',');
  if (comma == std::string::npos || lhs.find(',', comma + 1) != std::string::npos) return std::nullopt;
  // Labels per axis; the axes of an ellipsis get digits counted from the right, as they broadcast.
  size_t ellipsis_width = 0;
  const auto expand = [&](const std::string& term, size_t rank) -> std::optional<std::string> {
    const size_t dots = term.find("...");
    std::string letters = term;
    if (dots != std::string::npos) letters.erase(dots, 3);
    for (const char ch : letters)
      if (!std::isalpha(static_cast<unsigned char>(ch))) return std::nullopt;
    if (dots == std::string::npos) return letters.size() == rank ? std::optional(letters) : std::nullopt;
    if (letters.size() > rank) return std::nullopt;
    const size_t width = rank - letters.size();
    ellipsis_width = std::max(ellipsis_width, width);
    std::string labels;
    for (size_t k = 0; k < width; ++k) labels += char('0' + (width - 1 - k));
    return term.substr(0, dots) + labels + term.substr(dots + 3);
  };
  const auto la = expand(lhs.substr(0, comma), a.size()), lb = expand(lhs.substr(comma + 1), b.size());
  if (!la || !lb) return std::nullopt;
  std::string out;
  if (arrow == std::string::npos) {  // implicit output: the ellipsis, then the labels used once, sorted
    for (size_t k = 0; k < ellipsis_width; ++k) out += char('0' + (ellipsis_width - 1 - k));
    std::string once;
    const std::string all = *la + *lb;  // one string: begin() and end() of two temporaries would not be one range
    for (const char ch : all)
      if (std::isalpha(static_cast<unsigned char>(ch)) && std::count(all.begin(), all.end(), ch) == 1) once += ch;
    std::sort(once.begin(), once.end());
    out += once;
  } else {
    out = e.substr(arrow + 2);
    if (const size_t dots = out.find("..."); dots != std::string::npos) {
      std::string labels;
      for (size_t k = 0; k < ellipsis_width; ++k) labels += char('0' + (ellipsis_width - 1 - k));
      out.replace(dots, 3, labels);
    }
  }
  const auto unique = [](std::string s) {
    std::sort(s.begin(), s.end());
    return std::adjacent_find(s.begin(), s.end()) == s.end();
  };
  if (!unique(*la) || !unique(*lb) || !unique(out)) return std::nullopt;
  std::vector<char> roles;
  for (const char ch : out) {
    const size_t ia = la->find(ch), ib = lb->find(ch);
    if (ia == std::string::npos && ib == std::string::npos) return std::nullopt;
    const char ra = ia == std::string::npos ? '1' : a[ia], rb = ib == std::string::npos ? '1' : b[ib];
    if (ra != '1' && rb != '1') return std::nullopt;
    roles.push_back(ra != '1' ? ra : rb);
  }
  for (const char ch : *la + *lb)
    if (out.find(ch) == std::string::npos) return std::nullopt;  // summed over
  return roles;
}

// Traces the frequencies `v` back to the outer product of the position ids and inv_freq.
std::optional<Outer> trace_outer(const GraphIndex& g, const std::string& v, std::string& why) {
  const Node* n = g.producer_node(v);
  if (!n || !n->domain.empty()) {
    why = fmt::format("'{}' is not computed by a standard operator", v);
    return std::nullopt;
  }
  const ValueType* t = g.type(v);
  if (!t || t->dtype != DType::Float) {
    why = fmt::format("'{}' is {}, not float", v, t ? dtype_onnx_name(t->dtype) : "untyped");
    return std::nullopt;
  }
  if (n->op_type == "Cast" || n->op_type == "Identity") {
    const ValueType* in = g.type(n->inputs[0]);
    if (!in || in->dtype != DType::Float) {
      why = fmt::format("'{}' casts a {} value", n->name, in ? dtype_onnx_name(in->dtype) : "untyped");
      return std::nullopt;
    }
    return trace_outer(g, n->inputs[0], why);
  }
  if (n->op_type == "Transpose") {
    auto o = trace_outer(g, n->inputs[0], why);
    if (!o) return std::nullopt;
    std::vector<int64_t> perm = ints_attr(*n, "perm");
    if (perm.empty())
      for (int64_t k = int64_t(o->roles.size()) - 1; k >= 0; --k) perm.push_back(k);
    // perm has one axis per role: inference types the Transpose (checked above) only for a perm
    // of its input's rank, which the roles follow.
    std::vector<char> roles;
    for (const int64_t k : perm) {
      if (k < 0 || k >= int64_t(o->roles.size())) return std::nullopt;
      roles.push_back(o->roles[size_t(k)]);
    }
    o->roles = roles;
    return o;
  }
  if ((n->op_type != "Mul" && n->op_type != "MatMul" && n->op_type != "Einsum") || n->inputs.size() != 2) {
    why = fmt::format("'{}' is {}", n->name, n->op_type);
    return std::nullopt;
  }
  std::optional<Outer> side[2][2];  // [operand][0: positions, 1: inv_freq]
  for (size_t k = 0; k < 2; ++k) side[k][0] = position_side(g, n->inputs[k]), side[k][1] = inv_freq_side(g, n->inputs[k]);
  const int p = side[0][0] ? 0 : side[1][0] ? 1 : -1;
  if (p < 0 || !side[1 - p][1]) {
    why = fmt::format("'{}' ({}) does not multiply the position ids cast to float by a constant inv_freq", n->name, n->op_type);
    return std::nullopt;
  }
  const std::vector<char>& a = side[0][p == 0 ? 0 : 1]->roles;
  const std::vector<char>& b = side[1][p == 1 ? 0 : 1]->roles;
  std::optional<std::vector<char>> roles;
  if (n->op_type == "Mul") {
    roles = broadcast(a, b);
  } else if (n->op_type == "Einsum") {
    roles = einsum_roles(std::string(n->find_attribute("equation") ? n->find_attribute("equation")->s : ""), a, b);
  } else {
    // MatMul over a unit axis: a (.., M, 1) @ b (.., 1, N) is the broadcast product. The positions'
    // operand has role '1' only on the axes its Unsqueezes inserted, of size 1, so the contracted
    // axis is 1 on both sides (MatMul needs them equal) when both have role '1' there.
    if (a.size() < 2 || b.size() < 2 || a.back() != '1' || b[b.size() - 2] != '1') {
      why = fmt::format("'{}' does not contract a unit axis (not an outer product)", n->name);
      return std::nullopt;
    }
    roles = broadcast(std::vector<char>(a.begin(), a.end() - 2), std::vector<char>(b.begin(), b.end() - 2));
    if (roles) roles->push_back(a[a.size() - 2]), roles->push_back(b.back());
  }
  if (!roles) {
    why = fmt::format("'{}' ({}) is not an outer product of the position ids and inv_freq", n->name, n->op_type);
    return std::nullopt;
  }
  return Outer{*roles, side[1 - p][1]->inv, side[p][0]->positions};
}

// Traces the operand `what` ("cos" or "sin") of the rotary products. The op takes any two tables,
// so x * sin + rotate_half(x) * cos fuses as well (with the caches swapped). `half_width`: the
// operand has one value per pair, not cat(freqs, freqs).
std::optional<Trig> trace_trig(const GraphIndex& g, std::string v, const std::string& what, bool half_width, std::string& why) {
  Trig t;
  bool unsqueezed = false;
  const Node* n = g.producer_node(v);
  for (; n; n = g.producer_node(v)) {
    if (n->op_type == "Cast" || n->op_type == "Identity") {
      v = n->inputs[0];
    } else if (n->op_type == "Mul" && (g.scalar(n->inputs[0]) || g.scalar(n->inputs[1]))) {
      const bool first = g.scalar(n->inputs[0]).has_value();
      t.scale *= *g.scalar(n->inputs[first ? 0 : 1]);
      v = n->inputs[first ? 1 : 0];
    } else if (n->op_type == "Unsqueeze" && !unsqueezed) {
      const auto axes = axes_of(*n, g);
      if (!axes || axes->size() != 1) break;
      t.axis = (*axes)[0] < 0 ? (*axes)[0] + 4 : (*axes)[0];
      unsqueezed = true;
      v = n->inputs[0];
    } else {
      break;
    }
  }
  // Cos and Sin act element by element: Cos(Unsqueeze(e)) is Unsqueeze(Cos(e)) (GPT-NeoX's
  // `cat((freqs, freqs))[:, None].cos()`).
  std::string trig_argument;
  if (n && !unsqueezed && (n->op_type == "Cos" || n->op_type == "Sin")) {
    if (const Node* u = g.producer_node(n->inputs[0]); u && u->op_type == "Unsqueeze") {
      if (const auto axes = axes_of(*u, g); axes && axes->size() == 1) {
        t.axis = (*axes)[0] < 0 ? (*axes)[0] + 4 : (*axes)[0];
        unsqueezed = true;
        trig_argument = u->inputs[0];
      }
    }
  }
  if (!unsqueezed || (t.axis != 1 && t.axis != 2)) {
    why = fmt::format("the {} operand '{}' is not Unsqueeze(c, 1) or Unsqueeze(c, 2) of a (B, S, h) value", what, v);
    return std::nullopt;
  }
  if (n && n->op_type == "Gather") {
    if (int_attr(*n, "axis", 0) != 0) {
      why = fmt::format("'{}' gathers the {} table along axis {}, not its rows", n->name, what, int_attr(*n, "axis", 0));
      return std::nullopt;
    }
    t.table = trace_table(g, n->inputs[0], why);
    if (t.table.empty()) return std::nullopt;
    t.positions = n->inputs[1];
    return t;
  }
  if (!n || (n->op_type != "Cos" && n->op_type != "Sin")) {
    why = fmt::format("the {} operand '{}' is neither gathered from a constant table by position nor Cos / Sin of position frequencies", what, v);
    return std::nullopt;
  }
  t.computed = true;
  t.function = n->op_type;
  t.freqs = trig_argument.empty() ? n->inputs[0] : trig_argument;
  std::string f = t.freqs, frequencies = fmt::format("the frequencies '{}' of {} '{}'", f, n->op_type, n->name);
  if (!half_width) {
    const Node* cat = g.producer_node(t.freqs);
    const bool twice = cat && cat->op_type == "Concat" && cat->inputs.size() == 2 && cat->inputs[0] == cat->inputs[1];
    const int64_t cat_axis = twice ? int_attr(*cat, "axis", 0) : 0;
    if (!twice || (cat_axis != -1 && cat_axis != 2)) {
      why = fmt::format("the argument of {} ('{}') is not Concat(f, f) on the last axis", n->op_type, n->name);
      return std::nullopt;
    }
    f = cat->inputs[0];
    frequencies = fmt::format("the frequencies f ('{}') of Concat(f, f) '{}'", f, cat->name);
  }
  const Node* fp = g.producer_node(f);
  const auto outer = trace_outer(g, f, why);
  if (!outer) {
    why = fmt::format("{} (from {} '{}') are not position ids times a constant inv_freq (Mul, MatMul or Einsum, maybe transposed): {}", frequencies,
                      fp ? fp->op_type : "no node", fp ? fp->name : "", why);
    return std::nullopt;
  }
  if (outer->roles != std::vector<char>{'b', 's', 'i'}) {
    why = fmt::format("{} have axes ({}), not (batch, sequence, inv_freq)", frequencies, fmt::join(role_names(outer->roles), ", "));
    return std::nullopt;
  }
  t.inv_freq = outer->inv;
  t.positions = outer->positions;
  return t;
}

// The (rows, h/2) caches of a gathered table pair, scaled, in `dtype`: the first column half of
// (rows, h) tables, or (rows, h/2) tables whole (`half_width`: one value per pair).
std::optional<std::pair<Tensor, Tensor>> table_caches(const GraphIndex& g, const Trig& c, const Trig& s, int64_t h, bool half_width,
                                                      DType dtype, std::string& why) {
  const Tensor* tc = g.constant(c.table);
  const Tensor* ts = g.constant(s.table);
  const int64_t rows = tc->dim(tc->rank() - 2), width = half_width ? h / 2 : h;
  if (tc->dim(tc->rank() - 1) != width || ts->dim(ts->rank() - 1) != width || ts->dim(ts->rank() - 2) != rows) {
    why = fmt::format("the cos/sin tables {} and {} are not (max_pos, {}) both", shape_to_string(tc->shape()), shape_to_string(ts->shape()), width);
    return std::nullopt;
  }
  const std::vector<double> vc = to_doubles(*tc), vs = to_doubles(*ts);
  const int64_t half = h / 2;
  std::vector<double> oc(size_t(rows * half)), os(size_t(rows * half));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < half; ++i) {
      const size_t a = size_t(r * width + i), b = half_width ? a : size_t(r * h + i + half);
      if (vc[a] != vc[b] || vs[a] != vs[b]) {
        why = fmt::format("the {} table '{}' has different halves (row {}, column {}): not cat(freqs, freqs)", vc[a] != vc[b] ? "cos" : "sin",
                          vc[a] != vc[b] ? c.table : s.table, r, i);
        return std::nullopt;
      }
      // The product with the scale rounds as the graph's float Mul does.
      oc[size_t(r * half + i)] = double(float(vc[a]) * float(c.scale));
      os[size_t(r * half + i)] = double(float(vs[a]) * float(s.scale));
    }
  return std::pair{from_doubles(dtype, {rows, half}, oc), from_doubles(dtype, {rows, half}, os)};
}

// The cache of a computed operand for positions 0 .. kComputedPositions - 1: cos (or sin) of
// inv[i] * p with the float product torch rounds, rounded to float, then times the float scale.
Tensor computed_cache(const GraphIndex& g, const Trig& t, DType dtype) {
  const std::vector<double> inv = to_doubles(*g.constant(t.inv_freq));
  const int64_t half = int64_t(inv.size()), rows = kComputedPositions;
  std::vector<double> out(size_t(rows * half));
  for (int64_t p = 0; p < rows; ++p)
    for (int64_t i = 0; i < half; ++i) {
      const double angle = double(float(inv[size_t(i)]) * float(p));
      const float f = float(t.function == "Cos" ? std::cos(angle) : std::sin(angle));
      out[size_t(p * half + i)] = double(f * float(t.scale));
    }
  return from_doubles(dtype, {rows, half}, out);
}

}  // namespace

std::optional<Replacement> fuse(const Match& m, RewriteContext& ctx, CacheMap& caches, const Rotation& r) {
  const GraphIndex& g = ctx.index;
  const std::vector<Dim>* x = g.dims(r.x);  // known 4-D: every caller checked its dims first
  const ValueType* xt = g.type(r.x);
  if (xt->dtype != DType::Float && xt->dtype != DType::Float16)
    return ctx.refuse(fmt::format("the rotated value is {}; RotaryEmbedding takes float or float16", dtype_onnx_name(xt->dtype)));
  const Dim& hd = (*x)[3];
  if (!hd.fixed() || hd.value % 2 != 0) return ctx.refuse(fmt::format("the head size {} is not a known even size", dims_string({hd})));
  const int64_t h = hd.value, rd = r.rotary_dim ? r.rotary_dim : h;
  if (rd <= 0 || rd > h || rd % 2 != 0) return ctx.refuse(fmt::format("the rotated part has {} of {} columns", rd, h));
  std::string why;
  const auto c = trace_trig(g, r.cos, "cos", r.half_tables, why);
  if (!c) return ctx.refuse(why);
  const auto s = trace_trig(g, r.sin, "sin", r.half_tables, why);
  if (!s) return ctx.refuse(why);
  if (c->positions != s->positions) return ctx.refuse(fmt::format("cos and sin use different position ids ('{}', '{}')", c->positions, s->positions));
  if (c->axis != s->axis) return ctx.refuse("cos and sin are unsqueezed at different axes");
  if (c->computed != s->computed || (c->computed && c->freqs != s->freqs))
    return ctx.refuse("cos and sin are not computed from the same frequencies");
  // Positions: int64 (B, S) with x's batch and sequence, given (position_ids) or computed in the
  // graph (`cumsum(mask) - 1`, sliced to the new tokens).
  const std::vector<Dim>* p = g.dims(c->positions);
  const ValueType* pt = g.type(c->positions);
  const bool bnsh = c->axis == 1;
  const Dim& batch = (*x)[0];
  const Dim& seq = (*x)[bnsh ? 2 : 1];
  if (!p || !pt || pt->dtype != DType::Int64 || p->size() != 2 || !same_dim((*p)[0], batch) || !same_dim((*p)[1], seq))
    return ctx.refuse(fmt::format("the position ids '{}' are {} {}, not int64 (B, S) = {} of the rotated value {}", c->positions,
                                  pt ? dtype_onnx_name(pt->dtype) : "untyped", p ? dims_string(*p) : "of unknown shape",
                                  dims_string({batch, seq}), dims_string(*x)));
  if (c->computed && g.constant(c->inv_freq)->size() * 2 != rd)
    return ctx.refuse(fmt::format("the frequencies '{}' have {} values for {} rotated columns", c->inv_freq, g.constant(c->inv_freq)->size(), rd));
  const std::vector<Dim>* y = g.dims(r.out);
  if (!y || !same_shape(*y, *x)) return ctx.refuse("the rotation's result does not have the rotated value's shape (cos or sin broadcasts it)");
  if (!bnsh && !(*x)[2].fixed()) return ctx.refuse("x is (B, S, N, h) with an unknown head count N");

  Replacement rep;
  const std::string key = c->computed ? fmt::format("{}|{}|{}|{}|{}|{}", c->inv_freq, c->function, s->function, c->scale, s->scale, int(xt->dtype))
                                      : fmt::format("{}|{}|{}|{}|{}", c->table, s->table, c->scale, s->scale, int(xt->dtype));
  auto cached = caches.find(key);
  if (cached == caches.end()) {
    std::pair<Tensor, Tensor> tensors;
    if (c->computed) {
      tensors = {computed_cache(g, *c, xt->dtype), computed_cache(g, *s, xt->dtype)};
    } else {
      auto t = table_caches(g, *c, *s, rd, r.half_tables, xt->dtype, why);
      if (!t) return ctx.refuse(why);
      tensors = std::move(*t);
    }
    const Caches names{ctx.names.value("rotary_cos_cache"), ctx.names.value("rotary_sin_cache")};
    rep.initializers.push_back({names.cos, std::move(tensors.first)});
    rep.initializers.push_back({names.sin, std::move(tensors.second)});
    cached = caches.emplace(key, names).first;
  }
  const std::string name = ctx.fused_name(m, "RotaryEmbedding");
  const std::string& out = r.out;
  std::vector<Attribute> attrs = {build::attr("interleaved", int64_t(r.interleaved))};
  if (rd < h) {
    if (bnsh && !(*x)[1].fixed())
      return ctx.refuse(fmt::format("the head count of '{}' is not known; RotaryEmbedding needs num_heads with rotary_embedding_dim", r.x));
    attrs.push_back(build::attr("rotary_embedding_dim", rd));
  }
  if (bnsh) {
    if ((*x)[1].fixed()) attrs.push_back(build::attr("num_heads", (*x)[1].value));
    rep.nodes.push_back(make_node("RotaryEmbedding", "com.microsoft", {r.x, c->positions, cached->second.cos, cached->second.sin}, {out},
                                  attrs, name));
    return rep;
  }
  // (B, S, N, h): the op's 3-D form on (B, S, N*h), reshaped back.
  const int64_t N = (*x)[2].value;
  attrs.push_back(build::attr("num_heads", N));
  const std::string flat_shape = ctx.names.value("rotary_flat_shape"), head_shape = ctx.names.value("rotary_head_shape");
  const std::string flat = ctx.names.value(out + "_flat"), rotated = ctx.names.value(out + "_rotated");
  rep.initializers.push_back({flat_shape, Tensor::from_vector<int64_t>({3}, {0, 0, N * h})});
  rep.initializers.push_back({head_shape, Tensor::from_vector<int64_t>({4}, {0, 0, N, h})});
  rep.nodes.push_back(make_node("Reshape", "", {r.x, flat_shape}, {flat}, {}, ctx.names.node(name + "/flatten")));
  rep.nodes.push_back(make_node("RotaryEmbedding", "com.microsoft", {flat, c->positions, cached->second.cos, cached->second.sin}, {rotated},
                                attrs, name));
  rep.nodes.push_back(make_node("Reshape", "", {rotated, head_shape}, {out}, {}, ctx.names.node(name + "/unflatten")));
  return rep;
}

}  // namespace refeval::optimize::rotary

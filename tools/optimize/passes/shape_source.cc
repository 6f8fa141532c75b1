// The shape of attention scores read from the graph inputs. `Shape(scores)` ties whatever reads it
// to the computation of `scores`: MixFormer sizes its causal mask by `scores.shape[-2:]`, so the
// mask depends on the very products the attention fusion replaces, and nothing fuses. When the
// symbolic shapes (symbolic_shapes.h) know each dim read as a graph input's dim, or as a sum of
// them ("past + seq"), the Shape reads those inputs instead:
//   Shape(scores) [B, N, seq, past + seq]
//     -> Concat(Gather(Shape(input_ids), [0]), [N], Gather(Shape(input_ids), [1]),
//               Gather(Shape(past_key), [2]) + Gather(Shape(input_ids), [1]))
// Fixed dims become constants. A Shape of a graph input stays, as does one whose dims are not all
// known that way (nothing is guessed). The value is the same for every input the graph accepts:
// two inputs' dims named alike are equal by the model's own declaration. Only scores (a value
// reaching a Softmax through elementwise operators) are read this way: a Reshape target read from
// a hidden state's Shape is already what the fusions read (reshape-fusion), and rewriting it would
// only add nodes.
#include <algorithm>
#include <set>

#include "../pass.h"
#include "../symbolic_shapes.h"
#include "refeval/builder.h"

namespace refeval::optimize {
namespace {

// Where a dim comes from: a graph input's axis.
struct Source {
  std::string input;
  int64_t axis = 0;
};

class Sources {
 public:
  Sources(const Graph& g, const Inference* inference) : inference_(inference) {
    std::set<std::string> initialized;
    for (const Initializer& i : g.initializers) initialized.insert(i.name);
    for (const ValueInfo& v : g.inputs) {
      if (initialized.count(v.name) || v.type.kind != ValueType::Kind::Tensor || !v.type.has_shape) continue;
      for (size_t a = 0; a < v.type.dims.size(); ++a) dims_.push_back({v.type.dims[a], {v.name, int64_t(a)}});
    }
  }
  // An input's axis whose dim equals `d`.
  std::optional<Source> equal(const Dim& d) const {
    for (const auto& [dim, source] : dims_)
      if (!dim.fixed() && dims_equal(dim, d, inference_)) return source;
    return std::nullopt;
  }
  // An input's axis whose dim is exactly the symbol `s`.
  std::optional<Source> symbol(const std::string& s) const { return equal(Dim{-1, s}); }

 private:
  const Inference* inference_;
  std::vector<std::pair<Dim, Source>> dims_;
};

// One element of the rewritten shape: a constant, an input's axis, or a sum of input axes
// times integers plus a constant.
struct Term {
  Source source;
  int64_t times = 1;
};
struct Element {
  std::vector<Term> terms;  // empty: the constant alone
  int64_t constant = 0;
};

std::optional<Element> element(const Dim& d, const Sources& sources, const Inference* inference) {
  if (d.fixed()) return Element{{}, d.value};
  if (auto s = sources.equal(d)) return Element{{{*s, 1}}, 0};
  const auto terms = linear_terms(d, inference);
  if (!terms) return std::nullopt;
  Element e;
  for (const auto& [symbol, c] : *terms) {
    if (symbol.empty()) {
      e.constant = c;
      continue;
    }
    const auto s = sources.symbol(symbol);
    if (!s) return std::nullopt;
    e.terms.push_back({*s, c});
  }
  return e;
}

// `value` reaches a Softmax through elementwise operators (a mask or a scale added on the way).
bool scores(const GraphIndex& index, const std::string& value, int depth = 0) {
  static const std::set<std::string> elementwise = {"Add", "Sub", "Mul", "Div", "Where", "Cast", "Neg"};
  if (depth > 6) return false;
  for (const int c : index.consumers(value)) {
    const Node& n = index.graph().nodes[size_t(c)];
    if (!n.domain.empty()) continue;
    if (n.op_type == "Softmax" || n.op_type == "LogSoftmax") return true;
    if (elementwise.count(n.op_type) && scores(index, n.outputs[0], depth + 1)) return true;
  }
  return false;
}

// The dims a Shape node reads: its input's dims from `start` to `end` (opset 15).
std::optional<std::vector<Dim>> read_dims(const Node& shape, const GraphIndex& index) {
  const std::vector<Dim>* dims = index.dims(shape.inputs.at(0));
  if (!dims) return std::nullopt;
  const int64_t rank = int64_t(dims->size());
  const auto bound = [&](const char* name, int64_t fallback) {
    const Attribute* a = shape.find_attribute(name);
    int64_t v = a ? a->i : fallback;
    if (v < 0) v += rank;
    return std::clamp<int64_t>(v, 0, rank);
  };
  const int64_t start = bound("start", 0), end = bound("end", rank);
  if (start >= end) return std::vector<Dim>{};
  return std::vector<Dim>(dims->begin() + start, dims->begin() + end);
}

// Writes the nodes computing `elements` as a 1-D int64 tensor named `out`.
class Emitter {
 public:
  Emitter(const std::string& base, NameGen& names, std::vector<Initializer>& constants) : base_(base), names_(names), constants_(constants) {}

  std::vector<Node> emit(const std::vector<Element>& elements, const std::string& out) {
    std::vector<std::string> parts;
    // Consecutive elements that are each one input axis read as one Gather of that input's shape.
    for (size_t i = 0; i < elements.size();) {
      const Element& e = elements[i];
      if (e.terms.empty()) {
        std::vector<int64_t> values;
        for (; i < elements.size() && elements[i].terms.empty(); ++i) values.push_back(elements[i].constant);
        parts.push_back(constant(values));
      } else if (single(e)) {
        std::vector<int64_t> axes;
        const std::string input = e.terms[0].source.input;
        for (; i < elements.size() && single(elements[i]) && elements[i].terms[0].source.input == input; ++i)
          axes.push_back(elements[i].terms[0].source.axis);
        parts.push_back(gather(input, axes));
      } else {
        parts.push_back(sum(e));
        ++i;
      }
    }
    // One part is the shape itself: its node (or constant) writes the output under the Shape's name.
    if (parts.size() == 1 && !nodes_.empty() && nodes_.back().outputs[0] == parts[0]) {
      nodes_.back().outputs[0] = out;
    } else if (parts.size() == 1) {
      constants_.back().name = out;
    } else {
      nodes_.push_back(build::node("Concat", parts, {out}, {build::attr("axis", int64_t(0))}, names_.node(base_ + "/Concat")));
    }
    return std::move(nodes_);
  }

 private:
  static bool single(const Element& e) { return e.terms.size() == 1 && e.terms[0].times == 1 && e.constant == 0; }

  std::string constant(const std::vector<int64_t>& values) {
    const std::string name = names_.value(base_ + "/dims");
    constants_.push_back({name, Tensor::from_vector<int64_t>(Shape{int64_t(values.size())}, values)});
    return name;
  }
  std::string shape_of(const std::string& input) {
    auto it = shapes_.find(input);
    if (it != shapes_.end()) return it->second;
    const std::string out = names_.value(base_ + "/" + input + "_shape");
    nodes_.push_back(build::node("Shape", {input}, {out}, {}, names_.node(base_ + "/Shape")));
    return shapes_[input] = out;
  }
  std::string gather(const std::string& input, const std::vector<int64_t>& axes) {
    const std::string out = names_.value(base_ + "/" + input + "_dims");
    nodes_.push_back(build::node("Gather", {shape_of(input), constant(axes)}, {out}, {build::attr("axis", int64_t(0))}, names_.node(base_ + "/Gather")));
    return out;
  }
  std::string binary(const char* op, const std::string& a, const std::string& b) {
    const std::string out = names_.value(base_ + "/" + op);
    nodes_.push_back(build::node(op, {a, b}, {out}, {}, names_.node(base_ + "/" + op)));
    return out;
  }
  std::string sum(const Element& e) {
    std::string total;
    for (const Term& t : e.terms) {
      std::string v = gather(t.source.input, {t.source.axis});
      if (t.times != 1) v = binary("Mul", v, constant({t.times}));
      total = total.empty() ? v : binary("Add", total, v);
    }
    return e.constant == 0 ? total : binary("Add", total, constant({e.constant}));
  }

  std::string base_;
  NameGen& names_;
  std::vector<Initializer>& constants_;
  std::vector<Node> nodes_;
  std::map<std::string, std::string> shapes_;
};

}  // namespace

Pass shape_source_pass() {
  return {"shape-source", "Read scores' shape from graph inputs", Level::Extended, [](Model& m, PassContext& ctx) {
            Graph& g = m.graph;
            const GraphIndex index(g, ctx.inference);
            const Sources sources(g, ctx.inference);
            NameGen names(g);
            // The replacements first, while the index still sees the graph; then the node list.
            std::map<size_t, std::vector<Node>> replaced;
            std::vector<Initializer> constants;
            for (size_t i = 0; i < g.nodes.size(); ++i) {
              const Node& n = g.nodes[i];
              // A Shape of scores computed by a node (not of a graph input or a constant).
              if (n.op_type != "Shape" || !n.domain.empty() || n.inputs.empty() || index.producer(n.inputs[0]) < 0 ||
                  !scores(index, n.inputs[0]))
                continue;
              const auto dims = read_dims(n, index);
              if (!dims || dims->empty()) continue;
              std::vector<Element> elements;
              for (const Dim& d : *dims) {
                auto e = element(d, sources, ctx.inference);
                if (!e) break;
                elements.push_back(*e);
              }
              if (elements.size() != dims->size()) continue;
              replaced[i] = Emitter(n.name.empty() ? n.outputs[0] : n.name, names, constants).emit(elements, n.outputs[0]);
            }
            std::vector<Node> nodes;
            for (size_t i = 0; i < g.nodes.size(); ++i) {
              auto it = replaced.find(i);
              if (it == replaced.end()) nodes.push_back(std::move(g.nodes[i]));
              else for (Node& made : it->second) nodes.push_back(std::move(made));
            }
            g.nodes = std::move(nodes);
            for (Initializer& c : constants) g.initializers.push_back(std::move(c));
            return int(replaced.size());
          }};
}

}  // namespace refeval::optimize

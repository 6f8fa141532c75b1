// The normalisation and activation fusions on every form the exporters write (LayerNorm and
// RMSNorm decompositions, the residual Add before them, SiLU) and on the look-alikes that must stay
// as they are, with the reason --explain gives. Every result is checked equivalent to the
// original with the evaluator.
#include <doctest/doctest.h>

#include <algorithm>

#include <fmt/format.h>

#include "optimize_test_util.h"
#include "shape_inference.h"

using namespace refeval;
using namespace refeval::build;
using refeval::testing::count_ops;
using refeval::testing::ramp;

namespace {

constexpr int64_t kH = 16;


Tensor ramp16(Shape shape, float start, float step) {
  std::vector<float16> v(size_t(shape_size(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = float16(start + step * float(i % 23));
  return Tensor::from_vector<float16>(std::move(shape), v);
}

// How a decomposition is written.
struct Form {
  bool layer_norm = false;   // (x - mean) / std * gamma + beta, else RMSNorm x / rms * gamma
  bool pow = true;           // the square as Pow(v, 2), else v * v
  int division = 0;          // 0: Div(v, s); 1: v * Div(1, s); 2: v * Reciprocal(s)
  bool gamma_first = false;  // Mul(gamma, n), Add(beta, .)
  int cast = 0;              // 0: none; 1: Cast to float, normalise, Cast back, gamma; 2: ..., gamma, Cast back
  bool fp16 = false;         // x is float16 (the model casts its float input)
  bool dynamic = true;       // batch and sequence symbolic
  bool axes_input = true;    // ReduceMean axes as an input (opset 18), else an attribute (opset 13)
  int64_t axis = -1;         // the ReduceMeans' axis
  bool beta = true;          // LayerNorm: with the bias Add
  bool eps_outside = false;  // sqrt(mean) + eps
  bool mean_of_x = false;    // RMSNorm: sqrt(mean(x) + eps)
  Shape gamma_shape = {kH};
  float eps = 1e-5f;
};

std::string describe(const Form& f) {
  return fmt::format("{} pow={} division={} gamma_first={} cast={} fp16={} dynamic={} axes_input={} beta={}",
                     f.layer_norm ? "layer-norm" : "rms-norm", f.pow, f.division, f.gamma_first, f.cast, f.fp16, f.dynamic,
                     f.axes_input, f.beta);
}

Model norm_model(const Form& f) {
  const DType xt = f.fp16 ? DType::Float16 : DType::Float;
  std::vector<Node> nodes;
  std::vector<Initializer> inits = {{"eps", Tensor::scalar<float>(f.eps)}, {"two", Tensor::scalar<float>(2)},
                                    {"one", Tensor::scalar<float>(1)}};
  auto mean = [&](const std::string& in, const std::string& out) {
    if (f.axes_input)
      nodes.push_back(node("ReduceMean", {in, "axes"}, {out}));
    else
      nodes.push_back(node("ReduceMean", {in}, {out}, {attr("axes", std::vector<int64_t>{f.axis})}));
  };
  if (f.axes_input) inits.push_back({"axes", Tensor::from_vector<int64_t>({1}, {f.axis})});
  if (f.fp16) nodes.push_back(node("Cast", {"x_in"}, {"x"}, {attr("to", int64_t(DType::Float16))}));
  std::string xf = "x";
  if (f.cast) nodes.push_back(node("Cast", {"x"}, {"xf"}, {attr("to", int64_t(DType::Float))})), xf = "xf";
  std::string v = xf;
  if (f.layer_norm) {
    mean(xf, "mu");
    nodes.push_back(node("Sub", {xf, "mu"}, {"d"}));
    v = "d";
  }
  if (f.mean_of_x) {
    mean(v, "ms");
  } else {
    nodes.push_back(f.pow ? node("Pow", {v, "two"}, {"sq"}) : node("Mul", {v, v}, {"sq"}));
    mean("sq", "ms");
  }
  if (f.eps_outside) {
    nodes.push_back(node("Sqrt", {"ms"}, {"r"}, {}, "/norm/Sqrt"));
    nodes.push_back(node("Add", {"r", "eps"}, {"s"}));
  } else {
    nodes.push_back(node("Add", {"ms", "eps"}, {"ve"}));
    nodes.push_back(node("Sqrt", {"ve"}, {"s"}, {}, "/norm/Sqrt"));
  }
  if (f.division == 0) {
    nodes.push_back(node("Div", {v, "s"}, {"n"}));
  } else {
    nodes.push_back(f.division == 1 ? node("Div", {"one", "s"}, {"inv"}) : node("Reciprocal", {"s"}, {"inv"}));
    nodes.push_back(node("Mul", {v, "inv"}, {"n"}));
  }
  // gamma and beta in the type of the Mul they meet: x's after the Cast back, float before it.
  const bool float_affine = !f.fp16 || f.cast == 2;
  auto affine = [&](const std::string& in, const std::string& out) {
    inits.push_back({"gamma", float_affine ? ramp(f.gamma_shape, 0.5f, 0.1f) : ramp16(f.gamma_shape, 0.5f, 0.1f)});
    const std::string g = f.layer_norm && f.beta ? "g" : out;
    nodes.push_back(node("Mul", f.gamma_first ? std::vector<std::string>{"gamma", in} : std::vector<std::string>{in, "gamma"}, {g}));
    if (f.layer_norm && f.beta) {
      inits.push_back({"beta", float_affine ? ramp({kH}, -0.3f, 0.05f) : ramp16({kH}, -0.3f, 0.05f)});
      nodes.push_back(node("Add", f.gamma_first ? std::vector<std::string>{"beta", g} : std::vector<std::string>{g, "beta"}, {out}));
    }
  };
  const Attribute back = attr("to", int64_t(xt));
  if (f.cast == 1) {
    nodes.push_back(node("Cast", {"n"}, {"nc"}, {back}));
    affine("nc", "y");
  } else if (f.cast == 2) {
    affine("n", "yf");
    nodes.push_back(node("Cast", {"yf"}, {"y"}, {back}));
  } else {
    affine("n", "y");
  }
  const std::vector<DimSpec> dims = f.dynamic ? std::vector<DimSpec>{"batch", "seq", kH} : std::vector<DimSpec>{2, 3, kH};
  return model(graph("norm", nodes, {tensor_info(f.fp16 ? "x_in" : "x", DType::Float, dims)}, {tensor_info("y", xt, dims)}, inits),
               {{"", f.axes_input ? 18 : 13}});
}

optimize::Pass pass_named(const std::string& name) {
  for (optimize::Pass p : {optimize::layer_norm_pass(), optimize::simplified_layer_norm_pass(), optimize::skip_layer_norm_pass(),
                           optimize::skip_simplified_layer_norm_pass(), optimize::quick_gelu_pass()})
    if (p.name == name) return p;
  FAIL("no pass " << name);
  return {};
}

// Runs `passes` in the order given (as the optimizer's extended level does, on one inference) and
// returns the model; with `explain`, collects the "not fused" lines.
Model apply(Model m, const std::vector<std::string>& passes, optimize::Explain* explain = nullptr) {
  const optimize::Inference inference = optimize::infer(m);
  optimize::PassContext ctx{Registry::builtin(), &inference, explain};
  for (const std::string& name : passes) pass_named(name).run(m, ctx);
  for (const Node& n : m.graph.nodes)
    if (n.domain == "com.microsoft") m.opsets["com.microsoft"] = 1;
  return m;
}

// Applies `passes` and checks the result equivalent within `tolerance` (float16 rounds where the
// decomposition does and the fused operator does not).
Model run(const Model& m, const std::vector<std::string>& passes, double tolerance = 1e-5) {
  Model out = apply(m, passes);
  fusion::CheckOptions check;
  check.repeat = 1;
  check.tolerance.atol = tolerance;
  check.tolerance.rtol = std::max(tolerance, 1e-3);
  const fusion::FusionReport r = optimize::verify(m, out, Registry::builtin(), testing::ramp_feeds(m), check);
  CHECK_MESSAGE(r.equivalent(), "the optimized model differs from the original");
  return out;
}

// The --explain lines of the passes.
std::vector<std::string> explain(const Model& m, const std::vector<std::string>& passes) {
  optimize::Explain e;
  apply(m, passes, &e);
  return e.not_fused;
}

bool has_line(const std::vector<std::string>& lines, const std::string& pass, const std::string& phrase) {
  INFO("explain: " << fmt::format("{}", fmt::join(lines, " | ")));
  const bool found = std::any_of(lines.begin(), lines.end(), [&](const std::string& l) {
    return l.rfind("not fused: " + pass + " at ", 0) == 0 && l.find(phrase) != std::string::npos;
  });
  CHECK_MESSAGE(found, "no line of " << pass << " with: " << phrase);
  return found;
}

const Node* find_op(const Model& m, const std::string& op) {
  auto it = std::find_if(m.graph.nodes.begin(), m.graph.nodes.end(), [&](const Node& n) { return n.op_type == op; });
  return it == m.graph.nodes.end() ? nullptr : &*it;
}

}  // namespace

TEST_CASE("simplified-layer-norm: RMSNorm in every form becomes one SimplifiedLayerNormalization reading x") {
  int cases = 0;
  for (bool pow : {true, false})
    for (int division : {0, 1, 2})
      for (bool gamma_first : {false, true})
        for (bool dynamic : {true, false})
          for (bool axes_input : {true, false})
            for (int64_t axis : {int64_t(-1), int64_t(2)}) {
              Form f;
              f.pow = pow, f.division = division, f.gamma_first = gamma_first, f.dynamic = dynamic, f.axes_input = axes_input, f.axis = axis;
              CAPTURE(describe(f));
              const Model out = run(norm_model(f), {"simplified-layer-norm"});
              REQUIRE(out.graph.nodes.size() == 1);
              const Node& n = out.graph.nodes[0];
              CHECK(n.op_type == "SimplifiedLayerNormalization");
              CHECK(n.domain == "");
              CHECK(n.inputs == std::vector<std::string>{"x", "gamma"});
              CHECK(n.find_attribute("axis")->i == -1);
              CHECK(n.find_attribute("epsilon")->f == doctest::Approx(1e-5f));
              ++cases;
            }
  CHECK(cases == 96);
}

TEST_CASE("simplified-layer-norm: the Llama form, Cast to float and back around the statistics, float16 and float32") {
  for (bool fp16 : {true, false})
    for (int division : {0, 2})
      for (bool pow : {true, false}) {
        Form f;
        f.cast = 1, f.fp16 = fp16, f.division = division, f.pow = pow, f.gamma_first = true;
        CAPTURE(describe(f));
        const Model out = run(norm_model(f), {"simplified-layer-norm"}, fp16 ? 1e-2 : 1e-5);
        const Node* n = find_op(out, "SimplifiedLayerNormalization");
        REQUIRE(n);
        CHECK(n->inputs[0] == "x");  // the original x, not its float Cast
        CHECK(count_ops(out, "Cast") == (fp16 ? 1 : 0));  // only the model's own input Cast is left
        CHECK(out.graph.nodes.size() == (fp16 ? 2u : 1u));
      }
}

TEST_CASE("simplified-layer-norm: gamma before the Cast back (float gamma, float16 x) fuses the normalisation between the Casts") {
  Form f;
  f.cast = 2, f.fp16 = true;
  const Model out = run(norm_model(f), {"simplified-layer-norm"}, 1e-2);
  const Node* n = find_op(out, "SimplifiedLayerNormalization");
  REQUIRE(n);
  CHECK(n->inputs[0] == "xf");  // in float, as the model computes it: ORT's kernel takes one type
  CHECK(count_ops(out, "Cast") == 3);
  CHECK(out.graph.nodes.size() == 4);
  f.fp16 = false;  // float32 with real (same-type) Casts: the same
  const Model same = run(norm_model(f), {"simplified-layer-norm"});
  CHECK(count_ops(same, "SimplifiedLayerNormalization") == 1);
  const Model all = testing::optimized(norm_model(f));  // every pass: the basic level drops the no-op Cast in first
  CHECK(count_ops(all, "SimplifiedLayerNormalization") == 1);
  CHECK(find_op(all, "SimplifiedLayerNormalization")->inputs[0] == "x");
}

TEST_CASE("simplified-layer-norm: look-alikes and refusals stay unfused, equivalent, with the reason under --explain") {
  struct Trap {
    std::string what;
    Form form;
    std::string phrase;
  };
  std::vector<Trap> traps;
  {
    Form f;
    f.eps_outside = true;
    traps.push_back({"epsilon outside the square root", f, "epsilon is added outside the square root"});
    f.pow = false;
    traps.push_back({"epsilon outside the square root, x*x", f, "epsilon is added outside the square root"});
  }
  for (int division : {0, 1, 2}) {
    Form f;
    f.mean_of_x = true, f.division = division;
    traps.push_back({"the mean of x, not of its square", f, "the square root is of the mean of x, not of the mean of its square"});
  }
  {
    Form f;
    f.axis = 0;
    traps.push_back({"mean over the first axis", f, "ReduceMean 'ms' reduces axis 0, not the last axis"});
    f.axis = 1;
    f.axes_input = false;
    traps.push_back({"mean over the middle axis (attribute)", f, "ReduceMean 'ms' reduces axis 1, not the last axis"});
  }
  {
    Form f;
    f.gamma_shape = {1, kH};
    traps.push_back({"a 2-D gamma", f, "gamma 'gamma' has shape (1, 16), not (16,)"});
    f.gamma_shape = {kH};
    f.eps = 0.5f;
    traps.push_back({"epsilon too large", f, "epsilon 0.5 is not in (0, 0.01]"});
  }
  for (const Trap& t : traps) {
    CAPTURE(t.what);
    const Model m = norm_model(t.form);
    const Model out = run(m, {"simplified-layer-norm"});
    CHECK(count_ops(out, "SimplifiedLayerNormalization") == 0);
    CHECK(out.graph.nodes.size() == m.graph.nodes.size());
    const std::vector<std::string> lines = explain(m, {"simplified-layer-norm"});
    CHECK(has_line(lines, "simplified-layer-norm", "'/norm/Sqrt': " + t.phrase));
  }
}

TEST_CASE("simplified-layer-norm: an intermediate read elsewhere blocks the fusion and is named") {
  Model m = norm_model(Form{});
  m.graph.outputs.push_back(tensor_info("ms", DType::Float, {"batch", "seq", 1}));
  CHECK(count_ops(run(m, {"simplified-layer-norm"}), "SimplifiedLayerNormalization") == 0);
  CHECK(has_line(explain(m, {"simplified-layer-norm"}), "simplified-layer-norm", "the intermediate 'ms'"));
}

TEST_CASE("layer-norm: the decomposition in every form, with and without beta, becomes one LayerNormalization") {
  int cases = 0;
  for (bool pow : {true, false})
    for (int division : {0, 1, 2})
      for (bool gamma_first : {false, true})
        for (bool beta : {true, false})
          for (bool dynamic : {true, false}) {
            Form f;
            f.layer_norm = true, f.pow = pow, f.division = division, f.gamma_first = gamma_first, f.beta = beta, f.dynamic = dynamic;
            f.axes_input = division != 1;  // attribute axes (opset 13) too
            CAPTURE(describe(f));
            const Model out = run(norm_model(f), {"layer-norm"});
            REQUIRE(out.graph.nodes.size() == 1);
            const Node& n = out.graph.nodes[0];
            CHECK(n.op_type == "LayerNormalization");
            CHECK(n.inputs == (beta ? std::vector<std::string>{"x", "gamma", "beta"} : std::vector<std::string>{"x", "gamma"}));
            CHECK(n.find_attribute("epsilon")->f == doctest::Approx(1e-5f));
            ++cases;
          }
  CHECK(cases == 48);
}

TEST_CASE("layer-norm: Casts to float and back around the decomposition") {
  for (bool fp16 : {true, false})
    for (bool beta : {true, false}) {
      Form f;
      f.layer_norm = true, f.cast = 1, f.fp16 = fp16, f.beta = beta, f.division = 2;
      CAPTURE(describe(f));
      const Model out = run(norm_model(f), {"layer-norm"}, fp16 ? 1e-2 : 1e-5);
      const Node* n = find_op(out, "LayerNormalization");
      REQUIRE(n);
      CHECK(n->inputs[0] == "x");
      CHECK(out.graph.nodes.size() == (fp16 ? 2u : 1u));
    }
}

TEST_CASE("layer-norm: look-alikes stay unfused and equivalent, with the reason under --explain") {
  Form outside;
  outside.layer_norm = true, outside.eps_outside = true;
  Form first_axis;
  first_axis.layer_norm = true, first_axis.axis = 0;
  for (const auto& [form, phrase] : std::vector<std::pair<Form, std::string>>{
           {outside, "epsilon is added outside the square root"},
           {first_axis, "ReduceMean '/ReduceMean' reduces axis 0, not the last axis"}}) {
    Model m = norm_model(form);
    for (Node& n : m.graph.nodes)
      if (n.op_type == "ReduceMean" && n.name.empty()) n.name = n.inputs[0] == "x" ? "/ReduceMean" : "/ReduceMean_1";
    const Model out = run(m, {"layer-norm"});
    CHECK(count_ops(out, "LayerNormalization") == 0);
    CHECK(out.graph.nodes.size() == m.graph.nodes.size());
    const std::vector<std::string> lines = explain(m, {"layer-norm"});
    CHECK(has_line(lines, "layer-norm", "'/norm/Sqrt': " + phrase));
    optimize::OptimizeOptions o;  // the whole optimizer, as `refeval optimize --explain` runs it
    o.explain = true;
    const optimize::OptimizeResult all = optimize::optimize(m, Registry::builtin(), o);
    CHECK(count_ops(all.model, "LayerNormalization") == 0);
    CHECK(has_line(all.explain.not_fused, "layer-norm", "'/norm/Sqrt': " + phrase));
  }
}

TEST_CASE("layer-norm: without beta it does not fuse short of a bias Add that follows") {
  Form f;
  f.layer_norm = true;
  const Model out = run(norm_model(f), {"layer-norm"});
  REQUIRE(out.graph.nodes.size() == 1);
  CHECK(out.graph.nodes[0].inputs.size() == 3);  // the Add's beta is in, not left after a beta-less fusion
}

namespace {

// a + b, then an RMSNorm (the decomposition, or SimplifiedLayerNormalization), then the next
// residual Add reading the sum when `residual`.
Model residual_rms(bool decomposed, bool residual, bool constant_skip, std::vector<DimSpec> skip_dims) {
  std::vector<Node> nodes = {node("Add", {"a", constant_skip ? "c" : "b"}, {"sum"})};
  std::vector<Initializer> inits = {{"gamma", ramp({kH}, 0.5f, 0.1f)}, {"c", ramp({3, kH}, 0, 0.1f)},
                                    {"eps", Tensor::scalar<float>(1e-6f)}, {"axes", Tensor::from_vector<int64_t>({1}, {-1})}};
  if (decomposed) {
    for (Node n : {node("Mul", {"sum", "sum"}, {"sq"}), node("ReduceMean", {"sq", "axes"}, {"ms"}), node("Add", {"ms", "eps"}, {"ve"}),
                   node("Sqrt", {"ve"}, {"s"}), node("Reciprocal", {"s"}, {"inv"}), node("Mul", {"sum", "inv"}, {"n"}),
                   node("Mul", {"gamma", "n"}, {"y"})})
      nodes.push_back(n);
  } else {
    nodes.push_back(node("SimplifiedLayerNormalization", {"sum", "gamma"}, {"y"}, {attr("epsilon", 1e-6f), attr("axis", int64_t(-1))}));
  }
  std::vector<ValueInfo> outputs = {tensor_info("y", DType::Float, {"batch", 3, kH})};
  if (residual) nodes.push_back(node("Add", {"sum", "y"}, {"next"})), outputs.push_back(tensor_info("next", DType::Float, {"batch", 3, kH}));
  return model(graph("skip", nodes, {tensor_info("a", DType::Float, {"batch", 3, kH}), tensor_info("b", DType::Float, skip_dims)}, outputs,
                     inits),
               {{"", 18}});
}

}  // namespace

TEST_CASE("skip-simplified-layer-norm: the residual Add and RMSNorm; the sum becomes output 3 when read again") {
  for (bool decomposed : {false, true})
    for (bool residual : {false, true}) {
      CAPTURE(decomposed);
      CAPTURE(residual);
      const Model out = run(residual_rms(decomposed, residual, false, {"batch", 3, kH}), {"simplified-layer-norm", "skip-simplified-layer-norm"});
      const Node* n = find_op(out, "SkipSimplifiedLayerNormalization");
      REQUIRE(n);
      CHECK(n->domain == "com.microsoft");
      CHECK(n->inputs == std::vector<std::string>{"a", "b", "gamma"});
      CHECK(n->find_attribute("epsilon")->f == doctest::Approx(1e-6f));  // not the Skip op's default 1e-12
      CHECK(n->outputs == (residual ? std::vector<std::string>{"y", "", "", "sum"} : std::vector<std::string>{"y"}));
      CHECK(out.graph.nodes.size() == (residual ? 2u : 1u));
      CHECK(out.opsets.at("com.microsoft") == 1);
    }
}

TEST_CASE("skip-simplified-layer-norm: skip shapes (S, H) and (1, S, H) fuse, a constant (S, H) skip too; a 1-D constant does not, and says why") {
  for (const std::vector<DimSpec>& skip : {std::vector<DimSpec>{3, kH}, std::vector<DimSpec>{1, 3, kH}}) {
    const Model out = run(residual_rms(false, true, false, skip), {"skip-simplified-layer-norm"});
    CHECK(count_ops(out, "SkipSimplifiedLayerNormalization") == 1);
  }
  // Position embeddings folded into a constant when the export's shapes are fixed.
  CHECK(count_ops(run(residual_rms(false, false, true, {"batch", 3, kH}), {"skip-simplified-layer-norm"}), "SkipSimplifiedLayerNormalization") == 1);
  Model m = residual_rms(false, false, true, {"batch", 3, kH});
  for (Initializer& i : m.graph.initializers)
    if (i.name == "c") i.value = ramp({kH}, 0, 0.1f);
  CHECK(count_ops(run(m, {"skip-simplified-layer-norm"}), "SkipSimplifiedLayerNormalization") == 0);
  CHECK(has_line(explain(m, {"skip-simplified-layer-norm"}), "skip-simplified-layer-norm", "adds the 1-D constant 'c', a bias, not a residual"));
}

TEST_CASE("skip-layer-norm: LayerNormalization without beta fuses too") {
  const Model m = model(graph("skip",
                              {node("Add", {"a", "b"}, {"sum"}), node("LayerNormalization", {"sum", "gamma"}, {"y"}, {attr("epsilon", 1e-5f)})},
                              {tensor_info("a", DType::Float, {"batch", "seq", kH}), tensor_info("b", DType::Float, {"batch", "seq", kH})},
                              {tensor_info("y", DType::Float, {"batch", "seq", kH})}, {{"gamma", ramp({kH}, 0.5f, 0.1f)}}),
                        {{"", 17}});
  const Model out = run(m, {"skip-layer-norm"});
  const Node* n = find_op(out, "SkipLayerNormalization");
  REQUIRE(n);
  CHECK(n->inputs == std::vector<std::string>{"a", "b", "gamma"});
}

namespace {

// y = x * Sigmoid(s) with the product's operands in either order; s is x, alpha * x, or another value.
Model silu(const std::string& sigmoid_input, bool sigmoid_first, bool expose_sigmoid = false) {
  std::vector<Node> nodes;
  if (sigmoid_input == "ax") nodes.push_back(node("Mul", {"alpha", "x"}, {"ax"}));
  nodes.push_back(node("Sigmoid", {sigmoid_input}, {"sig"}, {}, "/mlp/Sigmoid"));
  nodes.push_back(node("Mul", sigmoid_first ? std::vector<std::string>{"sig", "x"} : std::vector<std::string>{"x", "sig"}, {"y"}));
  std::vector<ValueInfo> outputs = {tensor_info("y", DType::Float, {"batch", "seq", 8})};
  if (expose_sigmoid) outputs.push_back(tensor_info("sig", DType::Float, {"batch", "seq", 8}));
  return model(graph("silu", nodes, {tensor_info("x", DType::Float, {"batch", "seq", 8}), tensor_info("g", DType::Float, {"batch", "seq", 8})},
                     outputs, {{"alpha", Tensor::scalar<float>(1.702f)}}),
               {{"", 17}});
}

}  // namespace

TEST_CASE("quick-gelu: SiLU x * Sigmoid(x) in either order becomes QuickGelu(alpha 1); x * Sigmoid(1.702 x) keeps its alpha") {
  for (bool sigmoid_first : {false, true}) {
    const Model out = run(silu("x", sigmoid_first), {"quick-gelu"});
    REQUIRE(out.graph.nodes.size() == 1);
    const Node& n = out.graph.nodes[0];
    CHECK(n.op_type == "QuickGelu");
    CHECK(n.domain == "com.microsoft");
    CHECK(n.inputs == std::vector<std::string>{"x"});
    CHECK(n.find_attribute("alpha")->f == 1.0f);
    const Model scaled = run(silu("ax", sigmoid_first), {"quick-gelu"});
    REQUIRE(scaled.graph.nodes.size() == 1);
    CHECK(scaled.graph.nodes[0].find_attribute("alpha")->f == doctest::Approx(1.702f));
  }
}

TEST_CASE("quick-gelu: a gate x * Sigmoid(g) and a Sigmoid read elsewhere stay, with the reason under --explain") {
  const Model gate = silu("g", false);
  CHECK(count_ops(run(gate, {"quick-gelu"}), "QuickGelu") == 0);
  CHECK(has_line(explain(gate, {"quick-gelu"}), "quick-gelu", "'/mlp/Sigmoid': the Sigmoid reads 'g', not the multiplied 'x'"));
  const Model exposed = silu("x", true, true);
  CHECK(count_ops(run(exposed, {"quick-gelu"}), "QuickGelu") == 0);
  CHECK(has_line(explain(exposed, {"quick-gelu"}), "quick-gelu", "'/mlp/Sigmoid': the intermediate 'sig'"));
}

TEST_CASE("skip-layer-norm: an Add of two constants is no residual and stays, saying so") {
  // Run alone, before constant folding would fold the sum (the whole optimizer folds it when the
  // result is small enough, so this reason is reached by large constant sums only).
  const Model m = model(graph("skip",
                              {node("Add", {"c1", "c2"}, {"sum"}), node("LayerNormalization", {"sum", "gamma"}, {"n"}, {attr("epsilon", 1e-5f)}),
                               node("Mul", {"n", "x"}, {"y"})},
                              {tensor_info("x", DType::Float, {"batch", 3, kH})}, {tensor_info("y", DType::Float, {"batch", 3, kH})},
                              {{"c1", ramp({1, 3, kH}, 0.1f, 0.2f)}, {"c2", ramp({1, 3, kH}, -0.4f, 0.1f)}, {"gamma", ramp({kH}, 0.5f, 0.1f)}}),
                        {{"", 17}});
  CHECK(count_ops(run(m, {"skip-layer-norm"}), "SkipLayerNormalization") == 0);
  CHECK(has_line(explain(m, {"skip-layer-norm"}), "skip-layer-norm", "adds two constants"));
}

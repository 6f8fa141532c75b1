// The accuracy library (tools/debug/accuracy.h, fusion/oracle.h) on small graphs whose errors are
// known by hand: the error figures, the widening, the ranking, the fallback for operators without
// a double path, and the --reference matching (same name, QDQ names, fused_from provenance).
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "debug/accuracy.h"
#include "refeval/builder.h"
#include "refeval/error.h"

using namespace refeval;
using namespace refeval::build;
namespace acc = refeval::accuracy;

namespace {

Tensor f32(std::vector<float> v) { return Tensor::from_vector<float>({int64_t(v.size())}, v); }
Tensor f64(std::vector<double> v) { return Tensor::from_vector<double>({int64_t(v.size())}, v); }

}  // namespace

TEST_CASE("accuracy: error figures against a hand computation") {
  acc::ErrorAccumulator e;
  e.add(f32({1, 2, 3}), f64({1, 2.5, 3}), "x");
  const acc::Error r = e.result();
  CHECK(r.count == 3);
  CHECK(r.max_abs == 0.5);
  CHECK(r.max_rel == doctest::Approx(0.2));
  CHECK(r.rms == doctest::Approx(std::sqrt(0.25 / 3)));
  CHECK(r.sqnr_db == doctest::Approx(20 * std::log10(std::sqrt(1 + 6.25 + 9) / 0.5)));
  CHECK(r.ulps == std::ldexp(1.0, 21));  // 0.5 over float32's spacing at 2.5, 2^-22
}

TEST_CASE("accuracy: SQNR as qdq_loss_debug: both norms held at float64's epsilon") {
  const double eps = std::numeric_limits<double>::epsilon();
  CHECK(acc::error_of(f32({0, 0}), f64({0, 0}), "z").sqnr_db == 0);
  CHECK(acc::error_of(f32({3, 4}), f64({3, 4}), "same").sqnr_db == doctest::Approx(20 * std::log10(5 / eps)));
}

TEST_CASE("accuracy: NaN/Inf on one side only are counted apart, on both sides ignored") {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const acc::Error r = acc::error_of(f32({nan, inf, nan, 1}), f64({1, 1, NAN, 1}), "x");
  CHECK(r.nonfinite == 2);
  CHECK(r.count == 1);
  CHECK(r.max_abs == 0);
  CHECK_THROWS_WITH_AS(acc::error_of(f32({1, 2}), f64({1}), "v"), doctest::Contains("'v': shape"), refeval::Error);
}

TEST_CASE("accuracy: the oracle model holds floats in float64, Casts and Constants retargeted") {
  const Model m = model(graph("g",
                              {node("Constant", {}, {"c"}, {attr("value_float", 0.1f)}, "const"), node("Mul", {"X", "c"}, {"s"}),
                               node("Cast", {"s"}, {"h"}, {attr("to", int64_t(DType::Float16))}), node("Cast", {"h"}, {"Y"}, {attr("to", int64_t(DType::Float))})},
                              {tensor_info("X", DType::Float, {2})}, {tensor_info("Y", DType::Float, {2})},
                              {Initializer{"W", f32({1, 2})}}));
  const Model w = acc::widen_model(m);
  CHECK(w.graph.inputs[0].type.dtype == DType::Double);
  CHECK(w.graph.outputs[0].type.dtype == DType::Double);
  CHECK(w.graph.initializers[0].value.dtype() == DType::Double);
  CHECK(w.graph.nodes[0].attributes[0].t.dtype() == DType::Double);
  CHECK(w.graph.nodes[2].attributes[0].i == int64_t(DType::Double));
  CHECK(w.graph.nodes[3].attributes[0].i == int64_t(DType::Double));
}

TEST_CASE("accuracy: the ill-conditioned Add ranks first; the exact Sub adds nothing of its own") {
  // Y = ((X + 1e4) - 1e4) * 3: float32 rounds X + 1e4 to 2^-10.
  const Model m = model(graph("g",
                              {node("Add", {"X", "big"}, {"p"}, {}, "add"), node("Sub", {"p", "big"}, {"q"}, {}, "sub"),
                               node("Mul", {"q", "three"}, {"Y"}, {}, "mul")},
                              {tensor_info("X", DType::Float, {4})}, {tensor_info("Y", DType::Float, {4})},
                              {Initializer{"big", Tensor::scalar<float>(1e4f)}, Initializer{"three", Tensor::scalar<float>(3)}}));
  const std::map<std::string, Value> feeds{{"X", Value(f32({0.1f, 0.2f, 0.3f, 0.4f}))}};
  const acc::Report r = acc::profile(m, feeds, {});
  REQUIRE(r.nodes.size() == 3);
  CHECK(r.nodes[0].node == "add");
  REQUIRE(r.nodes[0].contribution);
  CHECK(r.nodes[0].contribution->rms == doctest::Approx(r.outputs_total.rms).epsilon(0.05));
  const acc::NodeError& sub = *std::find_if(r.nodes.begin(), r.nodes.end(), [](auto& n) { return n.node == "sub"; });
  CHECK(sub.outputs[0].local->max_abs == 0);
  CHECK(!sub.contribution);
  CHECK(sub.outputs[0].accumulated.max_abs > 0);  // it carries the Add's error
  // the oracle is exact here: (X + 1e4) - 1e4 = X in float64
  const std::vector<double> x{0.1f, 0.2f, 0.3f, 0.4f};
  double worst = 0;
  for (double v : x) worst = std::max(worst, std::fabs(3 * double(float(double(float(v + 1e4)) - 1e4)) - 3 * v));
  CHECK(r.outputs[0].accumulated.max_abs == doctest::Approx(worst).epsilon(1e-6));
}

TEST_CASE("accuracy: a sequence fed to the oracle holds its float tensors in float64, other items as they are") {
  const Value seq = Sequence{DType::Float, {Value(f32({0.1f, 2.5f})), Value(f32({-3.f}))}};
  const Value wide = acc::widen_value(seq);
  REQUIRE(wide.is_sequence());
  CHECK(wide.sequence().elem_dtype == DType::Double);
  REQUIRE(wide.sequence().items.size() == 2);
  CHECK(wide.sequence().items[0].tensor().dtype() == DType::Double);
  CHECK(wide.sequence().items[0].tensor().to_vector<double>() == std::vector<double>{double(0.1f), 2.5});
  const Value ints = Sequence{DType::Int64, {Value(Tensor::from_vector<int64_t>({1}, {7}))}};
  CHECK(acc::widen_value(ints).sequence().elem_dtype == DType::Int64);
  CHECK(acc::widen_value(ints).sequence().items[0].tensor().dtype() == DType::Int64);
}

TEST_CASE("accuracy: an If is one node of the report, carrying its branch's rounding") {
  // Y = If(C) then (X + 1e4) - 1e4 else X, times 3: the branch's nodes are the If's work, not rows.
  const Graph then_g = graph("then", {node("Add", {"X", "big"}, {"p"}, {}, "add"), node("Sub", {"p", "big"}, {"T"}, {}, "sub")}, {},
                             {tensor_info("T", DType::Float, {4})});
  const Graph else_g = graph("else", {node("Identity", {"X"}, {"E"}, {}, "same")}, {}, {tensor_info("E", DType::Float, {4})});
  const Model m = model(graph("g",
                              {node("If", {"C"}, {"q"}, {attr("then_branch", then_g), attr("else_branch", else_g)}, "if"),
                               node("Mul", {"q", "three"}, {"Y"}, {}, "mul")},
                              {tensor_info("C", DType::Bool, {}), tensor_info("X", DType::Float, {4})}, {tensor_info("Y", DType::Float, {4})},
                              {Initializer{"big", Tensor::scalar<float>(1e4f)}, Initializer{"three", Tensor::scalar<float>(3)}}));
  const std::map<std::string, Value> feeds{{"C", Value(Tensor::scalar<bool>(true))}, {"X", Value(f32({0.1f, 0.2f, 0.3f, 0.4f}))}};
  const acc::Report r = acc::profile(m, feeds, {});
  REQUIRE(r.nodes.size() == 2);
  const acc::NodeError& branch = *std::find_if(r.nodes.begin(), r.nodes.end(), [](auto& n) { return n.node == "if"; });
  // a node with a body has no error of its own (its nodes' inputs are not the model run's); what it
  // carries is the branch's rounding: float32 rounds X + 1e4 to 2^-10
  CHECK(!branch.outputs[0].local);
  CHECK(branch.local_note == "has a body");
  double worst = 0;
  for (double v : std::vector<double>{0.1f, 0.2f, 0.3f, 0.4f}) worst = std::max(worst, std::fabs(double(float(double(float(v + 1e4)) - 1e4)) - v));
  CHECK(branch.outputs[0].accumulated.max_abs == doctest::Approx(worst).epsilon(1e-6));
  CHECK(r.outputs[0].accumulated.max_abs == doctest::Approx(3 * branch.outputs[0].accumulated.max_abs).epsilon(1e-6));
}

TEST_CASE("accuracy: an operator without a double path runs in the model's precision inside the oracle") {
  const Model m = model(graph("g", {node("DynamicQuantizeLinear", {"X"}, {"q", "s", "z"}, {}, "dql")},
                              {tensor_info("X", DType::Float, {4})}, {tensor_info("s", DType::Float, {})}));
  const acc::Report r = acc::profile(m, {{"X", Value(f32({-1, 0.5f, 2, 3}))}}, {});
  REQUIRE(r.fallback.size() == 1);
  CHECK(r.fallback[0] == "dql (DynamicQuantizeLinear)");
  REQUIRE(r.nodes.size() == 1);
  CHECK(r.nodes[0].fallback);
  CHECK(r.outputs[0].accumulated.max_abs == 0);
}

TEST_CASE("accuracy --reference: same names, QDQ names and fused_from provenance") {
  // reference: u = A·W + b (MatMul, Add), out = Relu(u)
  const Tensor W = Tensor::from_vector<float>({2, 2}, {1, 2, 3, 4});
  const Model ref = model(graph("r", {node("MatMul", {"A", "W"}, {"t"}, {}, "mm"), node("Add", {"t", "b"}, {"u"}, {}, "add"),
                                      node("Relu", {"u"}, {"out"}, {}, "relu")},
                                {tensor_info("A", DType::Float, {1, 2})}, {tensor_info("out", DType::Float, {1, 2})},
                                {Initializer{"W", W}, Initializer{"b", f32({0.5f, -0.5f})}}));
  // model: W behind a DequantizeLinear (ORT's names), one Gemm for MatMul + Add with a new name
  Model m = model(graph("m",
                        {node("DequantizeLinear", {"W_quantized", "W_scale"}, {"W_DequantizeLinear_Output"}, {}, "dq"),
                         node("Gemm", {"A", "W_DequantizeLinear_Output", "b"}, {"gemm_out"}, {}, "fused"),
                         node("Relu", {"gemm_out"}, {"out"}, {}, "relu")},
                        {tensor_info("A", DType::Float, {1, 2})}, {tensor_info("out", DType::Float, {1, 2})},
                        {Initializer{"W_quantized", Tensor::from_vector<int8_t>({2, 2}, {1, 2, 3, 4})},
                         Initializer{"W_scale", Tensor::scalar<float>(1.0f)}, Initializer{"b", f32({0.5f, -0.5f})}}));
  m.metadata.emplace_back("refeval.fused_from:fused", "mm,add");
  const std::map<std::string, Value> feeds{{"A", Value(Tensor::from_vector<float>({1, 2}, {1, -1}))}};
  const acc::ReferenceReport r = acc::against_reference(m, ref, feeds, {}, nullptr);
  std::map<std::string, acc::TensorMatch> by_name;
  for (const auto& t : r.tensors) by_name[t.name] = t;
  REQUIRE(by_name.count("W_DequantizeLinear_Output"));
  CHECK(by_name["W_DequantizeLinear_Output"].reference == "W");
  CHECK(by_name["W_DequantizeLinear_Output"].how == "qdq");
  REQUIRE(by_name.count("gemm_out"));
  CHECK(by_name["gemm_out"].reference == "u");
  CHECK(by_name["gemm_out"].how == "fused_from");
  CHECK(by_name["gemm_out"].error.max_abs == 0);
  CHECK(by_name["out"].how == "name");
  CHECK(!by_name.count("W_scale"));  // a parameter with no counterpart: neither matched nor counted
  CHECK(r.unmatched.empty());
}

TEST_CASE("accuracy --reference: an input only the reference has, and a name both use for values of different shapes") {
  // reference: out = Relu(Reshape(A * s, (2))), s its own input (fed by reference_feeds); its 'flat' is (2)
  const Model ref = model(graph("r", {node("Mul", {"A", "s"}, {"t"}, {}, "mul"), node("Reshape", {"t", "two"}, {"flat"}, {}, "flat"),
                                      node("Relu", {"flat"}, {"out"}, {}, "relu")},
                                {tensor_info("A", DType::Float, {1, 2}), tensor_info("s", DType::Float, {1})},
                                {tensor_info("out", DType::Float, {2})}, {Initializer{"two", Tensor::from_vector<int64_t>({1}, {2})}}));
  // model: out = Reshape(Relu(A), (2)); its 'flat' is the (1, 2) before the Reshape
  const Model m = model(graph("m", {node("Relu", {"A"}, {"flat"}, {}, "relu"), node("Reshape", {"flat", "two"}, {"out"}, {}, "flat")},
                              {tensor_info("A", DType::Float, {1, 2})}, {tensor_info("out", DType::Float, {2})},
                              {Initializer{"two", Tensor::from_vector<int64_t>({1}, {2})}}));
  const acc::ReferenceReport r = acc::against_reference(m, ref, {{"A", Value(Tensor::from_vector<float>({1, 2}, {1.5f, -1}))}},
                                                        {{"s", Value(f32({1}))}}, nullptr);
  CHECK(r.unmatched == std::vector<std::string>{"flat"});  // same name, another value: not compared
  REQUIRE(r.outputs.size() == 1);
  CHECK(r.outputs[0].accumulated.max_abs == 0);
}

TEST_CASE("accuracy --reference: outputs of one name but an integer type on either side are not measured") {
  // 'idx' is ArgMax's int64 in the model and its float Cast in the reference; 'cls' the other way round
  auto outputs = [] {
    return std::vector<ValueInfo>{tensor_info("out", DType::Float, {1, 2}), untyped_info("idx"), untyped_info("cls")};
  };
  const Model m = model(graph("m", {node("Relu", {"A"}, {"out"}, {}, "relu"), node("ArgMax", {"A"}, {"idx"}, {}, "am"),
                                    node("Cast", {"idx"}, {"cls"}, {attr("to", int64_t(1))}, "cast")},
                              {tensor_info("A", DType::Float, {1, 2})}, outputs()));
  const Model ref = model(graph("r", {node("Relu", {"A"}, {"out"}, {}, "relu"), node("ArgMax", {"A"}, {"cls"}, {}, "am"),
                                      node("Cast", {"cls"}, {"idx"}, {attr("to", int64_t(1))}, "cast")},
                                {tensor_info("A", DType::Float, {1, 2})}, outputs()));
  const acc::ReferenceReport r = acc::against_reference(m, ref, {{"A", Value(Tensor::from_vector<float>({1, 2}, {1.5f, -1}))}}, {}, nullptr);
  REQUIRE(r.outputs.size() == 1);
  CHECK(r.outputs[0].name == "out");
  CHECK(r.outputs[0].accumulated.max_abs == 0);
}

TEST_CASE("accuracy: the error figures over many elements (vectorised blocks, a NaN block, a tail) equal a plain loop") {
  const size_t n = 5000;  // several blocks and a tail
  std::vector<float> m(n);
  std::vector<double> r(n);
  for (size_t i = 0; i < n; ++i) {
    r[i] = std::sin(double(i)) * (i % 7 == 0 ? 0 : 100);  // zeros: relative error of a difference at zero
    m[i] = float(r[i] + (i % 5 == 0 ? 1e-3 * std::cos(double(i)) : 0));
  }
  m[2100] = std::numeric_limits<float>::quiet_NaN();  // a block with a NaN goes element by element
  double max_abs = 0, max_rel = 0, d2 = 0, o2 = 0;
  int64_t count = 0;
  for (size_t i = 0; i < n; ++i) {
    if (std::isnan(m[i])) continue;
    const double d = std::fabs(double(m[i]) - r[i]);
    max_abs = std::max(max_abs, d);
    if (d != 0) max_rel = std::max(max_rel, r[i] != 0 ? d / std::fabs(r[i]) : INFINITY);
    d2 += d * d, o2 += r[i] * r[i], ++count;
  }
  const acc::Error e = acc::error_of(Tensor::from_vector<float>({int64_t(n)}, m), Tensor::from_vector<double>({int64_t(n)}, r), "x");
  CHECK(e.count == count);
  CHECK(e.nonfinite == 1);
  CHECK(e.max_abs == max_abs);
  CHECK(e.max_rel == max_rel);
  CHECK(std::isinf(e.max_rel));  // an element of the model off a zero of the reference
  CHECK(e.rms == doctest::Approx(std::sqrt(d2 / double(count))).epsilon(1e-12));
  CHECK(e.sqnr_db == doctest::Approx(10 * std::log10(o2 / d2)).epsilon(1e-12));
}

TEST_CASE("accuracy: contributions re-run only the cone, and by default stop at one run of the graph's work") {
  // Five lossy scalings in a chain, 2^19 elements each: the cones of the five add up to twice the
  // graph's work, so the budgeted profile computes only some; those it computes are the same.
  const int64_t n = int64_t(1) << 19;
  std::vector<Node> nodes;
  std::string in = "X";
  for (int k = 0; k < 5; ++k) {
    const std::string out = k == 4 ? "Y" : "t" + std::to_string(k);
    nodes.push_back(node("Mul", {in, "s" + std::to_string(k)}, {out}, {}, "mul" + std::to_string(k)));
    in = out;
  }
  std::vector<Initializer> scales;
  for (int k = 0; k < 5; ++k) scales.push_back({"s" + std::to_string(k), Tensor::scalar<float>(1.1f + 0.13f * float(k))});
  const Model m = model(graph("g", nodes, {tensor_info("X", DType::Float, {n})}, {tensor_info("Y", DType::Float, {n})}, scales));
  std::vector<float> x(static_cast<size_t>(n) + 0);
  for (int64_t i = 0; i < n; ++i) x[size_t(i)] = float(std::sin(double(i)));
  const std::map<std::string, Value> feeds{{"X", Value(Tensor::from_vector<float>({n}, x))}};
  acc::Options all, budgeted;
  budgeted.budgeted = true;
  const acc::Report full = acc::profile(m, feeds, all), part = acc::profile(m, feeds, budgeted);
  CHECK(full.contributions == 5);
  CHECK(part.candidates == 5);
  CHECK(part.contributions >= 1);
  CHECK(part.contributions < 5);
  CHECK(part.timing.cone_elements <= part.timing.graph_elements);
  CHECK(full.timing.cone_nodes == 4 + 3 + 2 + 1);
  for (const acc::NodeError& p : part.nodes) {
    if (!p.contribution) continue;
    const acc::NodeError& f = *std::find_if(full.nodes.begin(), full.nodes.end(), [&](auto& x) { return x.node == p.node; });
    REQUIRE(f.contribution);
    CHECK(f.contribution->rms == p.contribution->rms);
  }
  // The last node's cone is empty: its contribution is its own local error on the output.
  const acc::NodeError& last = *std::find_if(full.nodes.begin(), full.nodes.end(), [](auto& x) { return x.node == "mul4"; });
  CHECK(last.contribution->rms == doctest::Approx(last.outputs[0].local->rms).epsilon(1e-9));
}

// Model-local functions (FunctionProto): attribute references, attribute defaults, nested calls,
// overloads, and a save/load round trip of the IR 9/10 fields (attribute_proto, overload).
#include <memory>

#include "refeval/model_io.h"
#include "refeval/registry.h"
#include "test_util.h"

using namespace refeval;
using namespace refeval::testing;
using namespace refeval::build;

namespace {

// test.AddConst(x) = x + value, value a float attribute with default 0: shows which attribute
// value reached a node inside a function body.
class AddConst : public OpRun {
 public:
  explicit AddConst(const NodeContext& ctx) : value_(ctx.attr<float>("value", 0.0f)) {}
  Values run(const Values& in, RunContext&) override {
    Tensor out = input_tensor(in, 0).clone();
    for (int64_t i = 0; i < out.size(); ++i) out.data<float>()[i] += value_;
    return {out};
  }

 private:
  float value_;
};

const Registry& registry() {
  static const std::unique_ptr<Registry> reg = [] {
    auto r = std::make_unique<Registry>(&Registry::builtin(), "test");
    r->add("test", "AddConst", {1}, make<AddConst>);
    return r;
  }();
  return *reg;
}

const OpsetMap kOpsets{{"", 17}, {"test", 1}, {"local", 1}};

// local.Shift(x) = AddConst(x, value = the caller's `k`); `k` defaults to `k_default` if given.
Function shift(std::optional<float> k_default = std::nullopt, const std::string& overload = "", float extra = 0) {
  Function f;
  f.domain = "local";
  f.name = "Shift";
  f.overload = overload;
  f.inputs = {"x"};
  f.outputs = {"y"};
  f.nodes = {node("AddConst", {"x"}, {"t"}, {attr_ref("value", "k", AttrType::Float)}, "", "test"),
             node("AddConst", {"t"}, {"y"}, {attr("value", extra)}, "", "test")};
  if (k_default) f.attribute_defaults.push_back(attr("k", *k_default));
  else f.attribute_names = {"k"};
  f.opsets = {{"", 17}, {"test", 1}};
  return f;
}

Node call(const std::string& fn, std::vector<Attribute> attrs, const std::string& overload = "",
          std::vector<std::string> in = {"x"}, std::vector<std::string> out = {"y"}) {
  Node n = node(fn, std::move(in), std::move(out), std::move(attrs), "", "local");
  n.overload = overload;
  return n;
}

Model model_of(std::vector<Node> nodes, std::vector<Function> functions, const std::string& output = "y") {
  return model(graph("g", std::move(nodes), {tensor_info("x", DType::Float, {2})}, {tensor_info(output, DType::Float, {2})}),
               kOpsets, 10, std::move(functions));
}

Tensor run_model(Model m, float x0 = 1) {
  EvaluatorOptions options;
  options.registry = &registry();
  ReferenceEvaluator ev(std::move(m), options);
  return ev.run({}, {{"x", tensor<float>({2}, {x0, x0 + 1})}})[0].tensor();
}

}  // namespace

TEST_CASE("function attributes: references, defaults and overrides") {
  struct Case { const char* what; std::optional<float> k_default; std::vector<Attribute> call_attrs; float added; };
  const Case cases[] = {
      {"a caller attribute reaches the body through ref_attr_name", std::nullopt, {attr("k", 5.0f)}, 5},
      {"the function's default applies when the caller omits it", 2.0f, {}, 2},
      {"a caller attribute overrides the default", 2.0f, {attr("k", 7.0f)}, 7},
      {"no value and no default: the op's own default (0) applies", std::nullopt, {}, 0},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    check_equal(run_model(model_of({call("Shift", c.call_attrs)}, {shift(c.k_default)})), tensor<float>({2}, {1 + c.added, 2 + c.added}));
  }
}

TEST_CASE("a function can call another function, passing its own attributes on") {
  // local.Twice(x) = Shift(Shift(x, k = m), k = 10); m defaults to 1.
  Function twice;
  twice.domain = "local";
  twice.name = "Twice";
  twice.inputs = {"x"};
  twice.outputs = {"y"};
  twice.nodes = {call("Shift", {attr_ref("k", "m", AttrType::Float)}, "", {"x"}, {"t"}),
                 call("Shift", {attr("k", 10.0f)}, "", {"t"}, {"y"})};
  twice.attribute_defaults = {attr("m", 1.0f)};
  twice.opsets = {{"", 17}, {"local", 1}};
  check_equal(run_model(model_of({call("Twice", {attr("m", 3.0f)})}, {shift(), twice})), tensor<float>({2}, {14, 15}));
  check_equal(run_model(model_of({call("Twice", {})}, {shift(), twice})), tensor<float>({2}, {12, 13}));
}

TEST_CASE("overloads pick the function with the node's overload") {
  // Three functions local.Shift: no overload (+0 extra), "hundred" (+100), "thousand" (+1000).
  const std::vector<Function> fns{shift(0.0f), shift(0.0f, "hundred", 100), shift(0.0f, "thousand", 1000)};
  struct Case { const char* overload; float added; };
  const Case cases[] = {{"", 0}, {"hundred", 100}, {"thousand", 1000}};
  for (const auto& c : cases) {
    CAPTURE(c.overload);
    check_equal(run_model(model_of({call("Shift", {}, c.overload)}, fns)), tensor<float>({2}, {1 + c.added, 2 + c.added}));
  }
  // Both overloads in one graph.
  Model both = model_of({call("Shift", {}, "hundred", {"x"}, {"t"}), call("Shift", {}, "thousand", {"t"}, {"y"})}, fns);
  check_equal(run_model(both), tensor<float>({2}, {1101, 1102}));
}

TEST_CASE("a save/load round trip keeps attribute defaults and overloads") {
  const std::vector<Function> fns{shift(2.0f), shift(4.0f, "hundred", 100)};
  Model m = model_of({call("Shift", {}, "", {"x"}, {"t"}), call("Shift", {}, "hundred", {"t"}, {"y"})}, fns);
  const Model back = parse_model(serialize_model(m), "", "round trip");
  REQUIRE(back.functions.size() == 2);
  for (size_t i = 0; i < 2; ++i) {
    CAPTURE(i);
    CHECK(back.functions[i].overload == fns[i].overload);
    REQUIRE(back.functions[i].attribute_defaults.size() == 1);
    CHECK(back.functions[i].attribute_defaults[0].name == "k");
    CHECK(back.functions[i].attribute_defaults[0].type == AttrType::Float);
    CHECK(back.functions[i].attribute_defaults[0].f == fns[i].attribute_defaults[0].f);
    CHECK(back.functions[i].nodes[0].attributes[0].ref_attr_name == "k");
  }
  REQUIRE(back.graph.nodes.size() == 2);
  CHECK(back.graph.nodes[0].overload.empty());
  CHECK(back.graph.nodes[1].overload == "hundred");
  // 1 + 2 (first call, default k = 2), then + 4 + 100 (second call, the "hundred" overload).
  check_equal(run_model(back), tensor<float>({2}, {107, 108}));
  check_equal(run_model(m), tensor<float>({2}, {107, 108}));
}

TEST_CASE("attribute references inside a body of a function's node are bound too") {
  // local.Pick(x, c) = If(c, then: AddConst(x, value = k), else: x - x); k defaults to 3.
  Function pick;
  pick.domain = "local";
  pick.name = "Pick";
  pick.inputs = {"x", "c"};
  pick.outputs = {"y"};
  Graph then_g = graph("then", {node("AddConst", {"x"}, {"a"}, {attr_ref("value", "k", AttrType::Float)}, "", "test")}, {},
                       {untyped_info("a")});
  Graph else_g = graph("else", {node("Sub", {"x", "x"}, {"b"})}, {}, {untyped_info("b")});
  pick.nodes = {node("If", {"c"}, {"y"}, {attr("then_branch", then_g), attr("else_branch", else_g)})};
  pick.attribute_defaults = {attr("k", 3.0f)};
  pick.opsets = {{"", 17}, {"test", 1}};
  for (float k : {3.0f, 8.0f}) {
    CAPTURE(k);
    Model m = model_of({call("Pick", {}, "", {"x", "c"})}, {pick});
    m.graph.inputs.push_back(untyped_info("c"));
    if (k != 3.0f) m.graph.nodes[0].attributes.push_back(attr("k", k));
    EvaluatorOptions options;
    options.registry = &registry();
    ReferenceEvaluator ev(std::move(m), options);
    check_equal(ev.run({}, {{"x", tensor<float>({2}, {1, 2})}, {"c", Tensor::scalar<bool>(true)}})[0], tensor<float>({2}, {1 + k, 2 + k}));
  }
}

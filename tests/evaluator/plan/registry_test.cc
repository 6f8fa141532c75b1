// Resolution: the highest since-version <= the opset; user operators join and win ties; an
// any-version registration replaces the built-in at every opset.
#include <set>

#include "refeval/registry.h"
#include "test_util.h"

using namespace refeval;

namespace {
template <int Tag>
struct Tagged : OpRun {
  explicit Tagged(const NodeContext&) {}
  Values run(const Values&, RunContext&) override { return {Tensor::scalar<int64_t>(Tag)}; }
};
int64_t tag_at(const Registry& reg, int64_t opset) {
  auto ev = ReferenceEvaluator::from_node(build::node("Op", {}, {"y"}, {}, "", "test"), {{"test", opset}}, {&reg});
  return ev.run({}, {})[0].tensor().data<int64_t>()[0];
}
}  // namespace

TEST_CASE("the highest since-version not above the opset is chosen") {
  Registry reg(nullptr);
  reg.add("test", "Op", {1, 7}, make<Tagged<1>>);
  reg.add("test", "Op", {13}, make<Tagged<13>>);
  CHECK(tag_at(reg, 1) == 1);
  CHECK(tag_at(reg, 12) == 1);
  CHECK(tag_at(reg, 13) == 13);
  CHECK(tag_at(reg, 99) == 13);
  CHECK(reg.versions_of("test", "Op") == std::vector<int>{1, 7, 13});
}

TEST_CASE("a user registry joins the resolution and wins ties") {
  Registry base(nullptr);
  base.add("test", "Op", {1, 13}, make<Tagged<100>>);
  Registry user(&base);
  user.add("test", "Op", {13}, make<Tagged<200>>);
  CHECK(tag_at(user, 12) == 100);
  CHECK(tag_at(user, 13) == 200);
  Registry any(&base);
  any.add_any_version("test", "Op", make<Tagged<300>>);
  CHECK(tag_at(any, 1) == 300);
  CHECK(tag_at(any, 13) == 300);
}

TEST_CASE("an opset below every since-version is a model error listing what exists") {
  Registry reg(nullptr);
  reg.add("test", "Op", {5}, make<Tagged<5>>);
  CHECK_THROWS_WITH_AS(tag_at(reg, 4), doctest::Contains("no implementation for opset 4 (refeval implements since-versions 5)"), Error);
}

TEST_CASE("'ai.onnx' and '' are one domain") {
  CHECK(Registry::builtin().resolve("ai.onnx", "Add", 14) == Registry::builtin().resolve("", "Add", 14));
  CHECK(Registry::builtin().resolve("ai.onnx", "Add", 14) != nullptr);
}

// Determinism is declared by each operator class and decides folding (op_run.h).
namespace {
int runs = 0;  // how often Counted ran
template <Determinism D>
struct Counted : OpRun {
  static constexpr Determinism determinism = D;
  explicit Counted(const NodeContext&) {}
  Values run(const Values& in, RunContext&) override {
    ++runs;
    return {in[0]};
  }
};
struct Undeclared : OpRun {
  explicit Undeclared(const NodeContext&) {}
  Values run(const Values& in, RunContext&) override {
    ++runs;
    return {in[0]};
  }
};
// How often the op ran in three runs of a graph that applies it to an initializer.
int runs_on_a_constant(const OpFactory& factory) {
  Registry reg(&Registry::builtin());
  reg.add("test", "Op", {1}, factory);
  Graph g = build::graph("g", {build::node("Op", {"W"}, {"Y"}, {}, "op", "test")}, {},
                         {build::tensor_info("Y", DType::Float, {1})}, {{"W", Tensor::scalar<float>(2)}});
  ReferenceEvaluator ev(build::model(g, {{"", 17}, {"test", 1}}), {&reg});
  runs = 0;
  for (int i = 0; i < 3; ++i) ev.run({}, {});
  return runs;
}
}  // namespace

TEST_CASE("a user operator folds on constants only when it declares itself deterministic") {
  CHECK(runs_on_a_constant(make<Counted<Determinism::Deterministic>>) == 1);
  CHECK(runs_on_a_constant(make<Undeclared>) == 3);
  CHECK(runs_on_a_constant(make<Counted<Determinism::Random>>) == 3);
  Registry reg(nullptr);
  reg.add("test", "Op", {1}, make<Undeclared>);
  CHECK(reg.resolve("test", "Op", 1)->determinism == Determinism::Unknown);
}

TEST_CASE("built-in operators are deterministic except the ones that draw random numbers") {
  std::set<std::string> random;
  for (const OpRegistration* r : Registry::builtin().list()) {
    CHECK_MESSAGE(r->determinism != Determinism::Unknown, r->op_type);
    if (r->determinism == Determinism::Random) random.insert(r->op_type);
  }
  CHECK(random == std::set<std::string>{"Bernoulli", "Dropout", "Multinomial", "RandomNormal", "RandomNormalLike",
                                        "RandomUniform", "RandomUniformLike"});
}

TEST_CASE("a random operator is never folded, even on constant inputs") {
  Graph g = build::graph("g", {build::node("RandomUniformLike", {"W"}, {"Y"}, {}, "r")}, {},
                         {build::tensor_info("Y", DType::Float, {4})}, {{"W", Tensor(DType::Float, {4})}});
  ReferenceEvaluator ev(build::model(g));
  CHECK(ev.run({}, {})[0].tensor().raw_data() != ev.run({}, {})[0].tensor().raw_data());
}

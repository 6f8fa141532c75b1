// Resolution: the highest since-version <= the opset; user operators join and win ties; an
// any-version registration replaces the built-in at every opset.
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

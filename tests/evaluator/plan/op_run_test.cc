// What a kernel reads from its node is checked for it: an attribute read as a 32-bit int that
// does not fit one is refused when the model is planned, naming the node and the value.
#include "refeval/registry.h"
#include "test_util.h"

using namespace refeval;

namespace {
// A custom operator whose count is an int, as a plugin author may write it.
struct Repeat : OpRun {
  explicit Repeat(const NodeContext& ctx) : count(ctx.attr<int>("count", 1)) {}
  Values run(const Values&, RunContext&) override { return {Tensor::scalar<int64_t>(count)}; }
  int count;
};
}  // namespace

TEST_CASE("an int attribute beyond 32 bits is refused when the node is planned") {
  Registry reg(nullptr);
  reg.add("test", "Repeat", {1}, make<Repeat>);
  const auto with_count = [&](int64_t n) {
    return ReferenceEvaluator::from_node(build::node("Repeat", {}, {"y"}, {build::attr("count", n)}, "rep", "test"),
                                         {{"test", 1}}, {&reg});
  };
  CHECK(with_count(int64_t(1) << 30).run({}, {})[0].tensor().data<int64_t>()[0] == int64_t(1) << 30);
  CHECK_THROWS_WITH_AS(with_count(int64_t(1) << 40), "node 'rep' (test:Repeat): attribute 'count' = 1099511627776 is out of range", Error);
}

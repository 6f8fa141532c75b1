// Helpers for tests of operators with bodies: a registry with two test-only ops (domain "test")
// so bodies can be written before the families that own Identity and Less exist, and a runner
// for whole graphs.
#pragma once

#include <memory>

#include "refeval/registry.h"
#include "test_util.h"

namespace refeval::testing {

namespace detail {
// test.Id(x) = x, for any value.
struct TestId : OpRun {
  explicit TestId(const NodeContext&) {}
  Values run(const Values& in, RunContext&) override { return {in.at(0)}; }
};
// test.Less(a, b) = a < b, for int64 scalars: a bool scalar.
struct TestLess : OpRun {
  explicit TestLess(const NodeContext&) {}
  Values run(const Values& in, RunContext&) override {
    return {Tensor::scalar<bool>(input_tensor(in, 0).data<int64_t>()[0] < input_tensor(in, 1).data<int64_t>()[0])};
  }
};
}  // namespace detail

inline const Registry& body_test_registry() {
  static const std::unique_ptr<Registry> reg = [] {
    auto r = std::make_unique<Registry>(&Registry::builtin(), "test");
    r->add("test", "Id", {1}, make<detail::TestId>);
    r->add("test", "Less", {1}, make<detail::TestLess>);
    return r;
  }();
  return *reg;
}

// Runs a graph at `opset` with the test ops available.
inline Values run_graph(const Graph& g, const std::map<std::string, Value>& feeds, int64_t opset = 21,
                        Observer* observer = nullptr) {
  EvaluatorOptions options;
  options.registry = &body_test_registry();
  auto ev = ReferenceEvaluator::from_graph(g, {{"", opset}, {"test", 1}}, {}, options);
  if (observer) ev.add_observer(observer);
  return ev.run({}, feeds);
}

inline Tensor i64(int64_t v) { return Tensor::scalar<int64_t>(v); }
inline Tensor boolean(bool v) { return Tensor::scalar<bool>(v); }

}  // namespace refeval::testing

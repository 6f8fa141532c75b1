// SequenceMap: one body run per element, sequences zipped, tensors broadcast to every run.
#include "../control/body_util.h"

using namespace refeval;
using namespace refeval::testing;
using namespace refeval::build;

namespace {
Sequence seq(std::vector<Tensor> items) {
  Sequence s{items.empty() ? DType::Float : items[0].dtype(), {}};
  for (auto& t : items) s.items.push_back(t);
  return s;
}
Tensor f(float v) { return Tensor::scalar<float>(v); }

// SequenceMap(s, extra) with body (a, b) -> (a + b, a * scale), scale read from the outer graph.
Graph map_graph(std::vector<DimSpec> sum_dims = {}) {
  Graph body = graph("body", {node("Add", {"a", "b"}, {"sum"}), node("Mul", {"a", "scale"}, {"scaled"})},
                     {untyped_info("a"), untyped_info("b")},
                     {tensor_info("sum", DType::Double, sum_dims), untyped_info("scaled")});
  return graph("g", {node("SequenceMap", {"s", "extra"}, {"sums", "scaled"}, {attr("body", body)}, "map")},
               {untyped_info("s"), untyped_info("extra"), untyped_info("scale")}, {untyped_info("sums"), untyped_info("scaled")});
}
}  // namespace

TEST_CASE("SequenceMap maps a body over sequences") {
  struct Case { const char* what; Sequence s; Value extra; Sequence sums, scaled; };
  const Case cases[] = {
      {"a tensor goes to every run", seq({f(1), f(2)}), f(10), seq({f(11), f(12)}), seq({f(3), f(6)})},
      {"two sequences are zipped", seq({f(1), f(2)}), seq({f(10), f(20)}), seq({f(11), f(22)}), seq({f(3), f(6)})},
      {"an empty sequence maps to empty sequences", seq({}), seq({}), seq({}), seq({})},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    auto out = run_graph(map_graph(), {{"s", c.s}, {"extra", c.extra}, {"scale", f(3)}}, 17);
    check_equal(out[0], c.sums);
    check_equal(out[1], c.scaled);
  }
  // An empty result keeps the element type the body declares (double), or leaves it unknown.
  auto empty = run_graph(map_graph(), {{"s", seq({})}, {"extra", f(1)}, {"scale", f(3)}}, 17);
  CHECK(empty[0].sequence().elem_dtype == DType::Double);
  CHECK(empty[1].sequence().elem_dtype == DType::Undefined);
}

TEST_CASE("SequenceMap refuses sequences of different lengths") {
  CHECK_THROWS_WITH_AS(run_graph(map_graph(), {{"s", seq({f(1), f(2)})}, {"extra", seq({f(1)})}, {"scale", f(3)}}, 17),
                       doctest::Contains("input 1 is a sequence of 1 elements, the input sequence has 2"), Error);
}

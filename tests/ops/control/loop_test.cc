// Loop: every combination of M and cond, loop-carried values, scan outputs (scalars stack to
// (N,), zero iterations), the iteration counter and outer-scope reads.
#include "body_util.h"

using namespace refeval;
using namespace refeval::testing;
using namespace refeval::build;

namespace {

// body(i, cond, acc) -> (i < limit, acc + step, scan): counts with a condition that turns false
// once i reaches `limit` (an outer value); `scan` is i * step unless another node is given.
Graph loop_graph(bool with_m, bool with_cond, std::vector<DimSpec> scan_dims = {},
                 Node scan_node = node("Mul", {"i", "step"}, {"scan"})) {
  Graph body = graph("body",
                     {node("Less", {"i", "limit"}, {"keep"}, {}, "", "test"), node("Add", {"acc", "step"}, {"acc_out"}), scan_node},
                     {tensor_info("i", DType::Int64, {}), tensor_info("cond", DType::Bool, {}), untyped_info("acc")},
                     {untyped_info("keep"), untyped_info("acc_out"), tensor_info("scan", DType::Int64, scan_dims)});
  return graph("g", {node("Loop", {with_m ? "M" : "", with_cond ? "cond" : "", "acc0"}, {"acc", "scans"}, {attr("body", body)}, "loop")},
               {untyped_info("M"), untyped_info("cond"), untyped_info("acc0"), untyped_info("limit"), untyped_info("step")},
               {untyped_info("acc"), untyped_info("scans")});
}

}  // namespace

TEST_CASE("Loop runs as M and cond direct") {
  struct Case { const char* what; bool with_m, with_cond; int64_t m; bool cond; int64_t limit; int64_t runs; };
  const Case cases[] = {
      {"M only: M runs, the body's condition is ignored", true, false, 4, true, 1, 4},
      {"cond only: runs while the body's condition holds", false, true, 0, true, 3, 4},
      {"both: M stops first", true, true, 2, true, 10, 2},
      {"both: the condition stops first", true, true, 10, true, 2, 3},
      {"M = 0 runs zero times", true, true, 0, true, 10, 0},
      {"negative M runs zero times", true, false, -3, true, 10, 0},
      {"a false initial condition runs zero times", true, true, 10, false, 10, 0},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    auto out = run_graph(loop_graph(c.with_m, c.with_cond, {}),
                         {{"M", i64(c.m)}, {"cond", boolean(c.cond)}, {"acc0", i64(100)}, {"limit", i64(c.limit)}, {"step", i64(5)}});
    check_equal(out[0], i64(100 + 5 * c.runs));
    std::vector<int64_t> scanned;
    for (int64_t i = 0; i < c.runs; ++i) scanned.push_back(5 * i);
    check_equal(out[1], tensor<int64_t>({c.runs}, scanned));  // scalars stack to (N,), not (N, 1)
  }
}

TEST_CASE("Loop scan outputs of zero iterations need a declared element shape") {
  auto feeds = std::map<std::string, Value>{{"M", i64(0)}, {"cond", boolean(true)}, {"acc0", i64(1)}, {"limit", i64(9)}, {"step", i64(1)}};
  // The body never runs, so the declared element shape (2, 3) gives the empty output (0, 2, 3).
  check_equal(run_graph(loop_graph(true, true, {2, 3}), feeds)[1], Tensor(DType::Int64, {0, 2, 3}));
  Graph unknown = loop_graph(true, true, {"N"});
  CHECK_THROWS_WITH_AS(run_graph(unknown, feeds), doctest::Contains("zero iterations"), Error);
}

TEST_CASE("Loop scan outputs must keep one shape") {
  // body: scan = concatenation of acc grown each iteration -> shapes differ between iterations.
  Graph body = graph("body", {node("SequenceInsert", {"acc", "i"}, {"acc_out"}), node("ConcatFromSequence", {"acc_out"}, {"scan"}, {attr("axis", int64_t(0)), attr("new_axis", int64_t(1))})},
                     {tensor_info("i", DType::Int64, {}), tensor_info("cond", DType::Bool, {}), untyped_info("acc")},
                     {untyped_info("cond"), untyped_info("acc_out"), untyped_info("scan")});
  Graph g = graph("g", {node("SequenceEmpty", {}, {"s0"}, {attr("dtype", int64_t(DType::Int64))}),
                        node("Loop", {"M", "", "s0"}, {"s", "scans"}, {attr("body", body)})},
                  {untyped_info("M")}, {untyped_info("s"), untyped_info("scans")});
  CHECK_THROWS_WITH_AS(run_graph(g, {{"M", i64(3)}}), doctest::Contains("cannot stack shapes"), Error);
  // Loop-carried sequences grow across iterations.
  Graph ok = g;
  ok.outputs.pop_back();
  ok.nodes[1].outputs.pop_back();
  ok.nodes[1].attributes[0].g->outputs.pop_back();
  ok.nodes[1].attributes[0].g->nodes.pop_back();
  auto out = run_graph(ok, {{"M", i64(3)}});
  REQUIRE(out[0].is_sequence());
  CHECK(out[0].sequence().items.size() == 3);
  CHECK(out[0].sequence().elem_dtype == DType::Int64);
  check_equal(out[0].sequence().items[2], i64(2));
}

TEST_CASE("Loop checks M and its body's shape") {
  auto feeds = std::map<std::string, Value>{{"M", tensor<int32_t>({}, {2})}, {"cond", boolean(true)}, {"acc0", i64(1)}, {"limit", i64(9)}, {"step", i64(1)}};
  CHECK_THROWS_WITH_AS(run_graph(loop_graph(true, true), feeds), doctest::Contains("M must be an int64 tensor"), Error);
  Graph wrong = loop_graph(true, true);
  wrong.nodes[0].inputs.push_back("limit");  // a second carried value the body does not take
  feeds["M"] = i64(1);
  CHECK_THROWS_WITH_AS(run_graph(wrong, feeds), doctest::Contains("expected 2 + 2 loop-carried values"), Error);
}

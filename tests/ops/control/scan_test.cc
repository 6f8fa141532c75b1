// Scan: opset 9+ axes and directions, zero-length scans, and the opset 8 batch form.
#include "body_util.h"

using namespace refeval;
using namespace refeval::testing;
using namespace refeval::build;

namespace {

enum class Form { Scan9, Scan8, Scan8WithLens };

// body(sum, x) -> (sum + x, sum + x): a running sum of the slices, also scanned out.
Graph running_sum(std::vector<Attribute> attrs, Form form = Form::Scan9) {
  Graph body = graph("body", {node("Add", {"sum", "x"}, {"sum_out"}), node("Id", {"sum_out"}, {"scan"}, {}, "", "test")},
                     {untyped_info("sum"), untyped_info("x")},
                     {untyped_info("sum_out"), tensor_info("scan", DType::Float, {2})});
  attrs.push_back(attr("body", body));
  attrs.push_back(attr("num_scan_inputs", int64_t(1)));
  std::vector<std::string> inputs{"init", "xs"};
  std::vector<ValueInfo> graph_inputs{untyped_info("init"), untyped_info("xs")};
  if (form != Form::Scan9) inputs.insert(inputs.begin(), form == Form::Scan8WithLens ? "lens" : "");
  if (form == Form::Scan8WithLens) graph_inputs.push_back(untyped_info("lens"));
  return graph("g", {node("Scan", inputs, {"final", "scanned"}, attrs, "scan")}, graph_inputs,
               {untyped_info("final"), untyped_info("scanned")});
}

}  // namespace

TEST_CASE("Scan walks its scan axes in the directions asked") {
  // xs is (3, 2) = [[1, 2], [3, 4], [5, 6]]; its transpose (2, 3) for scan axis 1.
  const Tensor xs = tensor<float>({3, 2}, {1, 2, 3, 4, 5, 6});
  const Tensor xs_t = tensor<float>({2, 3}, {1, 3, 5, 2, 4, 6});
  using V = std::vector<int64_t>;
  struct Case { const char* what; std::vector<Attribute> attrs; Tensor input, scanned; };
  const Case cases[] = {
      {"defaults: axis 0, forward", {}, xs, tensor<float>({3, 2}, {1, 2, 4, 6, 9, 12})},
      {"reverse input", {attr("scan_input_directions", V{1})}, xs, tensor<float>({3, 2}, {5, 6, 8, 10, 9, 12})},
      {"reverse output fills from the end", {attr("scan_output_directions", V{1})}, xs, tensor<float>({3, 2}, {9, 12, 4, 6, 1, 2})},
      {"input axis 1", {attr("scan_input_axes", V{1})}, xs_t, tensor<float>({3, 2}, {1, 2, 4, 6, 9, 12})},
      {"input axis -1", {attr("scan_input_axes", V{-1})}, xs_t, tensor<float>({3, 2}, {1, 2, 4, 6, 9, 12})},
      {"output axis 1", {attr("scan_output_axes", V{1})}, xs, tensor<float>({2, 3}, {1, 4, 9, 2, 6, 12})},
      {"output axis -1", {attr("scan_output_axes", V{-1})}, xs, tensor<float>({2, 3}, {1, 4, 9, 2, 6, 12})},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    auto out = run_graph(running_sum(c.attrs), {{"init", tensor<float>({2}, {0, 0})}, {"xs", c.input}}, 16);
    check_equal(out[0], tensor<float>({2}, {9, 12}));
    check_equal(out[1], c.scanned);
  }
}

TEST_CASE("Scan of zero length returns the initial state and empty declared scan outputs") {
  auto out = run_graph(running_sum({attr("scan_output_axes", std::vector<int64_t>{1})}),
                       {{"init", tensor<float>({2}, {7, 8})}, {"xs", Tensor(DType::Float, {0, 2})}}, 16);
  check_equal(out[0], tensor<float>({2}, {7, 8}));
  check_equal(out[1], Tensor(DType::Float, {2, 0}));
}

TEST_CASE("Scan refuses bad attributes and mismatched scan lengths") {
  using V = std::vector<int64_t>;
  const auto feeds = std::map<std::string, Value>{{"init", tensor<float>({2}, {0, 0})}, {"xs", tensor<float>({1, 2}, {1, 2})}};
  CHECK_THROWS_WITH_AS(run_graph(running_sum({attr("scan_input_directions", V{2})}), feeds, 16), doctest::Contains("0 (forward) or 1"), Error);
  CHECK_THROWS_WITH_AS(run_graph(running_sum({attr("scan_output_axes", V{0, 0})}), feeds, 16), doctest::Contains("has 2 entries, expected 1"), Error);
  CHECK_THROWS_WITH_AS(run_graph(running_sum({attr("scan_input_axes", V{2})}), feeds, 16), doctest::Contains("out of range"), Error);
}

TEST_CASE("Scan-8 scans each batch entry over its own sequence length") {
  // Batch of 2; sequences of up to 3 elements of shape (2,).
  const Tensor xs = tensor<float>({2, 3, 2}, {1, 2, 3, 4, 5, 6, 10, 20, 30, 40, 50, 60});
  const Tensor init = tensor<float>({2, 2}, {0, 0, 100, 100});
  struct Case { const char* what; std::vector<Attribute> attrs; Value lens; Tensor final_state, scanned; };
  const Case cases[] = {
      {"no sequence_lens: every step", {}, Value(),
       tensor<float>({2, 2}, {9, 12, 190, 220}), tensor<float>({2, 3, 2}, {1, 2, 4, 6, 9, 12, 110, 120, 140, 160, 190, 220})},
      {"sequence_lens stops early; the rest is zero", {}, tensor<int64_t>({2}, {3, 1}),
       tensor<float>({2, 2}, {9, 12, 110, 120}), tensor<float>({2, 3, 2}, {1, 2, 4, 6, 9, 12, 110, 120, 0, 0, 0, 0})},
      {"reverse walks back from each entry's own end", {attr("directions", std::vector<int64_t>{1})}, tensor<int64_t>({2}, {3, 2}),
       tensor<float>({2, 2}, {9, 12, 140, 160}), tensor<float>({2, 3, 2}, {5, 6, 8, 10, 9, 12, 130, 140, 140, 160, 0, 0})},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    std::map<std::string, Value> feeds{{"init", init}, {"xs", xs}};
    if (!c.lens.is_absent()) feeds["lens"] = c.lens;
    auto out = run_graph(running_sum(c.attrs, c.lens.is_absent() ? Form::Scan8 : Form::Scan8WithLens), feeds, 8);
    check_equal(out[0], c.final_state);
    check_equal(out[1], c.scanned);
  }
}

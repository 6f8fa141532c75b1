// The trace at --verbose 2, 3 and 4 is byte-identical to ONNX's Python ReferenceEvaluator
// (shared/docs/verbose-golden, made with onnx 1.23.0).
#include <cstdio>
#include <fstream>
#include <sstream>

#include "refeval/model_io.h"
#include "refeval/trace.h"
#include "test_util.h"

using namespace refeval;

namespace {

std::string golden_dir() { return std::string(REFEVAL_SHARED_DIR) + "/docs/verbose-golden/"; }

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string trace_of(const Model& m, const std::map<std::string, Value>& feeds, int level) {
  ReferenceEvaluator ev(m);
  std::FILE* f = std::tmpfile();
  TraceObserver trace(level, f);
  ev.add_observer(&trace);
  ev.run({}, feeds);
  std::fflush(f);
  std::rewind(f);
  std::string text;
  char buf[4096];
  while (size_t n = std::fread(buf, 1, sizeof buf, f)) text.append(buf, n);
  std::fclose(f);
  return text;
}

}  // namespace

TEST_CASE("verbose 2, 3 and 4 match the Python reference byte for byte") {
  const Model m = load_model(golden_dir() + "linreg.onnx");
  const Value x = read_npy(golden_dir() + "X.npy");
  for (int level : {2, 3, 4}) {
    CAPTURE(level);
    CHECK(trace_of(m, {{"X", x}}, level) == read_text(golden_dir() + "verbose_" + std::to_string(level) + ".txt"));
  }
}

TEST_CASE("a function call is traced one level lower, indented under a header line") {
  using namespace build;
  Function f;
  f.domain = "local";
  f.name = "Twice";
  f.inputs = {"a"};
  f.outputs = {"b"};
  f.nodes = {node("Add", {"a", "a"}, {"b"})};
  f.opsets = {{"", 17}};
  Graph g = graph("g", {node("Twice", {"X"}, {"Y"}, {}, "call", "local")},
                  {tensor_info("X", DType::Float, {2})}, {tensor_info("Y", DType::Float, {2})});
  const Model m = model(g, {{"", 17}, {"local", 1}}, 8, {f});
  const std::string expected =
      " +I X: float32:(2,) in [1.0, 2.0]\n"
      "Twice(X) -> Y\n"
      "  -- Twice 'call': function Twice\n"
      "  Add(a, a) -> b\n"
      " + Y: float32:(2,) in [2.0, 4.0]\n";
  CHECK(trace_of(m, {{"X", testing::tensor<float>({2}, {1, 2})}}, 3) == expected);
}

// EvaluatorOptions::release_packed_weights: a weight that every node reading it took in its own
// form as the session was made (MatMul's packed strips, Gather's rows in the model file) is let
// go, and runs give the same bits.
#include <cstring>
#include <filesystem>
#include <unistd.h>

#include "refeval/builder.h"
#include "refeval/evaluator.h"
#include "refeval/file_backed.h"
#include "refeval/model_io.h"
#include "refeval/isa.h"
#include "test_util.h"

using namespace refeval;
using namespace refeval::build;
using refeval::testing::tensor;

namespace {

Tensor weight(int64_t k, int64_t n, float scale) {
  std::vector<float> v(size_t(k * n));
  for (size_t i = 0; i < v.size(); ++i) v[i] = float(int(i % 17) - 8) * scale;
  return tensor<float>({k, n}, v);
}

// y = ((x W1) W2 + W2[0]) W3: W1 read by one MatMul, W2 by a MatMul and a Gather, W3 of fewer than
// 2^18 values, whose small products of a few rows may go to Eigen.
Model model() {
  const std::vector<Initializer> inits = {{"W1", weight(512, 512, 0.01f)}, {"W2", weight(512, 512, 0.02f)},
                                          {"W3", weight(512, 64, 0.03f)}, {"row", tensor<int64_t>({1}, {0})}};
  Graph g = graph("g",
                  {node("MatMul", {"x", "W1"}, {"h1"}), node("MatMul", {"h1", "W2"}, {"h2"}), node("Gather", {"W2", "row"}, {"r"}),
                   node("Add", {"h2", "r"}, {"h3"}), node("MatMul", {"h3", "W3"}, {"y"})},
                  {tensor_info("x", DType::Float, {"rows", 512})}, {tensor_info("y", DType::Float, {"rows", 64})}, inits);
  return build::model(g);
}

}  // namespace

TEST_CASE("release_packed_weights: a weight only packing MatMuls read is let go; the others stay; the same bits") {
  ReferenceEvaluator kept(model()), released(model(), {nullptr, true});
  const bool packs = active_isa() != Isa::Generic;  // the portable path packs nothing
  const auto value_of = [&](const std::string& name) { return released.model().graph.find_initializer(name)->value; };
  CHECK((value_of("W1").raw_data() == nullptr) == packs);
  CHECK(value_of("W1").shape() == Shape{512, 512});  // its type and shape stay for the model's readers
  CHECK(value_of("W2").raw_data() != nullptr);        // a Gather reads it too
  CHECK(value_of("W3").raw_data() != nullptr);        // Eigen reads it for a small product
  CHECK(kept.model().graph.find_initializer("W1")->value.raw_data() != nullptr);
  for (int64_t rows : {1, 3, 40}) {
    CAPTURE(rows);
    std::vector<float> x(size_t(rows * 512));
    for (size_t i = 0; i < x.size(); ++i) x[i] = float(int(i % 13) - 6) * 0.1f;
    const Tensor a = kept.run({}, {{"x", tensor<float>({rows, 512}, x)}})[0].tensor();
    const Tensor b = released.run({}, {{"x", tensor<float>({rows, 512}, x)}})[0].tensor();
    CHECK(std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0);
  }
}

TEST_CASE("release_packed_weights: an embedding table copied out of its file is read there by Gather and let go") {
  // A table whose bytes lie at an offset that is not a multiple of 4 in the model file must be
  // copied to be read as floats; Gather reads its rows from the file instead, so the session lets
  // the copy go. Saved under names of 1 to 4 letters, so that some offset is unaligned.
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("refeval_release_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::vector<float> values(300 * 1000);
  for (size_t i = 0; i < values.size(); ++i) values[i] = float(i % 977) * 0.5f - 100.0f;
  int copies = 0;
  for (const std::string name : {"t", "tb", "tbl", "tabl"}) {
    CAPTURE(name);
    for (const bool tied : {false, true}) {
      std::vector<Node> nodes = {node("Gather", {name, "ids"}, {"rows"})};
      std::vector<ValueInfo> outputs = {tensor_info("rows", DType::Float, {2, 3, 1000})};
      if (tied) {  // a second reader: the table also goes through a Transpose (a tied LM head)
        nodes.push_back(node("Transpose", {name}, {"t_t"}));
        nodes.push_back(node("ReduceSum", {"t_t"}, {"total"}, {attr("keepdims", int64_t(0))}));
        outputs.push_back(tensor_info("total", DType::Float, {}));
      }
      const Model m = build::model(graph("g", nodes, {tensor_info("ids", DType::Int64, {2, 3})}, outputs,
                                         {{name, tensor<float>({300, 1000}, values)}}));
      const std::string path = (dir / "table.onnx").string();
      save_model(m, path);
      Model loaded = load_model(path);
      const Tensor& table = loaded.graph.initializers.at(0).value;
      if (!copied_from(table.raw_data()).file) continue;  // aligned: a view of the file already
      ++copies;
      ReferenceEvaluator kept(loaded), released(std::move(loaded), {nullptr, true});
      CHECK((released.model().graph.initializers.at(0).value.raw_data() == nullptr) == !tied);
      const Tensor ids = tensor<int64_t>({2, 3}, {0, 299, -1, 7, 150, -300});
      const Values a = kept.run({}, {{"ids", ids}}), b = released.run({}, {{"ids", ids}});
      for (size_t k = 0; k < a.size(); ++k) CHECK(std::memcmp(a[k].tensor().raw_data(), b[k].tensor().raw_data(), a[k].tensor().nbytes()) == 0);
      CHECK(b[0].tensor().data<float>()[1000 + 5] == values[299 * 1000 + 5]);  // row 299
      CHECK(b[0].tensor().data<float>()[3 * 1000 + 2] == values[7 * 1000 + 2]);
      CHECK_THROWS_WITH(released.run({}, {{"ids", tensor<int64_t>({2, 3}, {0, 0, 0, 0, 0, 300})}}),
                        doctest::Contains("index 300 is out of range"));
    }
  }
  CHECK(copies >= 2);  // names of 4 lengths put the table at 4 offsets: some are not aligned
  fs::remove_all(dir);
}

// The recorder and the dumper: every main-graph value in execution order (initializers, feeds,
// then node outputs) with its node, written as .pb files plus index.json and read back.
#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "refeval/dump.h"
#include "refeval/evaluator.h"
#include "refeval/model_io.h"
#include "test_util.h"

using namespace refeval;
using namespace refeval::build;
using refeval::testing::tensor;
namespace fs = std::filesystem;

namespace {

// Y = (X + W) * X, with W an initializer and names that are not safe as file names.
Model two_nodes() {
  Graph g = graph("g", {node("Add", {"X", "W"}, {"a/b:c"}, {}, "add"), node("Mul", {"a/b:c", "X"}, {"Y"}, {}, "")},
                  {tensor_info("X", DType::Float, {2})}, {tensor_info("Y", DType::Float, {2})},
                  {{"W", tensor<float>({2}, {1, 2})}});
  return model(g);
}

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("refeval_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  return dir;
}

}  // namespace

TEST_CASE("the recorder keeps every main-graph value in execution order, with its node") {
  ReferenceEvaluator ev(two_nodes());
  RecordObserver rec;
  ev.add_observer(&rec);
  ev.run({}, {{"X", tensor<float>({2}, {3, 4})}});
  const auto& r = rec.records();
  REQUIRE(r.size() == 4);
  CHECK(r[0].name == "W");
  CHECK(r[0].source == ValueRecord::Source::Initializer);
  CHECK(r[1].name == "X");
  CHECK(r[1].source == ValueRecord::Source::Input);
  CHECK(r[2].name == "a/b:c");
  CHECK(r[2].node == "add");
  CHECK(r[3].node == "#1");  // an unnamed node is known by its index
  CHECK(r[3].op_type == "Mul");
  testing::check_equal(r[3].value, tensor<float>({2}, {12, 24}));
}

TEST_CASE("file names are safe and unique, also on case-blind disks") {
  std::set<std::string> used;
  CHECK(safe_file_name("a/b:c", used) == "a_b_c.pb");
  CHECK(safe_file_name("a_b_c", used) == "a_b_c_2.pb");
  CHECK(safe_file_name("A/B:C", used) == "A_B_C_3.pb");
  CHECK(safe_file_name("..", used) == "v...pb");
  CHECK(safe_file_name(std::string(500, 'x'), used).size() == 123);
}

TEST_CASE("a dump folder holds each value and an index that reads back") {
  const fs::path dir = fresh_dir("dump");
  {
    ReferenceEvaluator ev(two_nodes());
    DumpObserver dump(dir.string());
    ev.add_observer(&dump);
    ev.run({}, {{"X", tensor<float>({2}, {3, 4})}});
    CHECK(dump.size() == 4);
  }
  const auto index = read_dump_index(dir.string());
  REQUIRE(index.size() == 4);
  CHECK(index[2].file == "a_b_c.pb");
  CHECK(index[2].node == "add");
  CHECK(index[0].source == "initializer");
  CHECK(index[0].node.empty());
  const std::string text = read_file_bytes((dir / "index.json").string());
  CHECK(text.find(R"({"name":"Y","file":"Y.pb","node":"#1","op_type":"Mul","dtype":"float32","shape":[2],"min":12.0,"max":24.0,"mean":18.0,"nan":0,"inf":0)") != std::string::npos);
  const auto values = read_dump(dir.string());
  REQUIRE(values.size() == 4);
  testing::check_equal(values[3].value, tensor<float>({2}, {12, 24}));
  CHECK(values[3].source == ValueRecord::Source::Node);
  fs::remove_all(dir);
}

TEST_CASE("a folder without a usable index is refused with its name") {
  const fs::path dir = fresh_dir("noindex");
  fs::create_directories(dir);
  CHECK_THROWS_WITH_AS(read_dump_index(dir.string()), doctest::Contains("not a dump folder (no index.json)"), Error);
  write_value_pb((dir / "x.pb").string(), "x", tensor<float>({1}, {1}));
  auto write_index = [&](const std::string& text) { std::ofstream(dir / "index.json") << text; };
  write_index("{\"name\": 1}");
  CHECK_THROWS_WITH_AS(read_dump_index(dir.string()), doctest::Contains("expected a JSON array"), Error);
  write_index("[{\"name\": \"x\"}]");
  CHECK_THROWS_WITH_AS(read_dump_index(dir.string()), doctest::Contains("entry 0 needs string fields"), Error);
  write_index("[{\"name\": \"x\", \"file\": \"../x.pb\"}]");
  CHECK_THROWS_WITH_AS(read_dump_index(dir.string()), doctest::Contains("must be a plain path inside the folder"), Error);
  write_index("[{\"name\": \"x\", \"file\": \"x.pb\"}]");  // the minimal layout another runtime may write
  const auto values = read_dump(dir.string());
  REQUIRE(values.size() == 1);
  CHECK(values[0].source == ValueRecord::Source::Input);
  fs::remove_all(dir);
}

// Reading ONNX Runtime's profile files: real fixtures of ORT 1.30 (no fences) and ORT-web 1.16
// (fence events), and crafted malformed ones (truncated, unknown fields, numbers, empty).
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

#include "profile_file.h"
#include "refeval/error.h"
#include "runs.h"

using namespace refeval;
using namespace refeval::profile;

namespace {

std::string fixture(const std::string& name) { return std::string(REFEVAL_SOURCE_DIR) + "/tests/data/profiles/" + name; }

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

size_t count_kind(const ProfileFile& f, EventKind k) {
  return size_t(std::count_if(f.events.begin(), f.events.end(), [&](const Event& e) { return e.kind == k; }));
}

}  // namespace

TEST_CASE("ORT 1.30's file: sessions, runs and kernels with their args") {
  const ProfileFile f = read_profile(fixture("ort-1.30-linreg-disabled.json"));
  CHECK(f.warnings.empty());
  CHECK(count_kind(f, EventKind::Kernel) == 16);  // 4 nodes x 4 runs
  CHECK(count_kind(f, EventKind::Fence) == 0);
  const std::vector<Run> runs = split_runs(f);
  REQUIRE(runs.size() == 4);
  for (const Run& r : runs) CHECK(r.kernels.size() == 4);
  const Event& add = *runs[0].kernels[0];
  CHECK(add.node == "/Add");
  CHECK(add.op_type == "Add");
  CHECK(add.provider == "CPUExecutionProvider");
  CHECK(add.node_index == 0);
  CHECK(add.inputs == std::vector<TypeShape>{{"float", {3, 10}}, {"float", {10}}});
  CHECK(add.parameter_size == 40);
  CHECK(add.extra_args.contains("mem_arena_held"));  // newer args are kept as read
  for (size_t i = 1; i < f.events.size(); ++i) CHECK(f.events[i - 1].ts <= f.events[i].ts);  // sorted by start
}

TEST_CASE("ORT 1.16's file: fence events are told apart from kernels") {
  const ProfileFile f = read_profile(fixture("ort-web-1.16.3-linreg-fences.json"));
  CHECK(count_kind(f, EventKind::Kernel) == 16);
  CHECK(count_kind(f, EventKind::Fence) == 32);
  const std::vector<Run> runs = split_runs(f);
  REQUIRE(runs.size() == 4);
  CHECK(runs[1].kernels.size() == 4);
  CHECK(runs[1].fences.size() == 8);
  CHECK(runs[1].fences[0]->node == "/Add");
  CHECK(runs[1].fences[0]->op_type == "Add");
}

TEST_CASE("a file cut short keeps its complete events and says what it skipped") {
  const std::string text = read_text(fixture("ort-1.30-linreg-disabled.json"));
  const ProfileFile f = parse_profile(text.substr(0, text.size() / 2), "cut.json");
  CHECK(!f.events.empty());
  REQUIRE(f.warnings.size() == 1);
  CHECK(f.warnings[0].find("cut.json: 1 line(s)") == 0);
}

TEST_CASE("lenient reading: numbers or strings, graph_index, unknown fields, Chrome's object form, bad names") {
  const ProfileFile f = parse_profile(R"([
{"cat":"Session","name":"model_run","ts":"10","dur":"100","ph":"X","pid":1,"tid":1,"args":{}},
{"cat":"Node","name":"n1_kernel_time","ts":20,"dur":5.4,"args":{"op_name":"Relu","graph_index":"7","exec_plan_index":"0","future":{"x":1}}},
{"cat":"Node","name":"dml_kernel_time","ts":30,"dur":2},
{"cat":"Node","name":"bad "quoted" name_kernel_time","ts":40,"dur":1,"args":{"op_name":"Relu"}},
{"no_name":1}
])",
                                      "crafted.json");
  REQUIRE(f.events.size() == 3);
  CHECK(f.warnings.size() == 2);  // the unescaped name's line, the element without a name
  CHECK(f.events[0].dur == 100);
  CHECK(f.events[1].node_index == 7);
  CHECK(f.events[1].dur == 5);
  CHECK(f.events[1].extra_args.contains("future"));
  CHECK(f.events[2].op_type.empty());  // no args at all (DirectML fused nodes)
  const ProfileFile chrome = parse_profile(R"({"traceEvents":[{"cat":"Session","name":"model_run","ts":0,"dur":1}]})", "c.json");
  CHECK(chrome.events.size() == 1);
  // Not numbers: a string with more after its digits, a float beyond int64 (what llround cannot
  // give); such a field reads as absent, never as a made-up value.
  const ProfileFile odd = parse_profile(R"([
{"cat":"Node","name":"n_kernel_time","ts":"12abc","dur":1e300,"args":{"op_name":"Relu","node_index":"3 ","activation_size":-1e19,
 "input_type_shape":{"0":{"float":[1,9]}},"output_type_shape":["float",{},{"float":[2]}]}},
{"cat":"Node","name":"m_kernel_time","ts":5,"dur":2,"args":[{"op_name":"Relu"}]}
])",
                                        "odd.json");
  REQUIRE(odd.events.size() == 2);
  CHECK(odd.events[0].ts == 0);
  CHECK(odd.events[0].dur == 0);
  CHECK(!odd.events[0].node_index);
  CHECK(odd.events[0].activation_size == 0);
  CHECK(odd.events[0].inputs.empty());  // shapes come as a list, never as an object of them
  // in the list, only {type: shape} objects are shapes
  REQUIRE(odd.events[0].outputs.size() == 1);
  CHECK(odd.events[0].outputs[0].shape == std::vector<int64_t>{2});
  CHECK(odd.events[1].op_type.empty());  // args as a list: no fields read from it
}

TEST_CASE("files that are not profiles are input errors naming the file") {
  auto fails = [](const std::string& text, const std::string& message) {
    CHECK_THROWS_WITH_AS(parse_profile(text, "bad.json"), doctest::Contains(message.c_str()), Error);
    try {
      parse_profile(text, "bad.json");
    } catch (const Error& e) {
      CHECK(e.kind() == ErrorKind::Input);
    }
  };
  fails("", "bad.json: empty file");
  fails("[]", "bad.json: no events");
  fails("{\"a\": 1}", "bad.json: not a profile: expected a JSON array");
  fails("this is not json", "bad.json: not a profile: no event could be read");
  fails("[1, 2, 3]", "bad.json: no events");
  CHECK_THROWS_WITH_AS(read_profile("/nonexistent/p.json"), doctest::Contains("cannot open"), Error);
}

TEST_CASE("run selection: the warm-up left out, --runs as a Python slice") {
  const ProfileFile f = read_profile(fixture("ort-1.30-linreg-disabled.json"));
  auto indices = [&](RunSelection s) {
    std::vector<int> out;
    for (const Run& r : select_runs(split_runs(f), s)) out.push_back(r.index);
    return out;
  };
  CHECK(indices({}) == std::vector<int>{1, 2, 3});
  CHECK(indices({.include_warmup = true}) == std::vector<int>{0, 1, 2, 3});
  CHECK(indices({.range = "2:"}) == std::vector<int>{2, 3});
  CHECK(indices({.range = ":-1"}) == std::vector<int>{0, 1, 2});
  CHECK(indices({.range = "-1:"}) == std::vector<int>{3});
  CHECK_THROWS_WITH_AS(indices({.range = "3:1"}), doctest::Contains("empty"), Error);
  CHECK_THROWS_WITH_AS(indices({.range = "x"}), doctest::Contains("not a range"), Error);
  CHECK_THROWS_WITH_AS(indices({.range = "2"}), doctest::Contains("not a range"), Error);  // one run is 2:3
  CHECK_THROWS_WITH_AS(indices({.range = "1:x"}), doctest::Contains("not a range"), Error);
  CHECK_THROWS_WITH_AS(indices({.range = "1:2x"}), doctest::Contains("not a range"), Error);
}

TEST_CASE("a file without model_run events is read as one run") {
  const ProfileFile f = parse_profile(R"([{"cat":"Node","name":"a_kernel_time","ts":5,"dur":2,"args":{"op_name":"Relu"}},
{"cat":"Node","name":"b_kernel_time","ts":9,"dur":3,"args":{"op_name":"Relu"}}])",
                                      "norun.json");
  std::vector<std::string> warnings;
  const std::vector<Run> runs = split_runs(f, &warnings);
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].kernels.size() == 2);
  CHECK(runs[0].dur == 7);
  CHECK(warnings.size() == 1);
}

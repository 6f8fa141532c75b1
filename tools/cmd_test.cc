// `refeval test PATH...`: runs ONNX backend test folders (CLI.md, `refeval test`): each test's
// data sets are fed, its outputs compared with the expected ones, and the results checked against
// a reviewed expected-failures list, so both unexpected failures and unexpected passes fail.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "refeval/compare.h"
#include "refeval/model_io.h"
#include "refeval/trace.h"
#include "verbs.h"

namespace refeval::cli {
namespace {

namespace fs = std::filesystem;

struct TestCase {
  std::string name;
  fs::path model;
  std::vector<fs::path> data_sets;  // test_data_set_* folders (backend layout)
  fs::path light_output;            // light layout: expected output_0, inputs generated
  Tolerance tol;
};

struct Outcome {
  enum Status { Pass, Fail, NoData } status = Pass;
  std::string reason;
  double seconds = 0;
};

std::vector<fs::path> sorted_dirs(const fs::path& dir, const std::string& prefix) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_directory() && e.path().filename().string().rfind(prefix, 0) == 0) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

Tolerance light_tolerance(const fs::path& light_dir, const std::string& net) {
  Tolerance tol;
  const fs::path json = light_dir.parent_path() / "real" / ("test_" + net) / "data.json";
  if (!fs::exists(json)) return tol;
  try {
    std::ifstream in(json);
    const auto j = nlohmann::json::parse(in);
    tol.rtol = j.value("rtol", tol.rtol);
    tol.atol = j.value("atol", tol.atol);
  } catch (const std::exception& e) {
    fail_input(fmt::format("{}: {}", json.string(), e.what()));
  }
  return tol;
}

void collect(const fs::path& path, std::vector<TestCase>& tests) {
  if (!fs::is_directory(path)) fail_usage(fmt::format("{}: not a test folder", path.string()));
  if (fs::exists(path / "model.onnx")) {
    tests.push_back({path.filename().string(), path / "model.onnx", sorted_dirs(path, "test_data_set"), {}, {}});
    return;
  }
  bool found = false;
  std::vector<fs::path> entries;
  for (const auto& e : fs::directory_iterator(path)) entries.push_back(e.path());
  std::sort(entries.begin(), entries.end());
  for (const auto& p : entries) {
    const std::string file = p.filename().string();
    if (fs::is_directory(p) && fs::exists(p / "model.onnx")) {
      tests.push_back({file, p / "model.onnx", sorted_dirs(p, "test_data_set"), {}, {}});
      found = true;
    } else if (file.rfind("light_", 0) == 0 && p.extension() == ".onnx") {
      const std::string net = file.substr(6, file.size() - 6 - 5);
      tests.push_back({"light_" + net, p, {}, path / ("light_" + net + "_output_0.pb"), light_tolerance(path, net)});
      found = true;
    }
  }
  if (!found) fail_usage(fmt::format("{}: holds no test (no model.onnx, no test folders, no light_*.onnx)", path.string()));
}

// One reviewed expected failure: why, and what the failure says (a part of its message), so that a
// test failing some other way is an unexpected failure.
struct ExpectedFailure {
  std::string reason;  // "tag: reason"
  std::string fails;   // "output 'y': element"
};

std::map<std::string, ExpectedFailure> read_expected_failures(const std::string& file) {
  std::map<std::string, ExpectedFailure> out;
  std::ifstream in(file);
  if (!in) fail_usage(fmt::format("cannot read expected-failures file '{}'", file));
  std::string line;
  int number = 0;
  static const std::regex entry(R"(^(\S+)\t+([a-z-]+): (\S[^\t]*)\t+fails: (\S.*)$)");
  while (std::getline(in, line)) {
    ++number;
    if (line.empty() || line[0] == '#') continue;
    std::smatch m;
    if (!std::regex_match(line, m, entry))
      fail_usage(fmt::format("{}:{}: expected 'test_name<TAB>tag: reason<TAB>fails: what the failure says'", file, number));
    if (m[1].str().find_first_of("*?[") != std::string::npos)
      fail_usage(fmt::format("{}:{}: wildcards are not allowed", file, number));
    if (!out.emplace(m[1], ExpectedFailure{m[2].str() + ": " + m[3].str(), m[4].str()}).second)
      fail_usage(fmt::format("{}:{}: '{}' is listed twice", file, number, m[1].str()));
  }
  return out;
}

// light/: every input is arange(n)/n in float32, symbolic dimensions set to 1 (SOURCE.md).
std::map<std::string, Value> light_inputs(const ReferenceEvaluator& ev) {
  std::map<std::string, Value> feeds;
  for (const ValueInfo* vi : ev.model().graph.feed_inputs()) {
    Shape shape;
    for (const Dim& d : vi->type.dims) shape.push_back(d.fixed() ? d.value : 1);
    Tensor t(DType::Float, shape);
    for (int64_t i = 0; i < t.size(); ++i) t.data<float>()[i] = float(double(i) / double(t.size()));
    feeds[vi->name] = t;
  }
  return feeds;
}

std::map<std::string, Value> data_set_inputs(const ReferenceEvaluator& ev, const fs::path& dir) {
  const Graph& g = ev.model().graph;
  size_t files = 0;
  while (fs::exists(dir / fmt::format("input_{}.pb", files))) ++files;
  std::vector<const ValueInfo*> targets = g.feed_inputs();
  if (files > targets.size() && files <= g.inputs.size()) {  // old models list initializers as inputs too
    targets.clear();
    for (const auto& i : g.inputs) targets.push_back(&i);
  }
  if (files > targets.size())
    fail_input(fmt::format("{}: {} input files but the model has {} inputs", dir.string(), files, targets.size()));
  std::map<std::string, Value> feeds;
  for (size_t k = 0; k < files; ++k)
    feeds[targets[k]->name] = read_value_pb((dir / fmt::format("input_{}.pb", k)).string(), &targets[k]->type);
  return feeds;
}

Outcome run_test(const TestCase& t, const Registry& reg, int trace_level) {
  Outcome o;
  const auto start = std::chrono::steady_clock::now();
  try {
    ReferenceEvaluator ev(load_model(t.model.string()), {&reg});
    TraceObserver trace(trace_level);
    if (trace_level >= 2) ev.add_observer(&trace);
    const auto& outs = ev.model().graph.outputs;
    auto check = [&](const std::map<std::string, Value>& feeds, const std::vector<Value>& expected, const std::string& where) {
      const Values got = ev.run({}, feeds);
      for (size_t k = 0; k < expected.size() && o.status == Outcome::Pass; ++k) {
        Comparison c = compare_values(got[k], expected[k], t.tol);
        if (!c.equal) {
          o.status = Outcome::Fail;
          o.reason = fmt::format("{}output '{}': {}", where, outs[k].name, c.reason);
        }
      }
    };
    if (!t.light_output.empty()) {
      if (!fs::exists(t.light_output)) { o.status = Outcome::NoData; o.reason = "no expected output file"; return o; }
      check(light_inputs(ev), {read_value_pb(t.light_output.string(), &outs.at(0).type)}, "");
    } else if (t.data_sets.empty()) {
      o.status = Outcome::NoData;
      o.reason = "no test_data_set folder";
    }
    for (const auto& dir : t.data_sets) {
      std::vector<Value> expected;
      for (size_t k = 0; fs::exists(dir / fmt::format("output_{}.pb", k)); ++k) {
        if (k >= outs.size()) fail_input(fmt::format("{}: more output files than model outputs", dir.string()));
        expected.push_back(read_value_pb((dir / fmt::format("output_{}.pb", k)).string(), &outs[k].type));
      }
      const std::string where = t.data_sets.size() > 1 ? dir.filename().string() + ": " : "";
      check(data_set_inputs(ev, dir), expected, where);
      if (o.status != Outcome::Pass) break;
    }
  } catch (const std::exception& e) {
    o.status = Outcome::Fail;
    o.reason = e.what();
  }
  o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return o;
}

class TestVerb : public Verb {
 public:
  void setup(CLI::App* sub) override {
    sub->add_option("paths", paths_, "test folders, or folders of test folders")->required();
    sub->add_option("--filter", filter_, "REGEX: only tests whose name matches");
    sub->add_option("--expected-failures", xfail_file_, "FILE: the reviewed expected-failures list");
    sub->add_option("--json", json_file_, "FILE: write per-test results as JSON");
    sub->add_flag("--list", list_, "print a line per test");
    sub->add_option("--verbose,-v", verbose_, "print the trace of each failing test at this level");
    sub->add_option("--rtol", rtol_, "relative tolerance (default 1e-3)");
    sub->add_option("--atol", atol_, "absolute tolerance (default 1e-7)");
    sub->add_option("--row-rtol", row_rtol_, "R: also allow R times the largest magnitude of the expected output's row (its last axis; default 0)");
  }

  int execute(const GlobalOptions& g) override {
    std::vector<TestCase> tests;
    for (const auto& p : paths_) collect(p, tests);
    if (rtol_ || atol_ || row_rtol_)
      for (auto& t : tests) {
        if (rtol_) t.tol.rtol = *rtol_;
        if (atol_) t.tol.atol = *atol_;
        if (row_rtol_) t.tol.row_rtol = *row_rtol_;
      }
    std::regex filter;
    try { filter = std::regex(filter_.empty() ? ".*" : filter_); }
    catch (const std::regex_error& e) { fail_usage(fmt::format("--filter: invalid regular expression: {}", e.what())); }
    const auto xfail = xfail_file_.empty() ? std::map<std::string, ExpectedFailure>{} : read_expected_failures(xfail_file_);
    const Registry& reg = registry(g);

    int passed = 0, failed = 0, skipped = 0, expected_failures = 0, no_data = 0;
    std::vector<std::string> unexpected_failures, unexpected_passes;
    nlohmann::json results = nlohmann::json::array();
    std::vector<const TestCase*> selected;
    for (const TestCase& t : tests)
      if (std::regex_search(t.name, filter)) selected.push_back(&t);
    Progress progress("test", selected.size());
    for (const TestCase* tp : selected) {
      const TestCase& t = *tp;
      progress.step(t.name);
      const Outcome o = run_test(t, reg, 0);
      const auto x = xfail.find(t.name);
      std::string status;
      // A test without data is a failure: a folder that tests nothing must not pass.
      const bool as_listed = x != xfail.end() && o.reason.find(x->second.fails) != std::string::npos;
      if (o.status == Outcome::NoData) { status = "no-data"; ++failed; ++no_data; unexpected_failures.push_back(t.name); }
      else if (o.status == Outcome::Pass && x == xfail.end()) { status = "passed"; ++passed; }
      else if (o.status == Outcome::Pass) { status = "unexpected-pass"; ++failed; unexpected_passes.push_back(t.name); }
      else if (as_listed) { status = "expected-failure"; ++skipped; ++expected_failures; }
      else { status = "failed"; ++failed; unexpected_failures.push_back(t.name); }
      if (list_ || status == "failed" || status == "no-data" || status == "unexpected-pass") Progress::clear();
      if (list_) fmt::print("{:<16} {} ({:.3f} s){}\n", status, t.name, o.seconds, o.reason.empty() ? "" : ": " + o.reason);
      else if (status == "failed" && x != xfail.end())
        fmt::print("FAIL {}: {} (listed as failing with '{}')\n", t.name, o.reason, x->second.fails);
      else if (status == "failed") fmt::print("FAIL {}: {}\n", t.name, o.reason);
      else if (status == "no-data") fmt::print("FAIL {}: no test data ({})\n", t.name, o.reason);
      else if (status == "unexpected-pass") fmt::print("UNEXPECTED PASS {} (listed as {})\n", t.name, x->second.reason);
      if (status == "failed" && verbose_ >= 2) {
        std::fflush(stdout);
        run_test(t, reg, verbose_);
      }
      results.push_back({{"name", t.name}, {"status", status}, {"reason", o.reason}, {"seconds", o.seconds},
                         {"expected_failure", x == xfail.end() ? "" : x->second.reason}});
    }
    Progress::clear();
    if (!json_file_.empty()) {
      std::ofstream out(json_file_);
      out << results.dump(2) << "\n";
      if (!out) fail_usage(fmt::format("cannot write '{}'", json_file_));
    }
    fmt::print("unexpected failures: {}; unexpected passes: {}; expected failures: {}; could not run: {}\n",
               unexpected_failures.size(), unexpected_passes.size(), expected_failures, no_data);
    fmt::print("{} passed, {} failed, {} skipped\n", passed, failed, skipped);
    return failed ? kCheckFailed : kOk;
  }

 private:
  std::vector<std::string> paths_;
  std::string filter_, xfail_file_, json_file_;
  bool list_ = false;
  int verbose_ = 0;
  std::optional<double> rtol_, atol_, row_rtol_;
};

}  // namespace

std::unique_ptr<Verb> make_test_verb() { return std::make_unique<TestVerb>(); }

}  // namespace refeval::cli

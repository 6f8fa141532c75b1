// `refeval compare A B`: run two models (or a model and a dump folder, or two dumps) on the same
// feeds and compare their outputs, initializers and, with --per-tensor, every value both hold,
// in A's execution order. Names the first value beyond tolerance and the node that made it.
#include <filesystem>
#include <fstream>
#include <algorithm>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "refeval/compare.h"
#include "refeval/dump.h"
#include "refeval/format.h"
#include "refeval/model_io.h"
#include "refeval/run_diff.h"
#include "verbs.h"

namespace refeval::cli {
namespace {
namespace fs = std::filesystem;
using json = nlohmann::json;

// One side of the comparison: a model run here, or a dump folder.
struct Side {
  std::string path;
  std::optional<ReferenceEvaluator> ev;  // set for a model
  std::vector<ValueRecord> records;      // every value, in execution order
  std::map<std::string, size_t> by_name;
  const ValueRecord* find(const std::string& name) const {
    auto it = by_name.find(name);
    return it == by_name.end() ? nullptr : &records[it->second];
  }
};

std::string node_text(const ValueRecord& r) {
  return r.node.empty() ? std::string("a feed") : fmt::format("node '{}' ({})", r.node, r.op_type);
}

json diff_json(const ValueDiff& d) {
  json j = {{"name", d.a->name}, {"equal", d.c.equal}, {"max_abs", d.c.max_abs}, {"max_rel", d.c.max_rel},
            {"mismatches", d.c.mismatches}, {"reason", d.c.reason}};
  j["node"] = d.a->node.empty() ? json(nullptr) : json(d.a->node);
  j["op_type"] = d.a->op_type.empty() ? json(nullptr) : json(d.a->op_type);
  if (d.b->name != d.a->name) j["name_in_b"] = d.b->name;
  return j;
}

std::string diff_text(const ValueDiff& d) {
  std::string text = fmt::format("  {} {}", d.c.equal ? "ok  " : "DIFF", d.a->name);
  if (d.b->name != d.a->name) text += fmt::format(" (B: {})", d.b->name);
  if (!d.a->node.empty()) text += fmt::format(" from {}", node_text(*d.a));
  // A kind, type or shape mismatch has no element errors to show, only its reason.
  if (!d.c.equal && d.c.mismatches == 0) return text + ": " + d.c.reason;
  text += fmt::format(": max abs {}, max rel {}", python_float(d.c.max_abs), python_float(d.c.max_rel));
  if (!d.c.equal) text += fmt::format(", {} beyond tolerance; {}", d.c.mismatches, d.c.reason);
  return text;
}

size_t count_different(const std::vector<ValueDiff>& diffs) {
  return size_t(std::count_if(diffs.begin(), diffs.end(), [](const ValueDiff& d) { return !d.c.equal; }));
}

class CompareVerb : public Verb {
 public:
  void setup(CLI::App* sub) override {
    sub->add_option("a", a_.path, "model A (.onnx) or a dump folder")->required();
    sub->add_option("b", b_.path, "model B (.onnx) or a dump folder (`run --dump`, or another runtime's)")->required();
    inputs_.add_to(sub);
    sub->add_option("--rtol", tol_.rtol, "relative tolerance (default 1e-3)");
    sub->add_option("--atol", tol_.atol, "absolute tolerance (default 1e-7)");
    sub->add_flag("--per-tensor", per_tensor_, "compare every value both sides hold, in A's execution order");
    sub->add_option("--json", json_path_, "FILE: write the comparison as JSON");
  }

  int execute(const GlobalOptions& g) override {
    open(a_, g);
    open(b_, g);
    run_models();
    if (a_.records.empty() || b_.records.empty()) fail_usage("nothing to compare: a side holds no values");

    const RunDiff diff = diff_runs(a_.records, b_.records, tol_);
    const std::vector<ValueDiff> outputs = compare_outputs();
    if (diff.initializers.empty() && diff.values.empty() && outputs.empty())
      fail_usage(fmt::format("{} and {} share no value names", a_.path, b_.path));
    const ValueDiff* first = diff.first_difference();
    const size_t init_diffs = count_different(diff.initializers), output_diffs = count_different(outputs),
                 value_diffs = count_different(diff.values);
    const bool equal = init_diffs == 0 && output_diffs == 0 && (!per_tensor_ || value_diffs == 0);

    fmt::print("A: {} ({} values)\nB: {} ({} values)\n", a_.path, a_.records.size(), b_.path, b_.records.size());
    fmt::print("shared: {} values, {} initializers; only in A: {}, only in B: {}; rtol {}, atol {}\n", diff.values.size(),
               diff.initializers.size(), diff.only_in_a, diff.only_in_b, python_float(tol_.rtol), python_float(tol_.atol));
    fmt::print("initializers: {} of {} differ\n", init_diffs, diff.initializers.size());
    for (const ValueDiff& d : diff.initializers)
      if (!d.c.equal) fmt::print("{}\n", diff_text(d));
    if (per_tensor_) {
      fmt::print("values: {} of {} differ\n", value_diffs, diff.values.size());
      for (const ValueDiff& d : diff.values) fmt::print("{}\n", diff_text(d));
    }
    fmt::print("outputs: {} of {} differ\n", output_diffs, outputs.size());
    for (const ValueDiff& d : outputs) fmt::print("{}\n", diff_text(d));
    for (const auto& m : missing_outputs_) fmt::print("  missing {}\n", m);
    if (first && !equal)
      fmt::print("first difference: '{}' from {}: {}\n", first->a->name, node_text(*first->a), first->c.reason);
    fmt::print("result: {}\n", equal ? "equal within tolerance" : "different");

    if (!json_path_.empty()) {
      json j = {{"a", a_.path}, {"b", b_.path}, {"rtol", tol_.rtol}, {"atol", tol_.atol}, {"equal", equal},
                {"outputs", json::array()}, {"initializers", json::array()}, {"values", json::array()}};
      for (const ValueDiff& d : outputs) j["outputs"].push_back(diff_json(d));
      for (const ValueDiff& d : diff.initializers) j["initializers"].push_back(diff_json(d));
      if (per_tensor_)
        for (const ValueDiff& d : diff.values) j["values"].push_back(diff_json(d));
      j["first_difference"] = first ? diff_json(*first) : json(nullptr);
      std::ofstream out(json_path_);
      out << j.dump(2) << "\n";
      if (!out) fail_input(fmt::format("--json: cannot write '{}'", json_path_));
    }
    std::fflush(stdout);
    return equal ? kOk : kCheckFailed;
  }

 private:
  void open(Side& s, const GlobalOptions& g) {
    if (fs::is_directory(s.path)) {
      s.records = read_dump(s.path);
    } else {
      s.ev.emplace(open_model(s.path), EvaluatorOptions{&registry(g)});
    }
  }

  bool explicit_inputs() const { return !inputs_.inputs.empty() || !inputs_.inputs_dir.empty() || !inputs_.fills.empty(); }

  // Feeds: the input options for the first model; a dump's own inputs, unless input options are
  // given; the second model takes what the first was fed, so both run on the same values.
  void run_models() {
    std::map<std::string, Value> pool;
    if (!explicit_inputs())
      for (const Side* s : {&a_, &b_})
        for (const ValueRecord& r : s->records)
          if (r.source == ValueRecord::Source::Input) pool.emplace(r.name, r.value);
    bool first_model = true;
    for (Side* s : {&a_, &b_}) {
      if (!s->ev) continue;
      InputOptions opts = inputs_;
      if (!first_model) restrict_to(opts, s->ev->model().graph);
      first_model = false;
      auto feeds = make_feeds(*s->ev, opts);
      for (auto& [name, v] : feeds)
        if (auto it = pool.find(name); it != pool.end()) v = it->second;
      for (const auto& [name, v] : feeds) pool.emplace(name, v);
      RecordObserver record;
      s->ev->add_observer(&record);
      s->ev->run({}, feeds);
      s->ev->remove_observer(&record);
      s->records = record.records();
    }
    for (Side* s : {&a_, &b_})
      for (size_t i = 0; i < s->records.size(); ++i) s->by_name.emplace(s->records[i].name, i);
  }

  // The second model ignores --input/--fill entries for inputs only the first one has.
  static void restrict_to(InputOptions& opts, const Graph& graph) {
    auto drop = [&](std::vector<std::string>& specs) {
      std::erase_if(specs, [&](const std::string& spec) { return !graph.find_input(spec.substr(0, spec.find('='))); });
    };
    drop(opts.inputs);
    drop(opts.fills);
  }

  // A model's graph outputs against the same names on the other side; two models whose output
  // names differ are paired by position.
  std::vector<ValueDiff> compare_outputs() {
    const Side* model = a_.ev ? &a_ : b_.ev ? &b_ : nullptr;
    std::vector<ValueDiff> rows;
    if (!model) return rows;
    const auto names = model->ev->output_names();
    const auto b_names = b_.ev ? b_.ev->output_names() : std::vector<std::string>{};
    for (size_t k = 0; k < names.size(); ++k) {
      const ValueRecord* a = a_.find(names[k]);
      const ValueRecord* b = b_.find(names[k]);
      if (a_.ev && b_.ev && !b && k < b_names.size()) b = b_.find(b_names[k]);
      if (!a || !b) {
        missing_outputs_.push_back(fmt::format("{} (not in {})", names[k], !a ? a_.path : b_.path));
        continue;
      }
      rows.push_back({a, b, compare_values(a->value, b->value, tol_)});
    }
    return rows;
  }

  Side a_, b_;
  InputOptions inputs_;
  Tolerance tol_;
  bool per_tensor_ = false;
  std::string json_path_;
  std::vector<std::string> missing_outputs_;
};

}  // namespace

std::unique_ptr<Verb> make_compare_verb() { return std::make_unique<CompareVerb>(); }

}  // namespace refeval::cli

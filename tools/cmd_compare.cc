// `refeval compare A B`: run two models (or a model and a dump folder, or two dumps) on the same
// feeds and compare their outputs, initializers and, with --per-tensor, every value both hold,
// in A's execution order. Names the first value beyond tolerance and the node that made it.
// Over data: with --input-set / --random-sets, statistics per output over many input sets
// (quality/output_stats.h); with --tokens or --text, two language models' perplexity, KL and
// agreement on token windows (quality/lm_compare.h). Their gates exit 3 when not met.
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
#include "quality/lm_compare.h"
#include "quality/lm_html.h"
#include "quality/lm_tokens.h"
#include "quality/output_stats.h"
#include "tokenizer/tokenizer.h"
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
    // Over many input sets.
    sub->add_option("--input-set", input_sets_, "DIR: one input set (input_K.pb or NAME.npy files); repeatable: statistics over the sets");
    sub->add_option("--random-sets", random_sets_, "N: N input sets generated from seeds --seed .. --seed + N - 1")->check(CLI::Range(1, 1000000));
    sub->add_option("--min-snr", min_snr_, "DB: over sets, fail (exit 3) when an output's lowest SNR is below this");
    sub->add_option("--min-cosine", min_cosine_, "C: over sets, fail (exit 3) when an output's lowest cosine similarity is below this");
    // Language models on token windows.
    sub->add_option("--tokens", tokens_, "FILE.npy: int64 (or int32) token ids (rows, length): compare two decoders' next-token predictions");
    sub->add_option("--text", text_, "FILE: a text, encoded with --tokenizer, as the token ids");
    sub->add_option("--tokenizer", tokenizer_, "T.json: the tokenizer of --text (Hugging Face's tokenizer.json); also shows tokens in --html");
    sub->add_option("--context", lm_.context, "N: windows of N tokens (default: each row whole; with --text, required)")->check(CLI::Range(2, 1 << 24));
    sub->add_option("--generate", lm_.generate, "K: greedy decoding of K steps from each window's first half on both; the first step their ids differ")
        ->check(CLI::Range(1, 1 << 20));
    sub->add_option("--max-kl", max_kl_, "X: fail (exit 3) when the mean KL(A||B) per token is above X");
    sub->add_option("--min-top1", min_top1_, "F: fail (exit 3) when the top-1 agreement is below F (0-1)");
    sub->add_option("--max-perplexity-ratio", max_ppl_ratio_, "R: fail (exit 3) when B's perplexity / A's is above R");
    sub->add_flag("--emulate-accuracy-level-b", lm_.emulate_b, "with --tokens/--text: run B with ONNX Runtime's accuracy_level 4 "
                  "arithmetic (int8 MatMulNBits) and A exact: one model against itself, as ORT would run it");
    sub->add_option("--html", html_, "FILE: with --tokens/--text, a page of the KL along each window and where the models disagree most");
  }

  int execute(const GlobalOptions& g) override {
    const bool lm = !tokens_.empty() || !text_.empty();
    const bool sets = !input_sets_.empty() || random_sets_ > 0;
    if (lm && sets) fail_usage("--tokens/--text and --input-set/--random-sets are two different comparisons: choose one");
    if (!lm && (max_kl_ || min_top1_ || max_ppl_ratio_ || !html_.empty() || lm_.generate || lm_.context || lm_.emulate_b))
      fail_usage("--max-kl, --min-top1, --max-perplexity-ratio, --html, --generate, --context and --emulate-accuracy-level-b need "
                 "--tokens or --text");
    if (!sets && (min_snr_ || min_cosine_)) fail_usage("--min-snr and --min-cosine need --input-set or --random-sets");
    if (lm) return compare_language_models(g);
    if (sets) return compare_over_sets(g);
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
      write_json(j);
    }
    std::fflush(stdout);
    return equal ? kOk : kCheckFailed;
  }

 private:
  // Two models, each loaded for the comparisons over data (dumps have no runs to make).
  std::pair<ReferenceEvaluator, ReferenceEvaluator> two_models(const GlobalOptions& g) const {
    for (const std::string* p : {&a_.path, &b_.path})
      if (fs::is_directory(*p)) fail_usage(fmt::format("{}: a dump folder: comparisons over data run two models", *p));
    return {ReferenceEvaluator(open_model(a_.path), EvaluatorOptions{&registry(g)}),
            ReferenceEvaluator(open_model(b_.path), EvaluatorOptions{&registry(g)})};
  }

  template <class Json>
  void write_json(const Json& j) const {
    std::ofstream out(json_path_);
    out << j.dump(2) << "\n";
    if (!out) fail_input(fmt::format("--json: cannot write '{}'", json_path_));
  }

  int gate(bool passed, nlohmann::ordered_json j) const {
    j["passed"] = passed;
    if (!json_path_.empty()) write_json(j);
    fmt::print("result: {}\n", passed ? "passed" : "FAILED (a gate was not met)");
    std::fflush(stdout);
    return passed ? kOk : kCheckFailed;
  }

  int compare_language_models(const GlobalOptions& g) {
    std::optional<tokenizer::Tokenizer> tok;
    if (!tokenizer_.empty()) tok = tokenizer::Tokenizer::load(tokenizer_);
    lm_.tokens = quality::lm_tokens(tokens_, text_, tok ? &*tok : nullptr, lm_.context);
    auto [a, b] = two_models(g);
    const quality::LmFigures f = quality::compare_language_models(a, a_.path, b, b_.path, lm_);
    fmt::print("A: {}\nB: {}\n{} window(s) of {} tokens: {} predictions\n", a_.path, b_.path, f.windows, f.context, f.tokens);
    const bool passed = quality::print_lm_figures(f, {max_kl_, min_top1_, max_ppl_ratio_});
    if (!html_.empty()) {
      std::function<std::string(int64_t)> text;
      if (tok) text = [&](int64_t id) { return tok->decode({id}); };
      write_output(html_, quality::lm_html(f, a_.path, b_.path, text), "html");
    }
    nlohmann::ordered_json j = f.to_json(true);
    j["a"] = a_.path, j["b"] = b_.path;
    return gate(passed, std::move(j));
  }

  // Statistics per output over the input sets; B gets the feeds made for A.
  int compare_over_sets(const GlobalOptions& g) {
    auto [a, b] = two_models(g);
    std::vector<std::pair<std::string, InputOptions>> sets;
    for (const std::string& dir : input_sets_) sets.emplace_back(dir, input_set_options(inputs_, dir));
    for (int k = 0; k < random_sets_; ++k) {
      InputOptions o = inputs_;
      o.seed = inputs_.seed + uint64_t(k);
      sets.emplace_back(fmt::format("seed {}", o.seed), o);
    }
    const std::vector<std::string> names_a = a.output_names(), names_b = b.output_names();
    if (names_a.size() != names_b.size())
      fail_usage(fmt::format("{} has {} outputs, {} has {}", a_.path, names_a.size(), b_.path, names_b.size()));
    std::vector<quality::OutputStats> stats(names_a.size());
    for (size_t k = 0; k < stats.size(); ++k) stats[k].name = names_a[k];
    for (const auto& [label, opts] : sets) {
      const auto feeds = make_feeds(a, opts);
      std::map<std::string, Value> feeds_b;
      for (const std::string& name : b.input_names())
        if (auto it = feeds.find(name); it != feeds.end()) feeds_b.emplace(name, it->second);
      const Values out_a = a.run({}, feeds), out_b = b.run({}, feeds_b);
      for (size_t k = 0; k < stats.size(); ++k) {
        if (!out_a[k].is_tensor() || !out_b[k].is_tensor()) fail_usage(fmt::format("output '{}' is not a tensor", names_a[k]));
        stats[k].add(label, out_a[k].tensor(), out_b[k].tensor());
      }
    }
    fmt::print("A: {}\nB: {}\n{} input set(s)\n", a_.path, b_.path, sets.size());
    fmt::print("{:<24} {:>11} {:>11} {:>11} {:>10} {:>8}  {}\n", "output", "max_abs", "max_rel", "cosine_min", "snr_db_min", "top1", "worst set");
    bool passed = true;
    nlohmann::ordered_json j = {{"mode", "data"}, {"a", a_.path}, {"b", b_.path}, {"sets", sets.size()}, {"outputs", nlohmann::ordered_json::array()}};
    for (const quality::OutputStats& s : stats) {
      fmt::print("{:<24} {:>11.4g} {:>11.4g} {:>11.7f} {:>10.2f} {:>8.4f}  {}\n", s.name, s.max_abs, s.max_rel, s.cosine_min, s.snr_db_min,
                 s.top1_agreement(), s.worst_set);
      if (min_snr_ && s.snr_db_min < *min_snr_) fmt::print("gate: '{}' SNR {:.2f} dB < --min-snr {}\n", s.name, s.snr_db_min, *min_snr_), passed = false;
      if (min_cosine_ && s.cosine_min < *min_cosine_)
        fmt::print("gate: '{}' cosine {:.7f} < --min-cosine {}\n", s.name, s.cosine_min, *min_cosine_), passed = false;
      j["outputs"].push_back(s.to_json());
    }
    return gate(passed, std::move(j));
  }

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
  std::vector<std::string> input_sets_;
  int random_sets_ = 0;
  std::optional<double> min_snr_, min_cosine_, max_kl_, min_top1_, max_ppl_ratio_;
  std::string tokens_, text_, tokenizer_, html_;
  quality::LmOptions lm_;
};

}  // namespace

std::unique_ptr<Verb> make_compare_verb() { return std::make_unique<CompareVerb>(); }

}  // namespace refeval::cli

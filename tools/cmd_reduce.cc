// `refeval reduce MODEL -o SMALL.onnx [input options] PREDICATE`: shrinks a failing model to a
// small subgraph that still fails (tools/debug/reduce.h has the algorithm) and writes it with a
// test_data_set_K/ beside it, so the bug report runs in `refeval test` and in any other runtime.
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>

#include "debug/reduce.h"
#include "refeval/dump.h"
#include "refeval/model_io.h"
#include "verbs.h"

namespace refeval::cli {
namespace {
namespace fs = std::filesystem;

std::atomic<bool> g_interrupted{false};
extern "C" void on_interrupt(int) { g_interrupted = true; }

class ReduceVerb : public Verb {
 public:
  void setup(CLI::App* sub) override {
    sub->add_option("model", model_, "the failing .onnx model")->required();
    sub->add_option("-o,--output", out_, "SMALL.onnx (or a folder: FOLDER/model.onnx); test_data_set_K/ is written beside it")
        ->required();
    inputs_.add_to(sub);
    sub->add_option("--input-set", input_sets_,
                    "DIR: an input set in the backend-test layout (repeatable; replaces --inputs, other input options apply to each)");
    sub->add_flag("--nan", nan_, "predicate: a node still makes a new NaN or Inf");
    sub->add_option("--compare-with", dump_dir_,
                    "DUMP_DIR: predicate: a node's output still differs from the dump (`run --dump` or another runtime's)");
    sub->add_option("--rtol", tol_.rtol, "relative tolerance for --compare-with (default 1e-3)");
    sub->add_option("--atol", tol_.atol, "absolute tolerance for --compare-with (default 1e-7)");
    sub->add_option("--check", check_, "\"CMD {model} {inputs}\": predicate: the command still exits non-zero");
    sub->add_option("--error", error_, "REGEX: predicate: refeval's run still fails with a matching message");
    sub->add_option("--mode", mode_, "bisect, linear, or both (default: bisect, then linear on the result)")
        ->check(CLI::IsMember({"bisect", "linear", "both"}));
    sub->add_option("--freeze", freeze_, "cut branches become graph inputs (default) or constants")
        ->check(CLI::IsMember({"inputs", "constants"}));
    auto* all = sub->add_flag("--all-sets", all_sets_, "the predicate must hold on every input set (default)");
    auto* any = sub->add_flag("--any-set", any_set_, "the predicate must hold on one input set at least");
    all->excludes(any);
    sub->add_option("--max-steps", max_steps_, "N: stop after N predicate runs and keep the smallest failing model")
        ->check(CLI::Range(1, 1 << 30));
  }

  int execute(const GlobalOptions& g) override {
    const int predicates = int(nan_) + int(!dump_dir_.empty()) + int(!check_.empty()) + int(!error_.empty());
    if (predicates != 1) fail_usage("reduce: give exactly one predicate: --nan, --compare-with DIR, --check CMD or --error REGEX");
    std::string out = out_;
    if (fs::is_directory(out) || fs::path(out).extension() != ".onnx") out = (fs::path(out) / "model.onnx").string();

    const Model model = open_model(model_);
    const Registry* reg = &registry(g);
    std::vector<ValueRecord> dump;
    if (!dump_dir_.empty()) {
      if (input_sets_.size() > 1) fail_usage("--compare-with takes one input set: the dump was written from one");
      dump = read_dump(dump_dir_);
    }
    const std::vector<reduce::Feeds> sets = make_sets(model, dump, *reg);

    std::unique_ptr<reduce::Predicate> predicate;
    fs::path work;
    if (nan_) predicate = reduce::nan_predicate(reg);
    else if (!error_.empty()) predicate = reduce::error_predicate(error_, reg);
    else if (!check_.empty()) {
      std::string tmpl = (fs::temp_directory_path() / "refeval-reduce-XXXXXX").string();
      if (!mkdtemp(tmpl.data())) fail_input("--check: cannot create a temporary folder");
      work = tmpl;
      predicate = reduce::check_predicate(check_, work.string());
    } else {
      predicate = reduce::compare_predicate(dump, tol_, reg);
      const auto differing = reduce::differing_initializers(model, dump, tol_);
      for (const auto& d : differing) fmt::print("initializer differs from the dump: {}\n", d);
    }

    reduce::Options opt;
    opt.mode = mode_ == "bisect" ? reduce::Mode::Bisect : mode_ == "linear" ? reduce::Mode::Linear : reduce::Mode::Both;
    opt.freeze = freeze_ == "constants" ? reduce::Freeze::Constants : reduce::Freeze::Inputs;
    opt.all_sets = !any_set_;
    opt.max_steps = max_steps_;
    opt.stop = &g_interrupted;
    opt.on_step = [](const reduce::Step& s) {
      fmt::print("step {:>3}  {:<10} {:>6} nodes  {}: {}\n", s.number - 1, s.phase, s.nodes, s.holds ? "fails" : "passes",
                 s.detail);
      std::fflush(stdout);
    };
    fmt::print("reduce: {} ({} nodes), predicate {}, mode {}, {} input set{}\n", model_, model.graph.nodes.size(),
               predicate->name(), mode_, sets.size(), sets.size() == 1 ? "" : "s");
    std::fflush(stdout);

    const auto start = std::chrono::steady_clock::now();
    auto previous = std::signal(SIGINT, on_interrupt);
    reduce::Result result;
    try {
      result = reduce::reduce(model, sets, *predicate, opt, reg);
    } catch (...) {
      std::signal(SIGINT, previous);
      if (!work.empty()) fs::remove_all(work);
      throw;
    }
    std::signal(SIGINT, previous);
    if (!work.empty()) fs::remove_all(work);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    const std::string problem = reduce::write_result(result, out, reg);
    if (result.stopped)
      fmt::print("stopped early ({}): the smallest failing subgraph so far is kept\n",
                 g_interrupted ? "interrupted" : fmt::format("--max-steps {}", max_steps_));
    fmt::print("result: {} -> {} node{} in {} steps ({:.2f} s); still fails: {}\n", result.original_nodes,
               result.model.graph.nodes.size(), result.model.graph.nodes.size() == 1 ? "" : "s", result.steps - 1, seconds,
               result.detail);
    fmt::print("kept: {}\n", fmt::join(result.kept, ", "));
    fmt::print("wrote {} ({} inputs, {} outputs) and {} test_data_set folder{} beside it{}\n", out,
               result.model.graph.inputs.size(), result.model.graph.outputs.size(), result.feeds.size(),
               result.feeds.size() == 1 ? "" : "s",
               problem.empty() ? "; expected outputs computed by refeval" : "; no expected outputs: refeval fails on it (" + problem + ")");
    std::fflush(stdout);
    return kOk;
  }

 private:
  // One feed map per input set. Without input options, --compare-with feeds what the dump was fed.
  std::vector<reduce::Feeds> make_sets(const Model& model, const std::vector<ValueRecord>& dump, const Registry& reg) {
    ReferenceEvaluator ev(model, EvaluatorOptions{&reg});
    std::vector<reduce::Feeds> sets;
    if (input_sets_.empty()) {
      sets.push_back(make_feeds(ev, inputs_));
    } else {
      if (!inputs_.inputs_dir.empty()) fail_usage("--inputs and --input-set: give input sets with --input-set only");
      for (const auto& dir : input_sets_) {
        InputOptions o = inputs_;
        o.inputs_dir = dir;
        sets.push_back(make_feeds(ev, o));
      }
    }
    const bool explicit_inputs = !inputs_.inputs.empty() || !inputs_.inputs_dir.empty() || !inputs_.fills.empty() || !input_sets_.empty();
    if (!explicit_inputs)
      for (const ValueRecord& r : dump)
        if (r.source == ValueRecord::Source::Input && sets[0].count(r.name)) sets[0][r.name] = r.value;
    return sets;
  }

  std::string model_, out_;
  InputOptions inputs_;
  std::vector<std::string> input_sets_;
  bool nan_ = false;
  std::string dump_dir_, check_, error_;
  Tolerance tol_;
  std::string mode_ = "both", freeze_ = "inputs";
  bool all_sets_ = false, any_set_ = false;
  int max_steps_ = 0;
};

}  // namespace

std::unique_ptr<Verb> make_reduce_verb() { return std::make_unique<ReduceVerb>(); }

}  // namespace refeval::cli

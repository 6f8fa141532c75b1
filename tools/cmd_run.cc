// `refeval run MODEL`: run a model with the trace of --verbose N (CLI.md, Trace); --dump writes
// every value to a folder, --check-finite stops at the first NaN or Inf.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <optional>

#include <fmt/format.h>

#include "refeval/dump.h"
#include "refeval/finite_check.h"
#include "refeval/format.h"
#include "refeval/model_io.h"
#include "refeval/trace.h"
#include "verbs.h"

namespace refeval::cli {
namespace {

std::string model_summary(const Model& m) {
  std::vector<std::string> opsets;
  for (const auto& [d, v] : m.opsets) opsets.push_back(fmt::format("{} {}", d.empty() ? "ai.onnx" : d, v));
  return fmt::format("{}: IR {}, opsets {}, {} nodes", m.path, m.ir_version, fmt::join(opsets, ", "), m.graph.nodes.size());
}

void print_summary(const ReferenceEvaluator& ev, const std::map<std::string, Value>& feeds) {
  fmt::print("{}\n", model_summary(ev.model()));
  for (const auto& name : ev.input_names())
    if (auto it = feeds.find(name); it != feeds.end()) fmt::print(" +I {}: {}\n", name, describe(it->second, 3));
}

class RunVerb : public Verb {
 public:
  void setup(CLI::App* sub) override {
    sub->add_option("model", model_, "the .onnx model")->required();
    inputs_.add_to(sub);
    sub->add_option("--verbose,-v", verbose_, "trace level 0-4 (default 1)")->check(CLI::Range(0, 100));
    sub->add_flag("--no-timing", no_timing_, "omit the elapsed time (level 1)");
    sub->add_option("--outputs", outputs_, "a,b: values to return (any value name; default the graph outputs)");
    sub->add_option("--save-outputs", save_dir_, "DIR: write output_K.pb files");
    sub->add_option("--dump", dump_dir_, "DIR: write every value of the main graph and DIR/index.json (first run)");
    sub->add_flag("--check-finite", check_finite_, "stop at the first value holding NaN or Inf and report it (exit 3)");
    sub->add_option("--repeat", repeat_, "run N times and report the median time (level 1)")->check(CLI::Range(1, 1000000));
  }

  int execute(const GlobalOptions& g) override {
    // Weights held once unless a trace, a dump or --outputs may show one.
    const bool release = verbose_ < 2 && dump_dir_.empty() && outputs_.empty();
    ReferenceEvaluator ev(open_model(model_), {&registry(g), release});
    const auto feeds = make_feeds(ev, inputs_);
    const std::vector<std::string> names = outputs_.empty() ? ev.output_names() : split_list(outputs_);
    TraceObserver trace(verbose_);
    if (verbose_ >= 2) ev.add_observer(&trace);
    std::optional<DumpObserver> dump;
    if (!dump_dir_.empty()) ev.add_observer(&dump.emplace(dump_dir_));
    FiniteCheckObserver finite;  // after the dumper, so the offending value is dumped too
    if (check_finite_) ev.add_observer(&finite);
    Values results;
    std::vector<double> times;
    std::optional<Progress> progress;
    if (repeat_ > 1) progress.emplace("run", size_t(repeat_));
    for (int i = 0; i < repeat_; ++i) {
      if (progress) progress->step();
      if (i == 1) {  // trace and dump the first run only
        ev.remove_observer(&trace);
        if (dump) ev.remove_observer(&*dump);
      }
      const auto start = std::chrono::steady_clock::now();
      try {
        results = ev.run(split_list(outputs_), feeds);
      } catch (const NonFiniteFound&) {
        if (dump) dump->finish();
        if (verbose_ == 1) print_summary(ev, feeds);
        fmt::print("{}", format_finding(*finite.finding()));
        std::fflush(stdout);
        return kCheckFailed;
      } catch (const Error&) {
        if (dump) dump->finish();  // keep what was dumped up to the failing node
        throw;
      }
      times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    }
    progress.reset();
    std::sort(times.begin(), times.end());
    if (verbose_ == 1) {
      print_summary(ev, feeds);
      for (size_t i = 0; i < results.size(); ++i) fmt::print(" + {}: {}\n", names[i], describe(results[i], 3));
      if (dump) fmt::print("dump: {} values in {}\n", dump->size(), dump_dir_);
      if (check_finite_) fmt::print("check-finite: {} values checked, none holds NaN or Inf\n", finite.values_checked());
      if (!no_timing_ && repeat_ == 1) fmt::print("elapsed: {:.3f} ms\n", times[0]);
      if (!no_timing_ && repeat_ > 1)
        fmt::print("elapsed: median {:.3f} ms, min {:.3f} ms over {} runs\n", times[times.size() / 2], times[0], repeat_);
    }
    if (!save_dir_.empty()) {
      std::filesystem::create_directories(save_dir_);
      for (size_t i = 0; i < results.size(); ++i)
        write_value_pb((std::filesystem::path(save_dir_) / fmt::format("output_{}.pb", i)).string(), names[i], results[i]);
    }
    std::fflush(stdout);
    return kOk;
  }

 private:
  std::string model_;
  InputOptions inputs_;
  int verbose_ = 1;
  int repeat_ = 1;
  bool no_timing_ = false;
  std::string outputs_;
  std::string save_dir_;
  std::string dump_dir_;
  bool check_finite_ = false;
};

}  // namespace

std::unique_ptr<Verb> make_run_verb() { return std::make_unique<RunVerb>(); }

}  // namespace refeval::cli

// `refeval run MODEL`: run a model with the trace of --verbose N (CLI.md, Trace).
#include <algorithm>
#include <chrono>
#include <filesystem>

#include <fmt/format.h>

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

class RunVerb : public Verb {
 public:
  void setup(CLI::App* sub) override {
    sub->add_option("model", model_, "the .onnx model")->required();
    inputs_.add_to(sub);
    sub->add_option("--verbose,-v", verbose_, "trace level 0-4 (default 1)")->check(CLI::Range(0, 100));
    sub->add_flag("--no-timing", no_timing_, "omit the elapsed time (level 1)");
    sub->add_option("--outputs", outputs_, "a,b: values to return (any value name; default the graph outputs)");
    sub->add_option("--save-outputs", save_dir_, "DIR: write output_K.pb files");
    sub->add_option("--repeat", repeat_, "run N times and report the median time (level 1)")->check(CLI::Range(1, 1000000));
  }

  int execute(const GlobalOptions& g) override {
    ReferenceEvaluator ev(load_model(model_), {&registry(g)});
    const auto feeds = make_feeds(ev, inputs_);
    const std::vector<std::string> names = outputs_.empty() ? ev.output_names() : split_list(outputs_);
    TraceObserver trace(verbose_);
    if (verbose_ >= 2) ev.add_observer(&trace);
    Values results;
    std::vector<double> times;
    for (int i = 0; i < repeat_; ++i) {
      if (i == 1) ev.remove_observer(&trace);  // trace the first run only
      const auto start = std::chrono::steady_clock::now();
      results = ev.run(split_list(outputs_), feeds);
      times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    }
    std::sort(times.begin(), times.end());
    if (verbose_ == 1) {
      fmt::print("{}\n", model_summary(ev.model()));
      for (const auto& name : ev.input_names())
        if (auto it = feeds.find(name); it != feeds.end()) fmt::print(" +I {}: {}\n", name, describe(it->second, 3));
      for (size_t i = 0; i < results.size(); ++i) fmt::print(" + {}: {}\n", names[i], describe(results[i], 3));
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
};

}  // namespace

std::unique_ptr<Verb> make_run_verb() { return std::make_unique<RunVerb>(); }

}  // namespace refeval::cli

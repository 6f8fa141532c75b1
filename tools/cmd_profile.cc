// `refeval profile MODEL`: W warm-up and N profiled runs with every node timed (bodies too),
// written as ONNX Runtime's profile JSON (chrome://tracing, Perfetto and ORT's scripts read it),
// then the per-op-type table of the profiled runs as `refeval report` prints it.
#include <chrono>
#include <ctime>

#include <fmt/chrono.h>
#include <fmt/format.h>

#include "aggregate.h"
#include "memory_report.h"
#include "profile_file.h"
#include "profiled_model.h"
#include "render.h"
#include "verbs.h"

namespace refeval::cli {
namespace {

using namespace refeval::profile;

// ORT's file name, with refeval's prefix: refeval_profile_2026-12-03_05-40-00.json (local time).
std::string default_file_name() {
  return fmt::format("refeval_profile_{:%Y-%m-%d_%H-%M-%S}.json", fmt::localtime(std::time(nullptr)));
}

class ProfileVerb : public Verb {
 public:
  void setup(CLI::App* sub) override {
    sub->add_option("model", model_, "the .onnx model")->required();
    inputs_.add_to(sub);
    sub->add_option("--warmup", warmup_, "W: warm-up runs before the profiled ones (default 1; in the file, as ORT's)")->check(CLI::Range(0, 1000000));
    sub->add_option("--repeat", repeat_, "N: profiled runs (default 10)")->check(CLI::Range(1, 1000000));
    sub->add_option("-o,--output", output_, "FILE.json (default refeval_profile_<date>_<time>.json)");
    sub->add_option("--by", by_, "the table printed at the end: op (default), node, provider or scope (name scopes at depth 2)")
        ->check(CLI::IsMember({"op", "node", "provider", "scope"}));
    sub->add_option("--top", top_, "N: only the N costliest rows of that table (0: all)");
    sub->add_flag("--memory", memory_, "also the live activation bytes per node, a memory counter track and each run's peak with "
                  "the tensors alive then (`refeval report --by memory` reads them)");
  }

  int execute(const GlobalOptions& g) override {
    ProfiledModel profiled([&] { return open_model(model_); }, registry(g));
    if (memory_) profiled.profiler()->record_memory();
    const auto feeds = make_feeds(profiled.evaluator(), inputs_);
    {
      Progress progress("profile run", size_t(warmup_ + repeat_));
      for (int i = 0; i < warmup_ + repeat_; ++i) {
        progress.step();
        profiled.run(feeds);
      }
    }
    std::vector<Event> events = profiled.events();
    const std::string path = output_.empty() ? default_file_name() : output_;
    write_profile(path, events);
    fmt::print("profile: {} ({} warm-up + {} profiled runs, {} events)\n", path, warmup_, repeat_, events.size());

    const LoadedProfiles loaded = loaded_from({path, std::move(events), {}}, {.range = fmt::format("{}:", warmup_), .phase = ""});
    std::vector<double> walls;
    for (const Run& r : loaded.runs) walls.push_back(double(r.dur) / 1000);
    std::sort(walls.begin(), walls.end());
    fmt::print("model_run: median {:.3f} ms, min {:.3f} ms over {} profiled runs\n", walls[walls.size() / 2], walls[0], walls.size());
    Table t = aggregate(path, loaded.runs_in_files, loaded.runs, parse_group_by(by_));
    keep_top(t, top_);
    fmt::print("{}", render_table(t, Format::Text));
    if (memory_) fmt::print("\n{}", render_memory(memory_report(loaded.runs, path), Format::Text, 0, 10));
    std::fflush(stdout);
    return kOk;
  }

 private:
  std::string model_, output_, by_ = "op";
  InputOptions inputs_;
  int warmup_ = 1, repeat_ = 10;
  size_t top_ = 0;
  bool memory_ = false;
};

}  // namespace

std::unique_ptr<Verb> make_profile_verb() { return std::make_unique<ProfileVerb>(); }

}  // namespace refeval::cli

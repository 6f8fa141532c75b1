// `refeval report PROFILE.json...`: ONNX Runtime's (or refeval's) profile files as per-op-type,
// per-node or per-provider tables (text, CSV, JSON, Markdown) or a self-contained HTML page with
// charts; `--compare OTHER.json` puts a second profile (an optimized model's) beside the first.
#include <algorithm>
#include <fstream>
#include <optional>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "aggregate.h"
#include "html_report.h"
#include "memory_report.h"
#include "render.h"
#include "verbs.h"

namespace refeval::cli {
namespace {

using namespace refeval::profile;

class ReportVerb : public Verb {
 public:
  void setup(CLI::App* sub) override {
    sub->add_option("profiles", profiles_, "profile JSON files (ONNX Runtime's or refeval's); several are read as one")->required();
    sub->add_option("--by", by_, "op (default), node, provider, phase (a `refeval generate` profile: the phase table, then "
                    "an op table per phase), scope (the nodes' name scopes: /model/layers.3/mlp/... ), or memory (a profile recorded "
                    "with --memory: the peak, its node, the tensors alive then)")
        ->check(CLI::IsMember({"op", "node", "provider", "phase", "scope", "memory"}));
    sub->add_option("--depth", depth_, "N: with --by scope, the scopes' depth (default 2: model/layers.3; 3: model/layers.3/mlp; 0: all); "
                    "with --by memory, the peak per scope at that depth")
        ->check(CLI::Range(0, 1 << 20));
    sub->add_option("--phase", selection_.phase, "NAME: only the runs of this phase (prefill, decode: `refeval generate --profile`)");
    sub->add_option("--top", top_, "N: only the N costliest rows (0: all)");
    sub->add_option("--format", format_, "text (default), csv, json, md or html")->check(CLI::IsMember({"text", "csv", "json", "md", "html"}));
    sub->add_option("-o,--output", output_, "FILE: write there instead of stdout");
    sub->add_option("--compare", compare_, "OTHER.json: before (PROFILE) / after (OTHER) table per op type, or per node with --by node");
    sub->add_flag("--include-warmup", selection_.include_warmup, "keep the first run (left out as warm-up by default)");
    sub->add_option("--runs", selection_.range, "a:b: the runs to read, 0-based and half-open (0 is the warm-up; -1 the last)");
  }

  int execute(const GlobalOptions&) override {
    if (by_ == "memory") return memory();
    const GroupBy by = parse_group_by(by_);
    if (depth_ && by != GroupBy::Scope) fail_usage("--depth: only with --by scope");
    const Format format = parse_format(format_);
    const LoadedProfiles before = load_profiles(profiles_, selection_);
    for (const auto& w : before.warnings) spdlog::warn("{}", w);
    std::string text;
    if (compare_.empty()) {
      if (format != Format::Html) text = render_table(top(table(before, by)), format);
      else text = by == GroupBy::Scope ? html_scope_report(table(before, by), top_) : html_report(view(before), top_);
      if (by == GroupBy::Phase && (format == Format::Text || format == Format::Md)) text += phase_tables(before, format);
    } else {
      const LoadedProfiles after = load_profiles({compare_}, selection_);
      for (const auto& w : after.warnings) spdlog::warn("{}", w);
      if (format == Format::Html && by != GroupBy::Op) fail_usage("--compare with --format html compares op types: leave out --by");
      const GroupBy compare_by = by;
      Comparison c = compare(table(before, compare_by), table(after, compare_by));
      if (top_ && c.rows.size() > top_) c.rows.resize(top_);
      text = format == Format::Html ? html_comparison(view(before), view(after), c, top_) : render_comparison(c, format);
    }
    write_output(output_, text, "report");
    return kOk;
  }

 private:
  int memory() const {
    const Format format = parse_format(format_);
    const LoadedProfiles before = load_profiles(profiles_, selection_);
    for (const auto& w : before.warnings) spdlog::warn("{}", w);
    const MemoryReport m = memory_report(before.runs, before.label);
    std::string text;
    if (compare_.empty()) {
      text = format == Format::Html ? html_memory_report(m, top_) : render_memory(m, format, depth_.value_or(0), top_);
    } else {
      const LoadedProfiles after = load_profiles({compare_}, selection_);
      for (const auto& w : after.warnings) spdlog::warn("{}", w);
      const MemoryReport a = memory_report(after.runs, after.label);
      text = format == Format::Html ? html_memory_comparison(m, a, top_) : render_memory_comparison(m, a, format, top_);
    }
    write_output(output_, text, "report");
    return kOk;
  }

  // An op table per phase, phases in the order their first run comes.
  std::string phase_tables(const LoadedProfiles& p, Format format) const {
    std::vector<std::string> phases;
    for (const Run& r : p.runs)
      if (std::find(phases.begin(), phases.end(), r.phase) == phases.end()) phases.push_back(r.phase);
    std::string text;
    for (const std::string& phase : phases) {
      std::vector<Run> runs;
      for (const Run& r : p.runs)
        if (r.phase == phase) runs.push_back(r);
      text += fmt::format("\nphase {} ({} run{}):\n", phase.empty() ? "(untagged)" : phase, runs.size(), runs.size() == 1 ? "" : "s");
      text += render_table(top(aggregate(p.label, p.runs_in_files, runs, GroupBy::Op)), format);
    }
    return text;
  }
  Table table(const LoadedProfiles& p, GroupBy by) const { return aggregate(p.label, p.runs_in_files, p.runs, by, depth_ ? *depth_ : 2); }
  ProfileView view(const LoadedProfiles& p) const { return {table(p, GroupBy::Op), table(p, GroupBy::Node), p.runs}; }
  Table top(Table t) const {
    keep_top(t, top_);
    return t;
  }

  std::vector<std::string> profiles_;
  std::string by_ = "op", format_ = "text", output_, compare_;
  size_t top_ = 0;
  std::optional<int> depth_;
  RunSelection selection_;
};

}  // namespace

std::unique_ptr<Verb> make_report_verb() { return std::make_unique<ReportVerb>(); }

}  // namespace refeval::cli

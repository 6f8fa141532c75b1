// `refeval accuracy MODEL [input options] [--oracle float64]`: the model's error against its own
// float64 oracle, per node and per graph output (issue 28; tools/debug/accuracy.h says what each
// figure means). Nodes are listed worst first: by contribution to the outputs' error where it was
// computed (the --top-k nodes with the largest local error), then by accumulated RMS.
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "debug/accuracy.h"
#include "refeval/format.h"
#include "verbs.h"

namespace refeval::cli {
namespace {
using json = nlohmann::json;
namespace acc = refeval::accuracy;

// JSON has no infinity: an error-free SQNR, or a relative error over a zero oracle, is null.
json number(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

json err_json(const acc::Error& e) {
  json j = {{"max_abs", e.max_abs}, {"max_rel", number(e.max_rel)}, {"rms", e.rms},
            {"sqnr_db", number(e.sqnr_db)}, {"ulps", e.ulps}, {"count", e.count}};
  if (e.nonfinite) j["nonfinite"] = e.nonfinite;
  return j;
}

std::string num(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return fmt::format("{:.3g}", v);
}

class AccuracyVerb : public Verb {
 public:
  void setup(CLI::App* sub) override {
    sub->add_option("model", model_, "the model (.onnx)")->required();
    inputs_.add_to(sub);
    sub->add_option("--oracle", oracle_, "the oracle's precision: float64 (the only one, and the default)")
        ->check(CLI::IsMember({"float64"}));
    sub->add_option("--json", json_path_, "FILE: write the profile as JSON");
    sub->add_option("--top-k", top_k_, "N: compute the contribution of the N nodes with the largest local error (default 10; 0: none)")
        ->check(CLI::Range(0, 1 << 20));
    sub->add_option("--rows", rows_, "N: nodes shown in the table (default 20; 0: all)")->check(CLI::Range(0, 1 << 30));
    sub->add_flag("--no-local", no_local_, "skip the local errors (and so the contributions): one model run and one oracle run");
  }

  int execute(const GlobalOptions& g) override {
    const Model model = open_model(model_);
    std::map<std::string, Value> feeds;
    {
      const ReferenceEvaluator ev(model, EvaluatorOptions{&registry(g)});
      feeds = make_feeds(ev, inputs_);
    }
    acc::Options opt;
    opt.registry = &registry(g);
    opt.local = !no_local_;
    opt.top_k = no_local_ ? 0 : top_k_;
    const acc::Report r = acc::profile(model, feeds, opt);

    fmt::print("model: {} ({} nodes run); oracle: {}\n", model_, r.nodes_run, oracle_);
    if (!r.refused.empty()) {
      std::string list;
      for (const std::string& s : r.refused) list += (list.empty() ? "" : ", ") + s;
      fmt::print("declare no double type (the oracle ran them anyway): {}\n", list);
    }
    fmt::print("outputs (accumulated error against the oracle):\n");
    for (const acc::OutputError& o : r.outputs) print_row(fmt::format("  {} ({})", o.name, dtype_short_name(o.dtype)), o.accumulated);
    fmt::print("contributions computed for {} node(s) (the largest local errors; --top-k)\n", r.contributions);
    fmt::print("{:<28} {:<12} {:>10} {:>10} {:>10} {:>10} {:>9} {:>10} {:>10} {:>8}\n", "node / output", "op", "contrib", "acc max",
               "acc rel", "acc rms", "sqnr dB", "local rms", "local ulp", "amplif");
    size_t shown = 0;
    for (const acc::NodeError& n : r.nodes) {
      if (rows_ && shown++ == rows_) break;
      for (const acc::OutputError& o : n.outputs) {
        const std::string label = n.outputs.size() == 1 ? n.node : n.node + ":" + o.name;
        fmt::print("{:<28} {:<12} {:>10} {:>10} {:>10} {:>10} {:>9} {:>10} {:>10} {:>8}\n", label, n.op_type,
                   n.contribution ? num(n.contribution->rms) : "-", num(o.accumulated.max_abs), num(o.accumulated.max_rel),
                   num(o.accumulated.rms), num(o.accumulated.sqnr_db), o.local ? num(o.local->rms) : "-",
                   o.local ? num(o.local->ulps) : "-", o.amplification ? num(*o.amplification) : "-");
        if (o.accumulated.nonfinite) fmt::print("  {} element(s) NaN/Inf on one side only\n", o.accumulated.nonfinite);
      }
      if (!n.local_note.empty()) fmt::print("  no local error for {}: {}\n", n.node, n.local_note);
    }
    if (!r.nodes.empty()) {
      const acc::NodeError& w = r.nodes.front();
      fmt::print("worst: {} ({}), {} {}\n", w.node, w.op_type, w.contribution ? "contribution rms" : "accumulated rms",
                 num(w.rank_key()));
    }

    if (!json_path_.empty()) {
      json j = {{"oracle", oracle_}, {"model", model_}, {"contributions_computed", r.contributions},
                {"nodes", json::array()}, {"outputs", json::array()}, {"refused", r.refused}};
      for (const acc::NodeError& n : r.nodes) {
        json jn = {{"node", n.node}, {"op_type", n.op_type}, {"outputs", json::array()}};
        jn["contribution"] = n.contribution ? err_json(*n.contribution) : json(nullptr);
        if (!n.local_note.empty()) jn["local_note"] = n.local_note;
        for (const acc::OutputError& o : n.outputs) {
          json jo = {{"name", o.name}, {"dtype", dtype_numpy_name(o.dtype)}, {"accumulated", err_json(o.accumulated)}};
          jo["local"] = o.local ? err_json(*o.local) : json(nullptr);
          jo["amplification"] = o.amplification ? number(*o.amplification) : json(nullptr);
          jn["outputs"].push_back(jo);
        }
        j["nodes"].push_back(jn);
      }
      for (const acc::OutputError& o : r.outputs)
        j["outputs"].push_back({{"name", o.name}, {"dtype", dtype_numpy_name(o.dtype)}, {"accumulated", err_json(o.accumulated)}});
      std::ofstream out(json_path_);
      out << j.dump(2) << "\n";
      if (!out) fail_input(fmt::format("--json: cannot write '{}'", json_path_));
    }
    std::fflush(stdout);
    return kOk;
  }

 private:
  static void print_row(const std::string& label, const acc::Error& e) {
    fmt::print("{}: max abs {}, max rel {}, rms {}, sqnr {} dB, {} ulps at the max{}\n", label, num(e.max_abs), num(e.max_rel),
               num(e.rms), num(e.sqnr_db), num(e.ulps),
               e.nonfinite ? fmt::format(", {} element(s) NaN/Inf on one side only", e.nonfinite) : "");
  }

  std::string model_;
  InputOptions inputs_;
  std::string oracle_ = "float64";
  std::string json_path_;
  size_t top_k_ = 10;
  size_t rows_ = 20;
  bool no_local_ = false;
};

}  // namespace

std::unique_ptr<Verb> make_accuracy_verb() { return std::make_unique<AccuracyVerb>(); }

}  // namespace refeval::cli

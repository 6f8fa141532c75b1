// `refeval optimize IN.onnx -o OUT.onnx`: constant folding and redundant-node removal (basic),
// then ONNX Runtime's transformer fusions (extended), with ORT-style counters; --verify proves
// the result equivalent with the evaluator (exit 3 if not), --verify-each names the first pass
// that broke equivalence.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "optimizer.h"
#include "ort_timing.h"
#include "refeval/model_io.h"
#include "report.h"
#include "verbs.h"
#include "verify.h"

namespace refeval::cli {
namespace {

using namespace refeval::optimize;

std::string megabytes(uint64_t bytes) { return fmt::format("{:.1f} MB", double(bytes) / 1e6); }

class OptimizeVerb : public Verb {
 public:
  void setup(CLI::App* sub) override {
    // Required unless --list-passes, which needs neither (checked in execute()).
    sub->add_option("model", in_, "the .onnx model");
    sub->add_option("-o,--output", out_, "OUT.onnx: the optimized model");
    sub->add_option("--level", level_, "basic, extended or all (default all)");
    sub->add_option("--model-type", model_type_,
                    "bert, vit, clip, t5, bart, whisper, gpt2, llama, phi or gpt_neox: checked against what the graph shows (a warning when it does not fit); "
                    "no fusion depends on it");
    sub->add_option("--target", target_, "ort (com.microsoft fused operators, default) or onnx (standard operators of opset 23)");
    sub->add_option("--forms", forms_,
                    "with --target ort: cpu (default: the forms ONNX Runtime's CPU kernels run fastest, measured) or all (every fusion, as "
                    "ORT's transformer optimizer writes them)");
    sub->add_option("--only", only_, "PASS,...: run only these passes (and dead-code removal)");
    sub->add_option("--disable", disable_, "PASS,...: skip these passes");
    sub->add_option("--opset", opset_, "N: the output's ai.onnx opset (refused if an operator's version would change)");
    sub->add_flag("--verify", verify_, "check the output against the input with the evaluator (exit 3 if not equivalent)");
    sub->add_flag("--verify-each", verify_each_, "check after every pass that changed the model; name the first that broke it");
    sub->add_flag("--list-passes", list_, "print the pass names and exit");
    sub->add_option("--shuffle-passes", shuffle_seed_, "SEED: run each level's passes in an order drawn from SEED (the result must not change)");
    sub->add_flag("--explain", explain_, "per pass, the candidates found and fused, and why each other candidate was not fused");
    // Looser than check-fusion's atol (1e-7): a 12-layer float model's outputs near zero differ by
    // ~1e-6 between float decompositions and fused kernels that compute in double.
    check_.tolerance.atol = 1e-4;
    sub->add_option("--rtol", check_.tolerance.rtol, "relative tolerance of --verify (default 1e-3)");
    sub->add_option("--atol", check_.tolerance.atol, "absolute tolerance of --verify (default 1e-4)");
    sub->add_flag("--benchmark-with-ort", benchmark_,
                  "time the original and the written model in ONNX Runtime (CPU, level all, --threads threads) on the same inputs, "
                  "alternated rounds; needs node and onnxruntime-node");
    sub->add_option("--benchmark-rounds", ort_.rounds, "rounds of --benchmark-with-ort (default 5, each the median of 10 runs)")
        ->check(CLI::Range(1, 1 << 30));
    inputs_.add_to(sub);
  }

  int execute(const GlobalOptions& g) override {
    if (list_) {
      for (const std::string& p : pass_names()) fmt::print("{}\n", p);
      return kOk;
    }
    if (in_.empty()) fail_usage("model is required");
    if (out_.empty()) fail_usage("--output is required");
    const Model original = open_model(in_);
    OptimizeOptions options;
    options.level = parse_level(level_);
    options.model_type = model_type_;
    for (const std::string& p : split_list(only_)) options.only.insert(p);
    for (const std::string& p : split_list(disable_)) options.disable.insert(p);
    if (opset_) options.opset = opset_;
    if (shuffle_seed_) options.shuffle_seed = *shuffle_seed_;
    options.explain = explain_;
    options.target = target_;
    options.forms = forms_;
    check_.repeat = 1;
    std::map<std::string, Value> feeds;
    if (verify_ || verify_each_ || benchmark_) feeds = make_feeds(ReferenceEvaluator(original, {&registry(g)}), inputs_);
    std::string failure;
    if (verify_each_)
      options.check_each = [&](const Model& before, const Model& after, const std::string& pass) {
        const fusion::FusionReport r = verify(before, after, registry(g), feeds, check_);
        if (r.equivalent()) return true;
        failure = fusion::format_report(r);
        return false;
      };

    const OptimizeResult result = optimize::optimize(original, registry(g), options);
    std::map<std::string, int> totals;
    std::vector<std::string> order;
    for (const PassStats& p : result.passes) {
      if (!totals.count(p.counter)) order.push_back(p.counter);
      totals[p.counter] += p.count;
    }
    if (!result.type_warning.empty()) spdlog::warn("{}", result.type_warning);
    for (const std::string& note : result.notes) spdlog::warn("{}", note);
    const std::string type = model_type_.empty() ? (result.model_type.empty() ? "" : ", model type " + result.model_type + " (detected: " + result.kind.reason + ")")
                                                 : ", model type " + model_type_;
    fmt::print("optimize: {} -> {} (level {}{}{})\n", in_, out_, level_, type, target_ == "onnx" ? ", standard operators" : "");
    for (const std::string& c : order)
      if (totals[c] > 0) fmt::print("  {}: {}\n", c, totals[c]);
    const Graph& before = original.graph;
    const Graph& after = result.model.graph;
    fmt::print("nodes: {} -> {}; initializers: {} ({}) -> {} ({})\n", before.nodes.size(), after.nodes.size(),
               before.initializers.size(), megabytes(weight_bytes(before)), after.initializers.size(), megabytes(weight_bytes(after)));
    std::vector<std::string> ops;
    for (const auto& [op, n] : op_counts(after)) ops.push_back(fmt::format("{} {}", op, n));
    fmt::print("operators: {}\n", fmt::join(ops, ", "));
    if (explain_) {
      for (const Explain::PassCount& c : result.explain.counts)
        if (c.candidates > 0) fmt::print("explain: {}: {} candidate{}, {} fused\n", c.pass, c.candidates, c.candidates == 1 ? "" : "s", c.fused);
      for (const std::string& line : result.explain.not_fused) fmt::print("{}\n", line);
    }
    if (!result.broken_by.empty()) {
      fmt::print("verify-each: pass '{}' broke equivalence; nothing written\n{}", result.broken_by, failure);
      std::fflush(stdout);
      return kCheckFailed;
    }
    save_model(result.model, out_);
    if (verify_each_) fmt::print("verify-each: every pass kept the model equivalent\n");
    if (verify_) {
      const fusion::FusionReport r = verify(original, result.model, registry(g), feeds, check_);
      if (!r.equivalent()) {
        fmt::print("verify: NOT equivalent\n{}", fusion::format_report(r));
        std::fflush(stdout);
        return kCheckFailed;
      }
      fmt::print("verify: equivalent on {} input sets x {} outputs (rtol {}, atol {})\n", r.sets.size(), r.outputs.size(),
                 check_.tolerance.rtol, check_.tolerance.atol);
      if (const std::string oracle = fusion::oracle_summary(r, "optimized", "original"); !oracle.empty())
        fmt::print("verify: {}\n", oracle);
    }
    if (benchmark_) {
      std::fflush(stdout);
      ort_.threads = g.threads;
      const OrtTiming t = time_in_ort(in_, out_, feeds, ort_);
      fmt::print("ort: original {:.3f} ms, optimized {:.3f} ms per run: {:.3f}x ({} thread{}, level all, median of {} alternated rounds of {} runs)\n",
                 t.original_ms, t.optimized_ms, t.ratio, g.threads == 0 ? "every" : std::to_string(g.threads), g.threads == 1 ? "" : "s",
                 ort_.rounds, ort_.repeat);
      fmt::print("ort: outputs differ by at most {:.2e} (largest |output| {:.3g})\n", t.max_abs_diff, t.max_abs);
    }
    std::fflush(stdout);
    return kOk;
  }

 private:
  std::string in_, out_, level_ = "all", model_type_, only_, disable_, target_ = "ort", forms_ = "cpu";
  int64_t opset_ = 0;
  std::optional<uint64_t> shuffle_seed_;
  bool verify_ = false, verify_each_ = false, list_ = false, explain_ = false, benchmark_ = false;
  OrtTimingOptions ort_;
  fusion::CheckOptions check_;
  InputOptions inputs_;
};

}  // namespace

std::unique_ptr<Verb> make_optimize_verb() { return std::make_unique<OptimizeVerb>(); }

}  // namespace refeval::cli

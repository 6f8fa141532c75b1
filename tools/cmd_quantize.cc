// `refeval quantize IN.onnx -o OUT.onnx --int4 | --int8`: ONNX Runtime's int4 weight-only
// quantization (quantize/int4.h) or its dynamic int8 quantization (quantize/int8.h), then what it
// cost: the weights' bytes before and after, each output's
// agreement over input sets (as `compare --random-sets`: cosine, SNR, top-1) and refeval's run
// time before and after. --min-snr / --min-cosine exit 3 when not met, OUT still written.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <set>
#include <optional>

#include <fmt/format.h>

#include "quality/lm_compare.h"
#include "quality/lm_tokens.h"
#include "quality/output_stats.h"
#include "tokenizer/tokenizer.h"
#include "quantize/calibrate.h"
#include "quantize/int4.h"
#include "quantize/float16.h"
#include "quantize/gptq.h"
#include "quantize/int8.h"
#include "refeval/compute_vector.h"
#include "refeval/observer.h"
#include "generate/generator.h"
#include "refeval/evaluator.h"
#include "refeval/model_io.h"
#include "refeval/threads.h"
#include "verbs.h"

namespace refeval::cli {
namespace {

bool has_gemm(const Model& m) {
  return std::any_of(m.graph.nodes.begin(), m.graph.nodes.end(), [](const Node& n) { return n.op_type == "Gemm" && n.domain.empty(); });
}

int64_t weight_bytes(const Model& m) {
  int64_t bytes = 0;
  for (const Initializer& i : m.graph.initializers) bytes += i.value.nbytes();
  return bytes;
}

std::string size_text(int64_t bytes) {
  return bytes >= 1000000 ? fmt::format("{:.2f} MB", double(bytes) / 1e6) : fmt::format("{:.1f} kB", double(bytes) / 1e3);
}

// The weights' bytes before and after, and the ratio (a model without weights says so).
void print_weights(int64_t before, int64_t after) {
  if (before == 0) return fmt::print("weights: none\n");
  fmt::print("weights: {} -> {} ({:.2f}x smaller)\n", size_text(before), size_text(after), after ? double(before) / double(after) : 0.0);
}

// Median milliseconds of `runs` runs on `feeds`, after one warm-up run.
double median_ms(ReferenceEvaluator& ev, const std::map<std::string, Value>& feeds, int runs) {
  ev.run({}, feeds);
  std::vector<double> ms;
  for (int r = 0; r < runs; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    ev.run({}, feeds);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::nth_element(ms.begin(), ms.begin() + ms.size() / 2, ms.end());
  return ms[ms.size() / 2];
}

// The float model's feeds as `ev` declares its inputs: float16 where a model converted without
// --keep-io-types takes float16.
std::map<std::string, Value> feeds_as_declared(const ReferenceEvaluator& ev, const std::map<std::string, Value>& feeds) {
  std::map<std::string, Value> out = feeds;
  for (auto& [name, v] : out) {
    const ValueType* t = ev.declared_type(name);
    if (!t || t->dtype != DType::Float16 || !v.is_tensor() || v.tensor().dtype() != DType::Float) continue;
    Tensor h(DType::Float16, v.tensor().shape());
    write_compute(h, to_compute<float>(v.tensor()));
    v = h;
  }
  return out;
}


class QuantizeVerb : public Verb {
 public:
  void setup(CLI::App* sub) override {
    sub->add_option("model", in_, "the .onnx model")->required();
    sub->add_option("-o,--output", out_, "OUT.onnx: the quantized model")->required();
    auto* int4 = sub->add_flag("--int4", int4_, "MatMul weights to 4-bit blocks (com.microsoft.MatMulNBits, RTN as ORT's default quantizer)");
    auto* int8 = sub->add_flag("--int8", int8_, "dynamic int8 as ORT's quantize_dynamic: int8 weights, uint8 activations (DynamicQuantizeLinear + MatMulInteger)");
    auto* half = sub->add_flag("--float16", float16_, "the whole model in float16, as ORT's float16 converter (blocked ops and overflowing nodes kept in float)");
    int4->excludes(int8), int4->excludes(half), int8->excludes(half);
    float16_only_ = {
        sub->add_flag("--keep-io-types", float16_options_.keep_io_types, "with --float16: graph inputs and outputs stay float (a Cast after / before each)"),
        sub->add_option("--float16-block", float16_block_, "with --float16: NODE|OP,...: nodes (by name or op type) kept in float, besides ORT's default block list")};
    sub->add_flag("--per-channel", int8_options_.per_channel, "with --int8: a weight scale per output column (default one per weight)");
    sub->add_flag("--reduce-range", int8_options_.reduce_range, "with --int8: 7-bit weights in [-64, 64] (ORT's reduce_range)");
    sub->add_flag("--calibrate", int8_options_.calibrated,
                  "with --int8: static QDQ as ORT's quantize_static, activation ranges calibrated over the input sets");
    calibrate_only_ = {
        sub->add_option("--calibrate-method", calibration_.method,
                        "with --calibrate: minmax (default), percentile (of |x|, symmetric) or entropy (KL divergence), as ORT's calibrators")
            ->check(CLI::IsMember({"minmax", "percentile", "entropy"})),
        sub->add_option("--calibrate-percentile", calibration_.percentile, "with --calibrate-method percentile: the percentile kept (default 99.999)"),
        sub->add_option("--calibrate-bins", calibration_.bins, "with --calibrate-method percentile or entropy: histogram bins (default 2048 and 128, ORT's)")};
    int4_only_ = {
        sub->add_option("--block-size", int4_options_.block_size, "with --int4: K values per scale: 16, 32 (default), 64, 128, ..."),
        sub->add_flag("--symmetric", int4_options_.symmetric, "with --int4: no zero points: scale = the block's largest-magnitude value / -8"),
        sub->add_option("--accuracy-level", int4_options_.accuracy_level,
                        "with --int4: MatMulNBits' accuracy_level: 0 (default, left out) to 4 (int8 activations in ORT)"),
        sub->add_option("--algo", algo_, "with --int4: rtn (default, ORT's default quantizer), hqq (half-quadratic, float zero points) or gptq (calibrated on --tokens/--text windows, else the input sets)")
            ->check(CLI::IsMember({"rtn", "hqq", "gptq"})),
        sub->add_flag("--embeddings", int4_options_.embeddings,
                      "with --int4: also Gather tables [vocab, hidden] (embeddings) to GatherBlockQuantized, blocks along hidden")};
    sub->add_option("--exclude", exclude_, "NODE|OP,...: MatMul (and with --int4 Gemm) nodes, by name or every node of an op type, to leave in float, e.g. the LM head");
    sub->add_option("--input-set", input_set_dirs_,
                    "DIR: an input set (NAME.npy or input_K.pb files) to calibrate and measure on, instead of random sets; repeatable");
    sub->add_option("--random-sets", random_sets_, "N: input sets generated from seeds --seed .. --seed + N - 1 to measure the loss on (default 3)")
        ->check(CLI::Range(1, 100000));
    sub->add_option("--runs", runs_, "N: timed runs of each model on the first set (default 5; 0 skips timing)")->check(CLI::Range(0, 100000));
    sub->add_option("--tokens", tokens_, "FILE.npy: int64 token ids (rows, length): measure a decoder's loss as `compare --tokens` does (perplexity, KL, top-1)");
    sub->add_option("--text", text_, "FILE: a text, encoded with --tokenizer, as the token ids");
    sub->add_option("--tokenizer", tokenizer_, "T.json: the tokenizer of --text");
    sub->add_option("--context", lm_.context, "N: windows of N tokens (default: each row whole; with --text, required)")->check(CLI::Range(2, 1 << 24));
    sub->add_option("--max-kl", gates_.max_kl, "X: with --tokens/--text, exit 3 when the mean KL(float || quantized) per token is above X");
    sub->add_option("--min-top1", gates_.min_top1, "F: with --tokens/--text, exit 3 when the top-1 agreement is below F");
    sub->add_option("--max-perplexity-ratio", gates_.max_perplexity_ratio, "R: with --tokens/--text, exit 3 when the perplexity ratio is above R");
    sub->add_option("--min-snr", min_snr_, "DB: exit 3 when an output's lowest SNR over the sets is below");
    sub->add_option("--min-cosine", min_cosine_, "C: exit 3 when an output's lowest cosine similarity is below");
    inputs_.add_to(sub);
  }

  int execute(const GlobalOptions& g) override {
    if (!int4_ && !int8_ && !float16_) fail_usage("quantize: say what to write, --int4, --int8 or --float16");
    if (tokens_.empty() && text_.empty() && (gates_.max_kl || gates_.min_top1 || gates_.max_perplexity_ratio || lm_.context))
      fail_usage("--max-kl, --min-top1, --max-perplexity-ratio and --context go with --tokens or --text");
    if (!tokens_.empty() || !text_.empty()) {  // read once: GPTQ calibrates on them, the report measures on them
      std::optional<tokenizer::Tokenizer> tok;
      if (!tokenizer_.empty()) tok = tokenizer::Tokenizer::load(tokenizer_);
      lm_.tokens = quality::lm_tokens(tokens_, text_, tok ? &*tok : nullptr, lm_.context);
    }
    for (const CLI::Option* o : float16_only_)
      if (!float16_ && o->count()) fail_usage(fmt::format("{} goes with --float16", o->get_name()));
    if (float16_ && !exclude_.empty()) fail_usage("--exclude goes with --int4 and --int8; --float16 keeps nodes in float with --float16-block");
    if (!int8_ && (int8_options_.per_channel || int8_options_.reduce_range || int8_options_.calibrated))
      fail_usage("--per-channel, --reduce-range and --calibrate go with --int8");
    for (const CLI::Option* o : int4_only_)
      if (!int4_ && o->count()) fail_usage(fmt::format("{} goes with --int4", o->get_name()));
    for (const CLI::Option* o : calibrate_only_)
      if (!int8_options_.calibrated && o->count()) fail_usage(fmt::format("{} goes with --int8 --calibrate", o->get_name()));
    if (int8_options_.calibrated) quantize::RangeCollector{calibration_};  // a bad percentile or bin count, before any work
    if (float16_) return execute_float16(g);
    for (const std::string& e : split_list(exclude_)) int4_options_.exclude.insert(e), int8_options_.exclude.insert(e);
    int4_options_.hqq = algo_ == "hqq";
    if (algo_ == "gptq" && (int4_options_.symmetric || int4_options_.embeddings))
      fail_usage("--algo gptq writes asymmetric RTN blocks of MatMul weights: --symmetric and --embeddings go with --algo rtn");
    const Model original = open_model(in_);
    if (int8_options_.calibrated) int8_options_.ranges = calibrate_ranges(original, g);
    if (algo_ == "gptq") int4_options_.hessians = input_hessians(original, g);
    const quantize::QuantizeResult q =
        int4_ ? quantize::quantize_int4(original, int4_options_) : quantize::quantize_int8(original, int8_options_);
    quantize::require_quantized(q, in_);
    const std::string what =
        int4_ ? fmt::format("MatMulNBits (4 bits, block {}, {}{})", int4_options_.block_size,
                            int4_options_.hqq ? "HQQ, float zero points" : algo_ == "gptq" ? std::string(tokens_.empty() && text_.empty() ? "GPTQ over the input sets, asymmetric" : "GPTQ over the token windows, asymmetric")
                            : int4_options_.symmetric ? "symmetric" : "asymmetric",
                            int4_options_.accuracy_level ? fmt::format(", accuracy_level {}", int4_options_.accuracy_level) : "")
        : int8_options_.calibrated
              ? fmt::format("QDQ (int8 weights, symmetric, {}{}; int8 activations calibrated by {} on {} input set(s))",
                            int8_options_.per_channel ? "per column" : "per tensor", int8_options_.reduce_range ? ", 7-bit" : "",
                            calibration_.method, set_count())
              : fmt::format("MatMulInteger (int8 weights, symmetric, {}{}; uint8 activations by DynamicQuantizeLinear)",
                            int8_options_.per_channel ? "per column" : "per tensor", int8_options_.reduce_range ? ", 7-bit" : "");
    save_model(q.model, out_);
    if (!int4_options_.embeddings || q.quantized.size() + q.skipped.size() + size_t(q.computed_products) > 0)
      fmt::print("quantized {} of {} {} nodes with a weight to {}: {}\n", q.quantized.size(), q.quantized.size() + q.skipped.size(),
                 int4_ && has_gemm(original) ? "MatMul and Gemm" : "MatMul", what, out_);
    for (const auto& [node, why] : q.skipped) fmt::print("  not quantized: '{}': {}\n", node, why);
    if (q.computed_products) fmt::print("  {} MatMul nodes multiply two computed values (attention): no weight\n", q.computed_products);
    if (int4_options_.embeddings)
      fmt::print("quantized {} of {} Gather tables to GatherBlockQuantized (4 bits, block {}): {}\n", q.tables.size(),
                 q.tables.size() + q.tables_skipped.size(), int4_options_.block_size, out_);
    for (const auto& [node, why] : q.tables_skipped) fmt::print("  not quantized: '{}': {}\n", node, why);
    for (const std::string& node : q.tied_shared)
      fmt::print("  '{}' reads the table through a Transpose (a tied LM head): it shares the table's int4 blocks\n", node);
    for (const std::string& node : q.tied_copied)
      fmt::print("  '{}' reads a table through a Transpose (a tied LM head): quantized from the table transposed, a second int4 copy "
                 "(one is shared when --embeddings quantizes the table and RTN both)\n", node);
    print_weights(weight_bytes(original), weight_bytes(q.model));
    return measure(original, q.model, g);
  }

 private:
  int set_count() const { return input_set_dirs_.empty() ? random_sets_ : int(input_set_dirs_.size()); }

  // The input sets the float model is measured (and calibrated) on: the --input-set folders, else
  // generated from seeds --seed, --seed + 1, ...
  std::vector<std::map<std::string, Value>> input_sets(ReferenceEvaluator& ev) {
    std::vector<std::map<std::string, Value>> sets;
    for (const std::string& dir : input_set_dirs_) sets.push_back(make_feeds(ev, input_set_options(inputs_, dir)));
    if (!input_set_dirs_.empty()) return sets;
    for (int s = 0; s < random_sets_; ++s) {
      InputOptions o = inputs_;
      o.seed = inputs_.seed + uint64_t(s);
      sets.push_back(make_feeds(ev, o));
    }
    return sets;
  }

  // Activation ranges (calibrate.h): the A input of every MatMul --int8 rewrites, once per input
  // set, collected by the method as the run reaches it (no other value is kept or histogrammed).
  std::map<std::string, std::pair<float, float>> calibrate_ranges(const Model& original, const GlobalOptions& g) {
    class Collect final : public Observer {
     public:
      Collect(std::set<std::string> names, quantize::RangeCollector& collector) : names_(std::move(names)), collector_(collector) {}
      void graph_begin(const GraphEvent& e) override {
        if (!e.depth) seen_.clear();
      }
      void before_node(const NodeEvent& e) override {
        if (e.depth || e.node.op_type != "MatMul" || e.inputs.empty() || !e.inputs[0].is_tensor()) return;
        const std::string& name = e.node.inputs[0];
        const Tensor& t = e.inputs[0].tensor();
        if (!names_.count(name) || t.dtype() != DType::Float || t.size() == 0 || !seen_.insert(name).second) return;
        collector_.add(name, to_compute<float>(t));
      }

     private:
      std::set<std::string> names_, seen_;
      quantize::RangeCollector& collector_;
    };
    ReferenceEvaluator ev(original, {&registry(g)});
    quantize::RangeCollector collector(calibration_);
    Collect collect(quantize::int8_activations(original.graph, int8_options_), collector);
    ev.add_observer(&collect);
    for (const auto& feeds : input_sets(ev)) ev.run({}, feeds);
    return collector.ranges();
  }

  // GPTQ's calibration: X^T X of every weight MatMul's input (rows of its last axis), over the
  // token windows of --tokens/--text (each a prefill, as the loss is measured) or the input sets.
  std::map<std::string, std::vector<double>> input_hessians(const Model& original, const GlobalOptions& g) {
    ReferenceEvaluator ev(original, {&registry(g)});
    quantize::HessianCollector accumulate(original.graph);
    ev.add_observer(&accumulate);
    if (!tokens_.empty() || !text_.empty()) {
      generate::Generator gen(ev, generate::find_signature(ev.model().graph));
      for (const std::vector<int64_t>& window : quality::token_windows(lm_.tokens, lm_.context))
        gen.run({.prompt = Tensor::from_vector<int64_t>({1, int64_t(window.size())}, window), .new_tokens = 1}, {});
    } else {
      for (const auto& feeds : input_sets(ev)) ev.run({}, feeds);
    }
    ev.remove_observer(&accumulate);
    return std::move(accumulate.hessians);
  }

  int execute_float16(const GlobalOptions& g) {
    for (const std::string& e : split_list(float16_block_)) float16_options_.node_block.insert(e), float16_options_.op_block.insert(e);
    const Model original = open_model(in_);
    ReferenceEvaluator ev(original, {&registry(g)});
    const auto [types, overflow] = quantize::calibrate_float16(ev, input_sets(ev));
    const quantize::Float16Result r = quantize::convert_float16(original, float16_options_, types, overflow);
    save_model(r.model, out_);
    fmt::print("converted {} of {} nodes to float16{}: {}\n", r.converted_nodes, original.graph.nodes.size(),
               float16_options_.keep_io_types ? " (inputs and outputs kept in float)" : "", out_);
    for (const auto& [node, why] : r.blocked) fmt::print("  kept in float: '{}': {}\n", node, why);
    fmt::print("{} float tensors converted, {} values clamped to float16's range\n", r.converted_tensors, r.clamped_values);
    print_weights(weight_bytes(original), weight_bytes(r.model));
    return measure(original, r.model, g);
  }

  // A language model's loss on token windows, as `compare --tokens` shows it.
  int measure_tokens(ReferenceEvaluator& a, ReferenceEvaluator& b) {
    const quality::LmFigures f = quality::compare_language_models(a, in_, b, out_, lm_);
    fmt::print("A: {} (float)\nB: {} (quantized)\n{} window(s) of {} tokens: {} predictions\n", in_, out_, f.windows, f.context, f.tokens);
    return quality::print_lm_figures(f, gates_) ? kOk : kCheckFailed;
  }

  // The loss over the input sets (or token windows) and the time per run, as `compare` and
  // `profile` would show them.
  int measure(const Model& original, const Model& quantized, const GlobalOptions& g) {
    ReferenceEvaluator a(original, {&registry(g)}), b(quantized, {&registry(g)});
    if (!tokens_.empty() || !text_.empty()) return measure_tokens(a, b);
    const std::vector<std::string> names = a.output_names();
    std::vector<quality::OutputStats> stats(names.size());
    for (size_t k = 0; k < names.size(); ++k) stats[k].name = names[k];
    const std::vector<std::map<std::string, Value>> sets = input_sets(a);
    for (size_t s = 0; s < sets.size(); ++s) {
      const Values out_a = a.run({}, sets[s]), out_b = b.run({}, feeds_as_declared(b, sets[s]));
      for (size_t k = 0; k < names.size(); ++k)
        if (out_a[k].is_tensor() && out_b[k].is_tensor())
          stats[k].add(fmt::format("seed {}", inputs_.seed + s), out_a[k].tensor(), out_b[k].tensor());
    }
    const std::map<std::string, Value>& first = sets.front();
    fmt::print("{} input set(s), the float model against the quantized one:\n", set_count());
    fmt::print("{:<24} {:>11} {:>11} {:>10} {:>8}\n", "output", "max_abs", "cosine_min", "snr_db_min", "top1");
    bool passed = true;
    for (const quality::OutputStats& s : stats) {
      if (!s.sets) continue;
      fmt::print("{:<24} {:>11.4g} {:>11.7f} {:>10.2f} {:>8.4f}\n", s.name, s.max_abs, s.cosine_min, s.snr_db_min, s.top1_agreement());
      if (min_snr_ && s.snr_db_min < *min_snr_) fmt::print("gate: '{}' SNR {:.2f} dB < --min-snr {}\n", s.name, s.snr_db_min, *min_snr_), passed = false;
      if (min_cosine_ && s.cosine_min < *min_cosine_)
        fmt::print("gate: '{}' cosine {:.7f} < --min-cosine {}\n", s.name, s.cosine_min, *min_cosine_), passed = false;
    }
    if (runs_ > 0) {
      const double t_a = median_ms(a, first, runs_), t_b = median_ms(b, feeds_as_declared(b, first), runs_);
      fmt::print("refeval run time (median of {}, {} thread(s)): {:.3f} ms -> {:.3f} ms ({:.2f}x)\n", runs_, thread_count(), t_a, t_b, t_b / t_a);
    }
    return passed ? kOk : kCheckFailed;
  }

  std::string in_, out_, exclude_, tokens_, text_, tokenizer_, algo_ = "rtn";
  quality::LmOptions lm_;
  quality::LmGates gates_;
  bool int4_ = false, int8_ = false, float16_ = false;
  quantize::Int4Options int4_options_;
  quantize::Int8Options int8_options_;
  std::vector<CLI::Option*> int4_only_, float16_only_, calibrate_only_;
  quantize::CalibrationOptions calibration_;
  quantize::Float16Options float16_options_;
  std::string float16_block_;
  int random_sets_ = 3, runs_ = 5;
  std::vector<std::string> input_set_dirs_;
  std::optional<double> min_snr_, min_cosine_;
  InputOptions inputs_;
};

}  // namespace

std::unique_ptr<Verb> make_quantize_verb() { return std::make_unique<QuantizeVerb>(); }

}  // namespace refeval::cli

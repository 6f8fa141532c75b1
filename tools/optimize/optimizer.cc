#include "optimizer.h"

#include <chrono>
#include <random>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "refeval/error.h"
#include "refeval/evaluator.h"
#include "graph_edit.h"
#include "model_type.h"
#include "opset_convert.h"
#include "ort_cpu_forms.h"
#include "shape_inference.h"

namespace refeval::optimize {
namespace {

// The basic level runs in rounds until nothing changes (a fold exposes more to fold).
constexpr int kBasicRounds = 4;

std::vector<Pass> basic_passes() {
  return {identity_elimination_pass(), dropout_elimination_pass(), noop_elimination_pass(), transpose_chain_pass(),
          identity_elimination_pass(), shape_folding_pass(),       constant_folding_pass(), cse_pass(),
          conv_bn_pass(),              matmul_add_gemm_pass(),      constant_sharing_pass(),     dead_code_pass()};
}

// Canonical forms first, as MLIR canonicalizes before it matches: rewrites that put a
// computation into the form every fusion reads (HF's Conv1D Gemm between Reshapes back to MatMul +
// Add, GPT-NeoX's head-interleaved and timm's unbound q/k/v as parts, run-time Reshape targets as
// constants, the scores' Shape read from the graph inputs) and fuse nothing themselves.
// They run before the fusions in every order.
std::vector<Pass> canonical_passes() {
  return {einsum_matmul_pass(), gemm_reshape_pass(), split_qkv_pass(), reshape_fusion_pass(), shape_source_pass()};
}

// ORT's transformer optimizer order (llm-decoders.md §3.2): normalisations, GELUs and SiLU, skip
// normalisations, rotary, attention, then the bias fusions; fused MatMul last. One order serves
// every model type: a pass whose pattern is absent finds no candidate, so a type never switches
// off a fusion the graph allows (ORT's optimizer runs per-type fusion lists; a wrong --model-type
// there silently fuses less). The list runs in rounds until nothing changes, so a fusion that
// needs another's result (BiasGelu a Gelu) is found whatever the order.
std::vector<Pass> fusion_passes(const std::string& target) {
  std::vector<Pass> passes = {layer_norm_pass(),       simplified_layer_norm_pass(), gelu_pass(),       fast_gelu_pass(),
                              quick_gelu_pass(),       skip_layer_norm_pass(),       skip_simplified_layer_norm_pass(),
                              rotary_embedding_pass(), attention_pass(),             transpose_sandwich_pass()};
  // EmbedLayerNormalization has no standard form: the lookups and the LayerNormalization stay.
  if (target != "onnx") passes.push_back(embed_layer_norm_pass());
  passes.push_back(bias_gelu_pass());
  passes.push_back(bias_skip_layer_norm_pass());
  // FusedMatMul has no standard form better than the Transpose + MatMul it replaced.
  if (target != "onnx") passes.push_back(fused_matmul_pass());
  passes.push_back(constant_sharing_pass());
  return passes;
}

// After the fusions, once: the rewrite into standard operators, and dead code.
std::vector<Pass> finishing_passes(const std::string& target) {
  std::vector<Pass> passes;
  if (target == "onnx") passes.push_back(to_standard_ops_pass());
  if (target == "ort") passes.push_back(mha_projections_pass()), passes.push_back(residual_sum_pass());
  passes.push_back(dead_code_pass());
  return passes;
}

constexpr int kExtendedRounds = 4;

// `passes` in a seeded random order (the pass-order test: the order must not decide what fuses).
void shuffle(std::vector<Pass>& passes, std::optional<uint64_t> seed) {
  if (!seed) return;
  std::mt19937_64 rng(*seed);
  for (size_t i = passes.size(); i > 1; --i) std::swap(passes[i - 1], passes[size_t(rng() % i)]);
}

bool cpu_forms(const OptimizeOptions& o) { return o.target == "ort" && o.forms == "cpu"; }

bool enabled(const Pass& p, const OptimizeOptions& o) {
  if (!o.only.empty() && !o.only.count(p.name) && p.name != "dead-code") return false;
  if (cpu_forms(o) && slower_on_ort_cpu().count(p.name) && !o.only.count(p.name)) return false;
  if ((p.name == "residual-sum" || p.name == "mha-projections") && !cpu_forms(o)) return false;
  return !o.disable.count(p.name);
}

void set_opset(Model& m, const Registry& registry, int64_t opset) {
  const int64_t from = m.opsets.count("") ? m.opsets.at("") : 0;
  for (const Node& n : m.graph.nodes) {
    if (!n.domain.empty()) continue;
    const OpRegistration* a = registry.resolve("", n.op_type, from);
    const OpRegistration* b = registry.resolve("", n.op_type, opset);
    if (a != b)
      fail_usage(fmt::format("--opset {}: {} is version {} at opset {} and {} at opset {}; convert the model first", opset,
                             n.describe(), a ? a->since_version : 0, from, b ? b->since_version : 0, opset));
  }
  m.opsets[""] = opset;
}

// `fresh` with `earlier`'s types wherever `fresh` knows less (no type, or no shape).
Inference merged(Inference fresh, const Inference& earlier) {
  for (const auto& [name, type] : earlier.types) {
    auto [it, added] = fresh.types.emplace(name, type);
    if (!added && !it->second.has_shape && type.has_shape) it->second = type;
  }
  for (const auto& [name, data] : earlier.shape_data) fresh.shape_data.emplace(name, data);
  for (const auto& [name, poly] : earlier.aliases) fresh.aliases.emplace(name, poly);
  return fresh;
}

// The com.microsoft domain imported once a pass has written one of its operators, so every model
// between passes (--verify-each) and the result load anywhere.
void import_microsoft(Model& m) {
  for (const Node& n : m.graph.nodes)
    if (n.domain == "com.microsoft" && !m.opsets.count("com.microsoft")) {
      m.opsets["com.microsoft"] = 1;
      return;
    }
}

// A later round's --explain into the first's: the fused counts add up, and each pass's refusals
// are the ones the last round that gave it candidates gave (what it fused meanwhile is no longer
// refused; a note on the form it wrote stays, named by the node written).
void merge_later_round(Explain& into, const Explain& later) {
  std::set<std::string> passes_run;  // ... that saw candidates: a pass that saw none keeps its earlier notes
  for (const Explain::PassCount& c : later.counts) {
    if (c.candidates > 0) passes_run.insert(c.pass);
    auto it = std::find_if(into.counts.begin(), into.counts.end(), [&](const auto& e) { return e.pass == c.pass; });
    if (it == into.counts.end()) into.counts.push_back(c);
    else it->fused += c.fused;
  }
  std::erase_if(into.not_fused, [&](const std::string& line) {
    for (const std::string& p : passes_run)
      if (line.rfind("not fused: " + p + " at '", 0) == 0) return true;
    return false;
  });
  into.not_fused.insert(into.not_fused.end(), later.not_fused.begin(), later.not_fused.end());
  into.made = later.made;
}

// The fusion passes that write a com.microsoft operator (for --target onnx's fallback).
std::vector<std::string> passes_writing(const std::string& op_type) {
  static const std::map<std::string, std::vector<std::string>> writers = {
      {"Attention", {"attention"}},
      {"MultiHeadAttention", {"attention"}},
      {"RotaryEmbedding", {"rotary-embedding"}},
      {"SkipLayerNormalization", {"skip-layer-norm", "bias-skip-layer-norm"}},
      {"SkipSimplifiedLayerNormalization", {"skip-simplified-layer-norm"}},
      {"SimplifiedLayerNormalization", {"simplified-layer-norm"}},
      {"Gelu", {"gelu"}},
      {"FastGelu", {"fast-gelu"}},
      {"BiasGelu", {"bias-gelu"}},
      {"QuickGelu", {"quick-gelu"}}};
  auto it = writers.find(op_type);
  return it == writers.end() ? std::vector<std::string>{} : it->second;
}

}  // namespace

std::vector<std::string> pass_names() {
  std::vector<std::string> names;
  for (const auto& list : {basic_passes(), canonical_passes(), fusion_passes("ort"), fusion_passes("onnx"), finishing_passes("onnx"), finishing_passes("ort")})
    for (const Pass& p : list)
      if (std::find(names.begin(), names.end(), p.name) == names.end()) names.push_back(p.name);
  return names;
}

Level parse_level(const std::string& s) {
  if (s == "basic") return Level::Basic;
  if (s == "extended" || s == "all") return Level::Extended;
  fail_usage(fmt::format("--level: '{}' is not basic, extended or all", s));
}

void check_pass_names(const std::set<std::string>& names) {
  const std::vector<std::string> known = pass_names();
  for (const std::string& n : names)
    if (std::find(known.begin(), known.end(), n) == known.end())
      fail_usage(fmt::format("unknown pass '{}'; passes: {}", n, fmt::join(known, ", ")));
}

std::map<std::string, int> op_counts(const Graph& g) {
  std::map<std::string, int> c;
  for (const Node& n : g.nodes) ++c[n.op_type];
  return c;
}

uint64_t weight_bytes(const Graph& g) {
  uint64_t b = 0;
  for (const Initializer& i : g.initializers) b += i.value.nbytes();
  return b;
}

OptimizeResult optimize(Model model, const Registry& registry, const OptimizeOptions& options) {
  // --target onnx writes standard operators only: a fused node with no standard form here makes
  // the optimizer run again without the fusion that wrote it, saying why. A com.microsoft node the
  // input already had cannot be left out: that is the usage error it always was.
  if (options.target == "onnx" && options.level >= Level::Extended) {
    std::set<std::string> given;
    for (const Node& n : model.graph.nodes)
      if (n.domain == "com.microsoft" || (n.domain.empty() && n.op_type == "SimplifiedLayerNormalization")) given.insert(n.op_type);
    OptimizeOptions narrowed = options;
    std::vector<std::string> notes;
    for (int attempt = 0;; ++attempt) {
      OptimizeResult r = optimize_once(model, registry, narrowed);
      if (r.unconverted.empty() || !r.broken_by.empty()) {
        r.notes.insert(r.notes.begin(), notes.begin(), notes.end());
        return r;
      }
      bool narrower = false;
      for (const auto& [op, why] : r.unconverted) {
        if (given.count(op)) fail_usage(fmt::format("--target onnx: {} (the input has this node: no fusion can be left out instead)", why));
        for (const std::string& pass : passes_writing(op))
          if (narrowed.disable.insert(pass).second) {
            narrower = true;
            notes.push_back(fmt::format("--target onnx: '{}' left out: {}", pass, why));
          }
      }
      if (!narrower || attempt > 8) fail_usage(fmt::format("--target onnx: {}", r.unconverted.front().second));
    }
  }
  return optimize_once(std::move(model), registry, options);
}

OptimizeResult optimize_once(Model model, const Registry& registry, const OptimizeOptions& options) {
  own_bodies(model.graph);  // the passes edit bodies in place: the caller's model keeps its own
  if (!options.model_type.empty()) {
    std::vector<std::string> known;
    for (const auto& [type, family] : model_types()) known.push_back(type);
    if (std::find(known.begin(), known.end(), options.model_type) == known.end())
      fail_usage(fmt::format("--model-type: '{}' is not one of {}", options.model_type, fmt::join(known, ", ")));
  }
  if (options.target != "ort" && options.target != "onnx") fail_usage(fmt::format("--target: '{}' is not ort or onnx", options.target));
  if (options.forms != "cpu" && options.forms != "all") fail_usage(fmt::format("--forms: '{}' is not cpu or all", options.forms));
  if (options.target == "onnx" && options.opset && *options.opset < 23)
    fail_usage(fmt::format("--opset {} with --target onnx: the standard attention, RMS and rotary operators need opset 23", *options.opset));
  if (options.target == "onnx" && options.level < Level::Extended) fail_usage("--target onnx rewrites the fused operators: it needs --level extended or all");
  check_pass_names(options.only);
  check_pass_names(options.disable);
  // The model must plan (known operators, valid attributes, every input produced): the passes and
  // ONNX's shape inference then see a well-formed graph, in topological order.
  { const ReferenceEvaluator planned(model, {&registry}); }
  topological_sort(model.graph);
  OptimizeResult result;
  Inference inference;
  PassContext ctx{registry, &inference, options.explain ? &result.explain : nullptr};
  ctx.cpu_forms = cpu_forms(options);
  if (ctx.cpu_forms && options.level >= Level::Extended && options.only.empty() && options.explain)
    result.explain.not_fused.push_back(fmt::format("left out by --forms cpu: {}: {}; --forms all writes them", fmt::join(slower_on_ort_cpu(), ", "),
                                                   kSlowerOnOrtCpu));
  // Runs one pass; false when the check after it failed.
  auto run = [&](const Pass& pass) {
    if (!enabled(pass, options)) return true;
    const Model before = options.check_each ? model : Model{};
    const auto start = std::chrono::steady_clock::now();
    const int count = pass.run(model, ctx);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    result.passes.push_back({pass.name, pass.counter, count, ms, model.graph.nodes.size()});
    spdlog::debug("pass {}: {} ({:.1f} ms), {} nodes", pass.name, count, ms, model.graph.nodes.size());
    if (count > 0) import_microsoft(model);
    if (count > 0 && options.check_each && !options.check_each(before, model, pass.name)) {
      result.broken_by = pass.name;
      return false;
    }
    return true;
  };
  std::vector<Pass> basic = basic_passes();
  shuffle(basic, options.shuffle_seed);
  for (int round = 0; round < kBasicRounds; ++round) {
    inference = infer(model);
    const size_t passes_before = result.passes.size();
    for (const Pass& p : basic)
      if (!run(p)) return result.model = std::move(model), result;
    bool changed = false;
    for (size_t i = passes_before; i < result.passes.size(); ++i) changed = changed || result.passes[i].count > 0;
    if (!changed) break;
  }
  inference = infer(model);
  // What the model is, read where its attention is plainest: before the attention pass (norms and
  // rotary fused, so a Llama's rotated heads read as heads), or after the basic level.
  auto detect = [&] {
    result.kind = detect_model_kind(GraphIndex(model.graph, &inference));
    result.type_warning = type_mismatch(options.model_type, result.kind);
  };
  if (options.level < Level::Extended) detect();
  if (options.level >= Level::Extended) {
    std::vector<Pass> fusions = canonical_passes(), rest = fusion_passes(options.target);
    shuffle(fusions, options.shuffle_seed);
    shuffle(rest, options.shuffle_seed);
    fusions.insert(fusions.end(), rest.begin(), rest.end());
    bool detected = false;
    // A pass's own refusals stand as the last round that ran it saw them; its counts add up.
    Explain later;
    for (int round = 0; round < kExtendedRounds; ++round) {
      if (round > 0 && ctx.explain) later = Explain{}, later.made = result.explain.made, ctx.explain = &later;
      bool changed = false;
      for (const Pass& p : fusions) {
        // again in a later round while nothing was read (attention that fuses only once a
        // canonical form or a rotary fusion of the first round has run)
        if (p.name == "attention" && (!detected || result.kind.type.empty())) detect(), detected = true;
        const size_t before = result.passes.size();
        if (!run(p)) return result.model = std::move(model), result;
        // A fusion keeps the names and types of the values it does not remove, but the values
        // it adds (a MatMul's product) are unknown until inferred again; what ONNX cannot type
        // anew (after com.microsoft operators) keeps its earlier type.
        if (result.passes.size() > before && result.passes.back().count > 0) {
          changed = true;
          inference = merged(infer(model, &inference), inference);
        }
      }
      if (round > 0 && options.explain) {
        merge_later_round(result.explain, later);
        ctx.explain = &result.explain;
      }
      if (!changed) break;
    }
    for (const Pass& p : finishing_passes(options.target))
      if (!run(p)) return result.model = std::move(model), result;
  }
  result.unconverted = ctx.unconverted;
  result.notes.insert(result.notes.end(), ctx.limits.begin(), ctx.limits.end());
  if (options.opset && options.target == "onnx") convert_opset(model, registry, *options.opset);
  else if (options.opset) set_opset(model, registry, *options.opset);
  result.model_type = options.model_type.empty() ? result.kind.type : options.model_type;
  // A candidate one pass left and a later pass fused (an RMSNorm's Sqrt seen by layer-norm) is
  // no longer there: only what is still in the graph was "not fused".
  std::set<std::string> names;
  for (const Node& n : model.graph.nodes) names.insert(n.name.empty() ? n.outputs.at(0) : n.name);
  std::erase_if(result.explain.not_fused, [&](const std::string& line) {
    const size_t at = line.find(" at '"), end = line.find("': ", at == std::string::npos ? 0 : at);
    return at != std::string::npos && end != std::string::npos && !names.count(line.substr(at + 5, end - at - 5));
  });
  import_microsoft(model);
  result.model = std::move(model);
  return result;
}

}  // namespace refeval::optimize

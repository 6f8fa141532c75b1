// The profiler, the profile reader, the optimizer, the quantizer and the viewer from Python:
// refeval.profile(), read_profile(), optimize(), quantize() and show() (see
// python/refeval/__init__.py), the same libraries the `profile`, `report`, `optimize`, `quantize`
// and `show` verbs drive.
#include "tools.h"

#include <cstdlib>
#include <filesystem>
#include <algorithm>

#include <fmt/format.h>
#include <pybind11/stl.h>

#include "aggregate.h"
#include "dot_format.h"
#include "html_view.h"
#include "generate/generator.h"
#include "quality/lm_compare.h"
#include "convert.h"
#include "debug/accuracy.h"
#include "debug/reduce.h"
#include "refeval/dump.h"
#include "optimizer.h"
#include "quantize/float16.h"
#include "quantize/gptq.h"
#include "quantize/int4.h"
#include "quantize/int8.h"
#include "profile_file.h"
#include "profiled_model.h"
#include "runs.h"
#include "refeval/model_io.h"

namespace refeval::python {

py::dict profile_model(const std::string& model_path, const py::dict& feeds, int warmup, int repeat, const std::string& out) {
  profile::ProfiledModel profiled([&] { return load_model(model_path); }, Registry::builtin());
  const std::map<std::string, Value> values = feeds_from_python(feeds, profiled.evaluator().model().graph);
  {
    py::gil_scoped_release release;
    for (int i = 0; i < warmup + repeat; ++i) profiled.run(values);
  }
  std::vector<profile::Event> events = profiled.events();
  profile::write_profile(out, events);
  const profile::LoadedProfiles loaded = profile::loaded_from({out, std::move(events), {}}, {.range = std::to_string(warmup) + ":", .phase = ""});
  const profile::Table t = profile::aggregate(out, loaded.runs_in_files, loaded.runs, profile::GroupBy::Op);
  py::list rows;
  for (const profile::Row& r : t.rows)
    rows.append(py::dict(py::arg("op_type") = r.key, py::arg("total_ms") = r.total_ms, py::arg("count") = r.count,
                         py::arg("mean_ms") = r.mean_ms, py::arg("pct") = r.pct));
  return py::dict(py::arg("path") = out, py::arg("runs") = t.summary.runs_used, py::arg("wall_ms") = t.summary.wall_ms,
                  py::arg("kernel_ms") = t.summary.kernel_ms, py::arg("by_op") = rows);
}

std::string compare_language_models(const std::string& a_path, const std::string& b_path, const py::handle& tokens, int64_t context,
                                    int generate) {
  ReferenceEvaluator a(load_model(a_path), EvaluatorOptions{&Registry::builtin()});
  ReferenceEvaluator b(load_model(b_path), EvaluatorOptions{&Registry::builtin()});
  quality::LmOptions opt;
  opt.tokens = numpy_to_tensor(tokens, "tokens");
  if (opt.tokens.rank() == 1) opt.tokens = opt.tokens.reshaped({1, opt.tokens.dim(0)});
  opt.context = context, opt.generate = generate;
  py::gil_scoped_release release;
  return quality::compare_language_models(a, a_path, b, b_path, opt).to_json(true).dump();
}

std::string generate_model(const std::string& model_path, const py::handle& prompt, const py::handle& prompt_mask, int new_tokens,
                           std::optional<int64_t> eos, std::optional<int64_t> max_length, const std::string& profile_path) {
  profile::ProfiledModel profiled([&] { return load_model(model_path); }, Registry::builtin());
  ReferenceEvaluator& ev = profiled.evaluator();
  if (profile_path.empty()) ev.remove_observer(profiled.profiler());
  generate::Generator gen(ev, generate::find_signature(ev.model().graph));
  generate::GenerateOptions opt;
  opt.prompt = numpy_to_tensor(prompt, "prompt");
  if (opt.prompt.rank() == 1) opt.prompt = opt.prompt.reshaped({1, opt.prompt.dim(0)});
  if (!prompt_mask.is_none()) opt.prompt_mask = numpy_to_tensor(prompt_mask, "prompt_mask").reshaped(opt.prompt.shape());
  opt.new_tokens = new_tokens, opt.eos = eos, opt.max_length = max_length;
  generate::StepHooks hooks;
  if (!profile_path.empty()) {
    hooks.before = [&](int, const std::map<std::string, Value>&) { profiled.profiler()->begin_run(); };
    hooks.after = [&](int step, int64_t kv_bytes) {
      profiled.profiler()->end_run({{"phase", generate::phase_of(step)}, {"step", step}, {"kv_cache_bytes", kv_bytes}});
    };
  }
  generate::GenerateResult r;
  {
    py::gil_scoped_release release;
    r = gen.run(opt, hooks);
    if (!profile_path.empty()) profile::write_profile(profile_path, profiled.events());
  }
  return r.to_json().dump();
}

py::dict optimize_model(const std::string& in, const std::string& out, const std::string& level, const std::string& model_type,
                        const std::vector<std::string>& only, const std::vector<std::string>& disable, const std::string& target,
                        const std::string& forms) {
  optimize::OptimizeOptions o;
  o.level = optimize::parse_level(level);
  o.model_type = model_type;
  o.target = target;
  o.forms = forms;
  o.explain = true;
  o.only.insert(only.begin(), only.end());
  o.disable.insert(disable.begin(), disable.end());
  const Model original = load_model(in);
  optimize::OptimizeResult result;
  {
    py::gil_scoped_release release;
    result = optimize::optimize(original, Registry::builtin(), o);
    save_model(result.model, out);
  }
  py::dict counters;
  for (const optimize::PassStats& p : result.passes)
    if (p.count) counters[p.counter.c_str()] = counters.contains(p.counter) ? counters[p.counter.c_str()].cast<int>() + p.count : p.count;
  py::dict candidates;
  for (const optimize::Explain::PassCount& c : result.explain.counts)
    if (c.candidates) candidates[c.pass.c_str()] = py::make_tuple(c.candidates, c.fused);
  return py::dict(py::arg("path") = out, py::arg("nodes_before") = original.graph.nodes.size(),
                  py::arg("nodes_after") = result.model.graph.nodes.size(), py::arg("counters") = counters,
                  py::arg("operators") = optimize::op_counts(result.model.graph), py::arg("model_type") = result.model_type,
                  py::arg("candidates") = candidates, py::arg("not_fused") = result.explain.not_fused);
}

// scheme="float16": the float model runs on `feed_sets` (its element types, and the nodes whose
// values leave float16's range, kept in float), then converts as `refeval quantize --float16`.
py::dict float16_model(const std::string& in, const std::string& out, bool keep_io_types, const std::vector<std::string>& block,
                       const py::list& feed_sets) {
  if (feed_sets.empty()) fail_usage("quantize: scheme='float16' needs feeds: a list of input dicts to find the values float16 cannot hold");
  const Model original = load_model(in);
  ReferenceEvaluator ev(original, EvaluatorOptions{&Registry::builtin()});
  std::vector<std::map<std::string, Value>> sets;
  for (const auto& item : feed_sets) sets.push_back(feeds_from_python(py::cast<py::dict>(item), original.graph));
  quantize::Float16Options o;
  o.keep_io_types = keep_io_types;
  for (const std::string& b : block) o.node_block.insert(b), o.op_block.insert(b);
  quantize::Float16Result r;
  {
    py::gil_scoped_release release;
    const auto [types, overflow] = quantize::calibrate_float16(ev, sets);
    r = quantize::convert_float16(original, o, types, overflow);
    save_model(r.model, out);
  }
  py::dict kept;
  for (const auto& [node, why] : r.blocked) kept[node.c_str()] = why;
  return py::dict(py::arg("path") = out, py::arg("converted_nodes") = r.converted_nodes, py::arg("kept_in_float") = kept,
                  py::arg("clamped_values") = r.clamped_values);
}

py::dict quantize_model(const std::string& in, const std::string& out, const std::string& scheme, int64_t block_size,
                        bool symmetric, int64_t accuracy_level, bool embeddings, const std::string& algo, bool per_channel,
                        bool reduce_range, const std::vector<std::string>& exclude, bool keep_io_types,
                        const std::vector<std::string>& float16_block, const py::list& feed_sets) {
  if (scheme == "float16") return float16_model(in, out, keep_io_types, float16_block, feed_sets);
  if (scheme != "int4" && scheme != "int8") fail_usage(fmt::format("quantize: scheme '{}' is not int4, int8 or float16", scheme));
  if (algo != "rtn" && algo != "hqq" && algo != "gptq") fail_usage(fmt::format("quantize: algo '{}' is not rtn, hqq or gptq", algo));
  if (algo == "gptq" && (scheme != "int4" || feed_sets.empty() || symmetric || embeddings))
    fail_usage("quantize: algo='gptq' writes asymmetric int4 blocks of MatMul weights (scheme='int4', no symmetric or embeddings) "
               "and needs feeds: a list of input dicts, the calibration inputs");
  const Model original = load_model(in);
  std::vector<std::map<std::string, Value>> sets;
  if (algo == "gptq")
    for (const auto& item : feed_sets) sets.push_back(feeds_from_python(py::cast<py::dict>(item), original.graph));
  quantize::QuantizeResult q;
  {
    py::gil_scoped_release release;
    if (scheme == "int4") {
      quantize::Int4Options o;
      o.block_size = block_size, o.symmetric = symmetric, o.accuracy_level = accuracy_level, o.embeddings = embeddings;
      o.hqq = algo == "hqq";
      if (algo == "gptq") {  // X^T X of each weight MatMul's input over the feeds
        ReferenceEvaluator ev(original, EvaluatorOptions{&Registry::builtin()});
        quantize::HessianCollector collect(original.graph);
        ev.add_observer(&collect);
        for (const auto& feeds : sets) ev.run({}, feeds);
        o.hessians = std::move(collect.hessians);
      }
      o.exclude.insert(exclude.begin(), exclude.end());
      q = quantize::quantize_int4(original, o);
    } else {
      quantize::Int8Options o;
      o.per_channel = per_channel, o.reduce_range = reduce_range;
      o.exclude.insert(exclude.begin(), exclude.end());
      q = quantize::quantize_int8(original, o);
    }
    quantize::require_quantized(q, in);
    save_model(q.model, out);
  }
  auto bytes = [](const Model& m) {
    int64_t b = 0;
    for (const Initializer& i : m.graph.initializers) b += int64_t(i.value.nbytes());
    return b;
  };
  py::dict not_quantized;
  for (const auto& [node, why] : q.skipped) not_quantized[node.c_str()] = why;
  for (const auto& [node, why] : q.tables_skipped) not_quantized[node.c_str()] = why;
  py::dict tied;  // a tied LM head: "shared" (the table's int4 blocks) or "copied" (the table transposed)
  for (const std::string& node : q.tied_shared) tied[node.c_str()] = "shared";
  for (const std::string& node : q.tied_copied) tied[node.c_str()] = "copied";
  return py::dict(py::arg("path") = out, py::arg("quantized") = q.quantized, py::arg("tables") = q.tables, py::arg("not_quantized") = not_quantized,
                  py::arg("computed_products") = q.computed_products, py::arg("tied_heads") = tied, py::arg("weight_bytes_before") = bytes(original),
                  py::arg("weight_bytes_after") = bytes(q.model));
}

py::dict reduce_model(const std::string& model_path, const std::string& out, const py::list& feed_sets, const std::string& predicate,
                      const std::string& argument, double rtol, double atol, const std::string& mode, const std::string& freeze,
                      bool all_sets, int max_steps) {
  const Model model = load_model(model_path);
  std::vector<ValueRecord> dump;
  if (predicate == "compare") dump = read_dump(argument);
  std::vector<reduce::Feeds> sets;
  for (const auto& item : feed_sets) {
    const py::dict d = py::cast<py::dict>(item);
    if (d.empty() && !dump.empty()) {  // the dump's own feeds, as `refeval compare` takes them
      reduce::Feeds f;
      for (const ValueRecord& r : dump)
        if (r.source == ValueRecord::Source::Input) f[r.name] = r.value;
      sets.push_back(std::move(f));
    } else {
      sets.push_back(feeds_from_python(d, model.graph));
    }
  }
  std::filesystem::path work;
  std::unique_ptr<reduce::Predicate> pred;
  if (predicate == "nan") pred = reduce::nan_predicate();
  else if (predicate == "error") pred = reduce::error_predicate(argument);
  else if (predicate == "compare") pred = reduce::compare_predicate(dump, {rtol, atol});
  else if (predicate == "check") {
    std::string tmpl = (std::filesystem::temp_directory_path() / "refeval-reduce-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) fail_input("reduce: cannot create a temporary folder for check");
    work = tmpl;
    pred = reduce::check_predicate(argument, work.string());
  } else fail_usage("reduce: predicate must be nan, compare, check or error");
  reduce::Options opt;
  opt.mode = mode == "bisect" ? reduce::Mode::Bisect : mode == "linear" ? reduce::Mode::Linear : reduce::Mode::Both;
  if (mode != "bisect" && mode != "linear" && mode != "both") fail_usage("reduce: mode must be bisect, linear or both");
  if (freeze != "inputs" && freeze != "constants") fail_usage("reduce: freeze must be inputs or constants");
  opt.freeze = freeze == "constants" ? reduce::Freeze::Constants : reduce::Freeze::Inputs;
  opt.all_sets = all_sets;
  opt.max_steps = max_steps;
  reduce::Result r;
  std::string problem;
  {
    py::gil_scoped_release release;
    try {
      r = reduce::reduce(model, sets, *pred, opt);
    } catch (...) {
      if (!work.empty()) std::filesystem::remove_all(work);
      throw;
    }
    if (!work.empty()) std::filesystem::remove_all(work);
    problem = reduce::write_result(r, out);
  }
  return py::dict(py::arg("path") = out, py::arg("original_nodes") = r.original_nodes, py::arg("nodes") = r.model.graph.nodes.size(),
                  py::arg("kept") = r.kept, py::arg("steps") = r.steps - 1, py::arg("stopped") = r.stopped,
                  py::arg("detail") = r.detail, py::arg("no_expected_outputs") = problem);
}

py::dict profile_events(const std::vector<std::string>& paths, const std::string& range, bool include_warmup, const std::string& phase) {
  // Columns, not one dict per event: a GPT-2 profile has tens of thousands of events.
  py::list file, run, run_phase, step, node, op_type, provider, node_index, start, duration, depth, inputs, outputs, input_shapes,
      output_shapes, activation_size, parameter_size, output_size, live_bytes;
  py::list runs, warnings;
  int runs_in_files = 0;
  // One file at a time, as load_profiles() applies the selection to each file on its own, so each
  // run knows its file.
  for (const std::string& path : paths) {
    const profile::LoadedProfiles p = profile::load_profiles({path}, {.include_warmup = include_warmup, .range = range, .phase = phase});
    runs_in_files += p.runs_in_files;
    for (const std::string& w : p.warnings) warnings.append(w);
    for (const profile::Run& r : p.runs) {
      int64_t fence_us = 0;
      for (const profile::Event* e : r.fences) fence_us += e->dur;
      runs.append(py::dict(py::arg("file") = path, py::arg("run") = r.index, py::arg("start_us") = r.ts, py::arg("duration_us") = r.dur,
                           py::arg("phase") = r.phase, py::arg("step") = r.step, py::arg("kv_cache_bytes") = r.kv_cache_bytes,
                           py::arg("top_level_kernel_us") = r.top_level_kernel_us(), py::arg("fence_us") = fence_us,
                           py::arg("fence_events") = r.fences.size(), py::arg("kernel_events") = r.kernels.size()));
      for (const profile::Event* e : r.kernels) {
        file.append(path), run.append(r.index), run_phase.append(r.phase), step.append(r.step);
        node.append(e->node), op_type.append(e->op_type), provider.append(e->provider);
        node_index.append(e->node_index ? py::object(py::int_(*e->node_index)) : py::object(py::none()));
        start.append(e->ts), duration.append(e->dur);
        // refeval marks nodes inside If/Loop/Scan bodies with args.depth; their time is inside their caller's.
        const auto d = e->extra_args.find("depth");
        depth.append(d == e->extra_args.end() ? 0 : std::max<int64_t>(1, d->is_number_integer() ? d->get<int64_t>() : d->is_string() ? std::atoll(d->get<std::string>().c_str()) : 1));
        inputs.append(profile::shapes_to_string(e->inputs)), outputs.append(profile::shapes_to_string(e->outputs));
        py::list in_shapes, out_shapes;
        for (const profile::TypeShape& t : e->inputs) in_shapes.append(py::make_tuple(t.type, py::tuple(py::cast(t.shape))));
        for (const profile::TypeShape& t : e->outputs) out_shapes.append(py::make_tuple(t.type, py::tuple(py::cast(t.shape))));
        input_shapes.append(in_shapes), output_shapes.append(out_shapes);
        activation_size.append(e->activation_size), parameter_size.append(e->parameter_size), output_size.append(e->output_size);
        // `profile --memory`: the activation bytes alive while a main-graph node ran (None elsewhere, NaN in the frame).
        const auto live = e->extra_args.find("live_bytes");
        live_bytes.append(live == e->extra_args.end() ? py::object(py::none())
                          : live->is_number_integer() ? py::object(py::int_(live->get<int64_t>()))
                          : live->is_number() ? py::object(py::int_(int64_t(live->get<double>())))
                          : live->is_string() ? py::object(py::int_(std::atoll(live->get<std::string>().c_str())))
                                              : py::object(py::none()));
      }
    }
  }
  py::dict columns(py::arg("file") = file, py::arg("run") = run, py::arg("phase") = run_phase, py::arg("step") = step,
                   py::arg("node") = node, py::arg("op_type") = op_type, py::arg("provider") = provider,
                   py::arg("node_index") = node_index, py::arg("start_us") = start, py::arg("duration_us") = duration,
                   py::arg("depth") = depth, py::arg("inputs") = inputs, py::arg("outputs") = outputs,
                   py::arg("input_shapes") = input_shapes, py::arg("output_shapes") = output_shapes,
                   py::arg("activation_size") = activation_size, py::arg("parameter_size") = parameter_size,
                   py::arg("output_size") = output_size, py::arg("live_bytes") = live_bytes);
  std::string label;
  for (const std::string& path : paths) label += (label.empty() ? "" : " + ") + path;
  return py::dict(py::arg("columns") = columns, py::arg("runs") = runs, py::arg("runs_in_files") = runs_in_files,
                  py::arg("label") = label, py::arg("warnings") = warnings);
}

std::string show_html(const std::string& model_path, const std::string& profile_path, const std::string& diff_path) {
  const Model model = load_model(model_path);
  py::gil_scoped_release release;
  if (!diff_path.empty()) {
    const Model other = load_model(diff_path);
    return show::html_diff(model, show::inferred_shapes(model), other, show::inferred_shapes(other));
  }
  std::optional<show::NodeTimes> times;
  if (!profile_path.empty()) times = show::node_times(profile_path);
  return show::html_view(model, show::inferred_shapes(model), times ? &*times : nullptr);
}

namespace {
// A model given as a path or as serialized bytes (a ModelProto's SerializeToString()).
Model model_from_python(const py::object& m) {
  if (py::isinstance<py::bytes>(m)) return parse_model(std::string(py::cast<py::bytes>(m)), std::filesystem::current_path().string());
  return load_model(py::cast<std::string>(py::str(m)));
}
}  // namespace

std::string accuracy_model(const py::object& model, const py::dict& feeds, const py::object& reference, int top_k, bool local) {
  const Model m = model_from_python(model);
  const std::map<std::string, Value> values = feeds_from_python(feeds, m.graph);
  const std::string name = py::isinstance<py::bytes>(model) ? "<memory>" : std::string(py::str(model));
  if (!reference.is_none()) {
    const Model r = model_from_python(reference);
    const std::map<std::string, Value> ref_values = feeds_from_python(feeds, r.graph);
    const std::string ref_name = py::isinstance<py::bytes>(reference) ? "<memory>" : std::string(py::str(reference));
    py::gil_scoped_release release;
    return accuracy::to_json(accuracy::against_reference(m, r, values, ref_values, nullptr), name, ref_name).dump();
  }
  accuracy::Options opt;
  opt.local = local;
  // top_k < 0: the CLI's default, 10 within one run of the graph's work.
  opt.top_k = !local ? 0 : top_k < 0 ? 10 : size_t(top_k);
  opt.budgeted = top_k < 0;
  py::gil_scoped_release release;
  return accuracy::to_json(accuracy::profile(m, values, opt), name).dump();
}

}  // namespace refeval::python

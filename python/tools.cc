// The profiler and the optimizer from Python: refeval.profile() and refeval.optimize() (see
// python/refeval/__init__.py), the same libraries the `profile` and `optimize` verbs drive.
#include "tools.h"

#include <pybind11/stl.h>

#include "aggregate.h"
#include "generate/generator.h"
#include "convert.h"
#include "optimizer.h"
#include "profile_file.h"
#include "profiled_model.h"
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
  const profile::LoadedProfiles loaded = profile::loaded_from({out, std::move(events), {}}, {.range = std::to_string(warmup) + ":"});
  const profile::Table t = profile::aggregate(out, loaded.runs_in_files, loaded.runs, profile::GroupBy::Op);
  py::list rows;
  for (const profile::Row& r : t.rows)
    rows.append(py::dict(py::arg("op_type") = r.key, py::arg("total_ms") = r.total_ms, py::arg("count") = r.count,
                         py::arg("mean_ms") = r.mean_ms, py::arg("pct") = r.pct));
  return py::dict(py::arg("path") = out, py::arg("runs") = t.summary.runs_used, py::arg("wall_ms") = t.summary.wall_ms,
                  py::arg("kernel_ms") = t.summary.kernel_ms, py::arg("by_op") = rows);
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
                        const std::vector<std::string>& only, const std::vector<std::string>& disable, const std::string& target) {
  optimize::OptimizeOptions o;
  o.level = optimize::parse_level(level);
  o.model_type = model_type;
  o.target = target;
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

}  // namespace refeval::python

// The native part of the `refeval` Python package (python/refeval/__init__.py is the API): an
// evaluator over a model file or bytes, with plugin libraries and Python operators in its own
// registry layered over the built-ins, the verbose trace written to Python's sys.stdout, the GIL
// released while the model runs. refeval errors reach Python as NativeError(kind, message).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdio>
#include <memory>
#include <set>

#include "convert.h"
#include "fusion/model_check.h"
#include "fusion/node_check.h"
#include "fusion/report.h"
#include "tools.h"
#include "refeval/address.h"
#include "refeval/evaluator.h"
#include "refeval/model_io.h"
#include "refeval/plugin.h"
#include "refeval/registry.h"
#include "refeval/numerics.h"
#include "refeval/threads.h"
#include "refeval/trace.h"

namespace refeval::python {
namespace {

const char* kind_name(ErrorKind k) {
  switch (k) {
    case ErrorKind::Usage: return "usage";
    case ErrorKind::Model: return "model";
    case ErrorKind::Input: return "input";
    case ErrorKind::Runtime: return "runtime";
    case ErrorKind::Resource: return "resource";
  }
  return "runtime";
}

py::object attribute_value(const Attribute& a) {
  switch (a.type) {
    case AttrType::Float: return py::float_(a.f);
    case AttrType::Int: return py::int_(a.i);
    case AttrType::String: return py::str(a.s);
    case AttrType::Floats: return py::cast(a.floats);
    case AttrType::Ints: return py::cast(a.ints);
    case AttrType::Strings: return py::cast(a.strings);
    case AttrType::Tensor: return tensor_to_numpy(a.t);
    default: return py::none();  // graphs and type protos are not passed to Python operators
  }
}

// A node of a Python operator class: the class's `run(*inputs)` (refeval.OpRun) called with numpy
// arrays, its tuple of arrays back as outputs. Holds the GIL only while Python code runs.
class PythonOp : public OpRun {
 public:
  PythonOp(const NodeContext& ctx, py::object cls) {
    py::gil_scoped_acquire gil;
    const Node& n = ctx.node();
    py::dict attrs;
    for (const Attribute& a : n.attributes) {
      attrs[a.name.c_str()] = attribute_value(a);
      ctx.ignore(a.name);  // read here, by the Python class
    }
    py::object node_info = py::module_::import("types").attr("SimpleNamespace")(
        py::arg("op_type") = n.op_type, py::arg("domain") = n.domain, py::arg("name") = n.name,
        py::arg("input") = n.inputs, py::arg("output") = n.outputs, py::arg("attributes") = attrs);
    instance_ = cls(node_info);
  }
  ~PythonOp() override {
    py::gil_scoped_acquire gil;
    instance_ = py::object();
  }
  Values run(const Values& in, RunContext&) override {
    py::gil_scoped_acquire gil;
    py::tuple args(in.size());
    for (size_t i = 0; i < in.size(); ++i) args[i] = to_python(in[i]);
    try {
      py::object result = instance_.attr("run")(*args);
      Values out;
      for (const py::handle& r : result) out.push_back(from_python(r, nullptr, "output"));
      return out;
    } catch (const py::error_already_set& e) {
      throw Error(ErrorKind::Runtime, std::string("Python operator raised ") + e.what());
    }
  }

 private:
  py::object instance_;
};

class Evaluator {
 public:
  Evaluator(const std::string& path, const py::object& bytes, const std::vector<std::string>& plugins, const py::list& new_ops,
            int verbose)
      : registry_(std::make_unique<Registry>(&Registry::builtin(), "python")), verbose_(verbose) {
    for (const std::string& p : plugins) load_plugin(*registry_, p);
    for (const py::handle& op : new_ops) {
      const auto entry = op.cast<py::tuple>();  // (domain, op_type, class)
      py::object cls = entry[2].cast<py::object>();
      classes_.push_back(cls);
      OpFactory f;
      f.create = [cls](const NodeContext& ctx) -> std::unique_ptr<OpRun> { return std::make_unique<PythonOp>(ctx, cls); };
      registry_->add_any_version(entry[0].cast<std::string>(), entry[1].cast<std::string>(), f);
    }
    Model m = bytes.is_none() ? load_model(path) : parse_model(std::string(bytes.cast<py::bytes>()), "", "<bytes>");
    py::gil_scoped_release release;  // planning may build Python operators, which take the GIL back
    ev_ = std::make_unique<ReferenceEvaluator>(std::move(m), EvaluatorOptions{registry_.get()});
  }

  py::object run(const py::object& output_names, const py::dict& feeds, bool intermediate) {
    const Graph& g = ev_->model().graph;
    const std::map<std::string, Value> values = feeds_from_python(feeds, g);
    std::vector<std::string> names;
    if (intermediate) {
      std::set<std::string> seen;
      auto add = [&](const std::string& n) { if (!n.empty() && seen.insert(n).second) names.push_back(n); };
      for (const Initializer& i : g.initializers) add(i.name);
      for (const std::string& i : ev_->input_names()) if (values.count(i)) add(i);
      for (const Node& n : g.nodes)
        for (const std::string& o : n.outputs) add(o);
    } else if (!output_names.is_none()) {
      names = output_names.cast<std::vector<std::string>>();
    }
    char* buffer = nullptr;
    size_t size = 0;
    std::FILE* trace_file = verbose_ >= 2 ? open_memstream(&buffer, &size) : nullptr;
    std::unique_ptr<TraceObserver> trace;
    if (trace_file) ev_->add_observer((trace = std::make_unique<TraceObserver>(verbose_, trace_file)).get());
    Values results;
    auto finish_trace = [&] {
      if (!trace_file) return;
      ev_->remove_observer(trace.get());
      std::fclose(trace_file);
      py::module_::import("sys").attr("stdout").attr("write")(py::str(buffer, size));
      std::free(buffer);
    };
    try {
      py::gil_scoped_release release;
      results = ev_->run(names, values);
    } catch (...) {
      finish_trace();
      throw;
    }
    finish_trace();
    const std::vector<std::string>& result_names = names.empty() ? ev_->output_names() : names;
    if (intermediate) {
      py::dict out;
      for (size_t i = 0; i < results.size(); ++i) out[result_names[i].c_str()] = to_python(results[i]);
      return out;
    }
    py::list out;
    for (const Value& v : results) out.append(to_python(v));
    return out;
  }

  // check-fusion's node form (refeval check-fusion MODEL --node ADDR | --op DOMAIN:TYPE) with this
  // evaluator's operators, Python ones included: each matched node's kernel against its model-local
  // function or built-in decomposition. Returns the report as check-fusion's JSON and its text.
  py::list check_nodes(const std::string& address, const py::dict& feeds, const fusion::CheckOptions& options) {
    const Model& model = ev_->model();
    const std::map<std::string, Value> values = feeds_from_python(feeds, model.graph);
    py::list out;
    for (const NodeMatch& m : find_nodes(model.graph, address)) {
      fusion::FusionReport r;
      {
        py::gil_scoped_release release;
        r = fusion::check_node(model, m, *registry_, values, options);
      }
      out.append(py::make_tuple(fusion::report_json(r).dump(), fusion::format_report(r)));
    }
    return out;
  }

  // The model form (refeval check-fusion --fused A --unfused B): this evaluator's model is the fused one.
  py::tuple check_against(const Evaluator& unfused, const py::dict& feeds, const fusion::CheckOptions& options) {
    std::map<std::string, Value> values = feeds_from_python(feeds, unfused.ev_->model().graph);
    for (auto& [name, value] : feeds_from_python(feeds, ev_->model().graph)) values[name] = value;
    fusion::FusionReport r;
    {
      py::gil_scoped_release release;
      r = fusion::check_models(ev_->model(), unfused.ev_->model(), *registry_, values, options);
    }
    return py::make_tuple(fusion::report_json(r).dump(), fusion::format_report(r));
  }

  std::vector<std::string> input_names() const { return ev_->input_names(); }
  std::vector<std::string> output_names() const { return ev_->output_names(); }
  std::map<std::string, int64_t> opsets() const { return ev_->model().opsets; }

 private:
  std::unique_ptr<Registry> registry_;
  std::vector<py::object> classes_;
  std::unique_ptr<ReferenceEvaluator> ev_;
  int verbose_;
};

}  // namespace
}  // namespace refeval::python

PYBIND11_MODULE(_refeval, m) {
  using namespace refeval::python;
  m.doc() = "refeval's native evaluator (use the refeval package)";
  static py::object native_error = py::reinterpret_borrow<py::object>(PyExc_RuntimeError);
  native_error = py::module_::import("builtins").attr("type")("NativeError", py::make_tuple(native_error), py::dict());
  m.attr("NativeError") = native_error;
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const refeval::Error& e) {
      py::object err = native_error(kind_name(e.kind()), e.what());
      PyErr_SetObject(native_error.ptr(), err.ptr());
    }
  });
  py::class_<refeval::fusion::CheckOptions>(m, "CheckOptions")
      .def(py::init([](double rtol, double atol, int repeat, int random_sets, bool edge_cases, uint64_t seed) {
             refeval::fusion::CheckOptions o;
             o.tolerance.rtol = rtol, o.tolerance.atol = atol, o.repeat = repeat;
             o.sets.random_sets = random_sets, o.sets.edge_cases = edge_cases, o.sets.seed = seed;
             return o;
           }),
           py::arg("rtol"), py::arg("atol"), py::arg("repeat"), py::arg("random_sets"), py::arg("edge_cases"), py::arg("seed"));
  py::class_<Evaluator>(m, "Evaluator")
      .def(py::init<const std::string&, const py::object&, const std::vector<std::string>&, const py::list&, int>(),
           py::arg("path"), py::arg("bytes"), py::arg("plugins"), py::arg("new_ops"), py::arg("verbose"))
      .def("run", &Evaluator::run, py::arg("output_names"), py::arg("feeds"), py::arg("intermediate"))
      .def("check_nodes", &Evaluator::check_nodes, py::arg("address"), py::arg("feeds"), py::arg("options"))
      .def("check_against", &Evaluator::check_against, py::arg("unfused"), py::arg("feeds"), py::arg("options"))
      .def_property_readonly("input_names", &Evaluator::input_names)
      .def_property_readonly("output_names", &Evaluator::output_names)
      .def_property_readonly("opsets", &Evaluator::opsets);
  m.def("set_threads", &refeval::set_thread_count, py::arg("n"));
  m.def("threads", &refeval::thread_count);
  m.def("compare_language_models", &compare_language_models, py::arg("a"), py::arg("b"), py::arg("tokens"), py::arg("context"),
        py::arg("generate"));
  m.def("generate", &generate_model, py::arg("model"), py::arg("prompt"), py::arg("prompt_mask"), py::arg("new_tokens"),
        py::arg("eos"), py::arg("max_length"), py::arg("profile"));
  m.def("set_emulate_accuracy_level", &refeval::set_emulate_accuracy_level, py::arg("on"));
  m.def("emulate_accuracy_level", &refeval::emulate_accuracy_level);
  m.def("reduce", &reduce_model, py::arg("model"), py::arg("out"), py::arg("feed_sets"), py::arg("predicate"), py::arg("argument"),
        py::arg("rtol"), py::arg("atol"), py::arg("mode"), py::arg("freeze"), py::arg("all_sets"), py::arg("max_steps"));
  m.def("profile", &profile_model, py::arg("model"), py::arg("feeds"), py::arg("warmup"), py::arg("repeat"), py::arg("out"));
  m.def("profile_events", &profile_events, py::arg("paths"), py::arg("range"), py::arg("include_warmup"), py::arg("phase"));
  m.def("show_html", &show_html, py::arg("model"), py::arg("profile"), py::arg("diff"));
  m.def("accuracy", &accuracy_model, py::arg("model"), py::arg("feeds"), py::arg("reference"), py::arg("top_k"), py::arg("local"));
  m.def("optimize", &optimize_model, py::arg("model"), py::arg("out"), py::arg("level"), py::arg("model_type"), py::arg("only"),
        py::arg("disable"), py::arg("target"), py::arg("forms"));
  m.def("quantize", &quantize_model, py::arg("model"), py::arg("out"), py::arg("scheme"), py::arg("block_size"), py::arg("symmetric"),
        py::arg("accuracy_level"), py::arg("embeddings"), py::arg("algo"), py::arg("per_channel"), py::arg("reduce_range"), py::arg("exclude"),
        py::arg("keep_io_types"), py::arg("float16_block"), py::arg("feeds"));
}

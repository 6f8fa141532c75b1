// `refeval show MODEL`: the graph as ONNX's textual syntax, Graphviz DOT or SVG, or an offline
// HTML viewer (groups from name scopes laid out when opened, pan, zoom, search, node panel), with
// a profile's time per node or an accuracy report's error per node as heat and a second model (the
// optimized one) beside it. `--depth N` prints the text or DOT of the graph with its name-scope
// groups at depth N collapsed into single boxes.
#include <fstream>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "dot_format.h"
#include "html_view.h"
#include "scopes.h"
#include "refeval/observer.h"
#include "text_format.h"
#include "verbs.h"

namespace refeval::cli {
namespace {

using namespace refeval::show;

// Output types of every node of the main graph, from a run.
class ShapeRecorder : public Observer {
 public:
  std::map<std::string, std::string> shapes;
  void after_node(const NodeEvent& e, Values& outputs) override {
    if (e.depth != 0) return;
    for (size_t k = 0; k < outputs.size() && k < e.node.outputs.size(); ++k)
      if (outputs[k].is_tensor())
        shapes[e.node.outputs[k]] =
            fmt::format("{}[{}]", dtype_short_name(outputs[k].tensor().dtype()), fmt::join(outputs[k].tensor().shape(), ","));
  }
};

class ShowVerb : public Verb {
 public:
  void setup(CLI::App* sub) override {
    sub->add_option("model", model_, "the .onnx model")->required();
    sub->add_option("--format", format_, "text (default), dot, svg or html")->check(CLI::IsMember({"text", "dot", "svg", "html"}));
    sub->add_option("-o,--output", output_, "FILE: write there instead of stdout");
    sub->add_flag("--full", text_.full, "text: print every initializer's values");
    sub->add_flag("--labels", text_.labels, "text: node names as [name] labels (ONNX 1.16+ parsers) instead of comments");
    sub->add_option("--profile", profile_, "P.json: colour nodes by their share of time (refeval's or ORT's profile; html, dot, svg)");
    sub->add_option("--heat", heat_, "with --profile: time (default), or memory (the live bytes while each node runs, from a profile "
                    "recorded with --memory)")->check(CLI::IsMember({"time", "memory"}));
    sub->add_option("--diff", diff_, "OTHER.onnx: side by side with another model (html)");
    sub->add_option("--overlay", overlay_, "ACCURACY.json: colour nodes by their local error (refeval accuracy --json; html)");
    sub->add_option("--depth", depth_, "N: text, dot, svg: name-scope groups at depth N as single boxes")->check(CLI::Range(1, 1000));
    sub->add_flag("--run", run_, "shapes from a run of the model with the input options instead of shape inference");
    inputs_.add_to(sub);
  }

  int execute(const GlobalOptions& g) override {
    const Model model = open_model(model_);
    std::string out;
    if (depth_ > 0 && format_ != "html") {
      const std::vector<std::string> namespaces = node_namespaces(model.path);
      ScopeOptions options;
      if (!namespaces.empty()) options.namespaces = &namespaces;
      const Scopes scopes = build_scopes(model.graph, options);
      const CollapsedGraph c = collapse(model.graph, scopes, depth_);
      if (format_ == "text") out = collapsed_text(model.graph, scopes, c);
      else out = collapsed_dot(model.graph, scopes, c);
      if (format_ == "svg") out = render_svg(out);
    } else if (format_ == "text") {
      out = model_text(model, text_);
    } else {
      const auto shapes = shapes_of(model, g);
      if (format_ == "html" && !diff_.empty()) {
        const Model other = open_model(diff_);
        out = html_diff(model, shapes, other, inferred_shapes(other));
      } else if (format_ == "html") {
        std::optional<NodeTimes> times;
        std::optional<NodeErrors> errors;
        if (!profile_.empty()) times = heat_ == "memory" ? node_memory(profile_) : node_times(profile_);
        if (!overlay_.empty()) errors = node_errors(overlay_);
        out = html_view(model, shapes, times ? &*times : nullptr, errors ? &*errors : nullptr);
      } else {
        DotOptions dot;
        dot.shapes = &shapes;
        if (!profile_.empty()) add_heat(model.graph, heat_ == "memory" ? node_memory(profile_) : node_times(profile_), dot);
        out = graph_dot(model.graph, dot);
        if (format_ == "svg") out = render_svg(out);
      }
      if (!diff_.empty() && format_ != "html") spdlog::warn("--diff is shown by --format html only");
      if (!overlay_.empty() && format_ != "html") spdlog::warn("--overlay is shown by --format html only");
    }
    write_output(output_, out, format_);
    return kOk;
  }

 private:
  std::map<std::string, std::string> shapes_of(const Model& m, const GlobalOptions& g) {
    if (!run_) return inferred_shapes(m);
    ReferenceEvaluator ev(m, {&registry(g)});
    ShapeRecorder rec;
    ev.add_observer(&rec);
    ev.run({}, make_feeds(ev, inputs_));
    return rec.shapes;
  }

  std::string model_, format_ = "text", output_, profile_, diff_, overlay_, heat_ = "time";
  int depth_ = 0;
  TextOptions text_;
  bool run_ = false;
  InputOptions inputs_;
};

}  // namespace

std::unique_ptr<Verb> make_show_verb() { return std::make_unique<ShowVerb>(); }

}  // namespace refeval::cli

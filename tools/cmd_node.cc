// `refeval node MODEL --node ADDR`: evaluate one node of the main graph. Its inputs come from
// files (--input NAME=FILE for the node's input names), from initializers, or from running the
// model up to the node. --extract DIR writes the node as a standalone model with a
// test_data_set_0/, a bug report that `refeval test DIR` and other runtimes can run.
#include <algorithm>
#include <filesystem>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "refeval/address.h"
#include "refeval/dump.h"
#include "refeval/format.h"
#include "refeval/model_io.h"
#include "refeval/node_extract.h"
#include "refeval/trace.h"
#include "verbs.h"

namespace refeval::cli {
namespace {
namespace fs = std::filesystem;

const ValueType* declared_in(const Graph& g, const std::string& name) {
  for (const auto* list : {&g.inputs, &g.outputs, &g.value_info})
    for (const auto& vi : *list)
      if (vi.name == name && vi.type.kind != ValueType::Kind::Unknown) return &vi.type;
  return nullptr;
}

// Stops the model's run just before the chosen node: everything it reads exists by then.
struct Reached {};
class StopBefore : public Observer {
 public:
  explicit StopBefore(std::string id) : id_(std::move(id)) {}
  void before_node(const NodeEvent& e) override {
    if (e.depth == 0 && e.id == id_) throw Reached{};
  }

 private:
  std::string id_;
};

NodeMatch pick_one(const Graph& g, const std::string& address) {
  const auto matches = find_nodes(g, address);
  if (matches.size() > 1) {
    std::vector<std::string> ids;
    for (size_t i = 0; i < matches.size() && i < 5; ++i) ids.push_back(matches[i].id);
    fail_usage(fmt::format("--node {}: matches {} nodes ({}{}); name one by its name or #INDEX", address, matches.size(),
                           fmt::join(ids, ", "), matches.size() > 5 ? ", ..." : ""));
  }
  const NodeMatch& m = matches[0];
  if (m.depth > 0)
    fail_usage(fmt::format("--node {}: {} is inside a body ({}); `refeval node` evaluates main-graph nodes only", address,
                           m.node->describe(), m.id));
  return m;
}

class NodeVerb : public Verb {
 public:
  void setup(CLI::App* sub) override {
    sub->add_option("model", model_, "the .onnx model")->required();
    sub->add_option("--node", address_, "ADDR: the node (name, #INDEX, op:TYPE if only one)")->required();
    inputs_.add_to(sub);
    sub->add_option("--verbose,-v", verbose_,
                    "0 nothing; 1 a summary of inputs and outputs (default); 2-4 the trace `run` prints for the "
                    "extracted one-node model at that level")
        ->check(CLI::Range(0, 100));
    sub->add_option("--extract", extract_dir_, "DIR: write the node as model.onnx + test_data_set_0/");
  }

  int execute(const GlobalOptions& g) override {
    Model model = open_model(model_);
    const NodeMatch match = pick_one(model.graph, address_);
    const Node node = *match.node;
    const std::vector<std::string> reads = node_reads(node);
    std::map<std::string, Value> values = node_values_from_files(model.graph, reads);
    for (const auto& name : reads)
      if (!values.count(name))
        if (const Initializer* init = model.graph.find_initializer(name); init && !model.graph.find_input(name))
          values[name] = init->value;
    std::vector<std::string> missing;
    for (const auto& name : reads)
      if (!values.count(name)) missing.push_back(name);
    if (!missing.empty()) run_up_to(model, match.id, missing, values, g);

    // Run the node alone, its inputs declared as the model declares them, so a file of the wrong
    // type or shape is refused as a feed would be.
    Model one = single_node_model(model, node, values);
    for (auto& vi : one.graph.inputs)
      if (const ValueType* t = declared_in(model.graph, vi.name)) vi.type = *t;
    ReferenceEvaluator ev(std::move(one), {&registry(g)});
    // At 2-4 the node is traced as `run` traces the model --extract writes: the same bytes.
    TraceObserver trace(verbose_);
    if (verbose_ >= 2) ev.add_observer(&trace);
    std::map<std::string, Value> feeds;
    for (const auto& name : reads) feeds[name] = values[name];
    const Values outs = ev.run({}, feeds);
    const auto out_names = ev.output_names();
    for (size_t k = 0; k < outs.size(); ++k) values[out_names[k]] = outs[k];

    if (verbose_ == 1) {
      if (node.name.empty()) fmt::print("node {} ({}) of {}\n", match.id, node.op_type, model_);
      else fmt::print("{}, id {} of {}\n", node.describe(), match.id, model_);
      for (const auto& name : reads) fmt::print(" +I {}: {}\n", name, describe(values[name], 3));
      for (size_t k = 0; k < outs.size(); ++k) fmt::print(" + {}: {}\n", out_names[k], describe(outs[k], 3));
    }
    if (!extract_dir_.empty()) extract(model, node, values);
    std::fflush(stdout);
    return kOk;
  }

 private:
  // --input NAME=FILE where NAME is a value the node reads; the rest are model inputs.
  std::map<std::string, Value> node_values_from_files(const Graph& graph, const std::vector<std::string>& reads) {
    std::map<std::string, Value> values;
    for (const auto& spec : inputs_.inputs) {
      auto [name, file] = split_assignment(spec, "--input");
      const bool read_by_node = std::find(reads.begin(), reads.end(), name) != reads.end();
      if (read_by_node) values[name] = read_value_file(file, declared_in(graph, name));
      if (graph.find_input(name)) model_inputs_.inputs.push_back(spec);
      else if (!read_by_node)
        fail_input(fmt::format("--input {}: '{}' is neither a value node '{}' reads nor a model input", spec, name, address_));
    }
    return values;
  }

  // Runs the model until the node starts and takes the values it still needs.
  void run_up_to(const Model& model, const std::string& id, const std::vector<std::string>& needed,
                 std::map<std::string, Value>& values, const GlobalOptions& g) {
    ReferenceEvaluator ev(model, {&registry(g)});
    InputOptions opts = inputs_;
    opts.inputs = model_inputs_.inputs;
    const auto feeds = make_feeds(ev, opts);
    RecordObserver record;
    StopBefore stop(id);
    ev.add_observer(&record);
    ev.add_observer(&stop);
    try {
      ev.run({}, feeds);
    } catch (const Reached&) {
    }
    std::map<std::string, Value> seen;
    for (const auto& r : record.records()) seen[r.name] = r.value;
    for (const auto& name : needed) {
      auto it = seen.find(name);
      if (it == seen.end()) fail_model(fmt::format("{}: no value '{}' exists before the node runs", model_, name));
      values[name] = it->second;
    }
  }

  void extract(const Model& model, const Node& node, const std::map<std::string, Value>& values) {
    const Model one = single_node_model(model, node, values);
    const fs::path dir(extract_dir_), data = dir / "test_data_set_0";
    std::error_code ec;
    fs::create_directories(data, ec);
    if (ec) fail_input(fmt::format("--extract {}: cannot create the folder ({})", extract_dir_, ec.message()));
    save_model(one, (dir / "model.onnx").string());
    for (size_t k = 0; k < one.graph.inputs.size(); ++k) {
      const std::string& name = one.graph.inputs[k].name;
      write_value_pb((data / fmt::format("input_{}.pb", k)).string(), name, values.at(name));
    }
    for (size_t k = 0; k < one.graph.outputs.size(); ++k) {
      const std::string& name = one.graph.outputs[k].name;
      write_value_pb((data / fmt::format("output_{}.pb", k)).string(), name, values.at(name));
    }
    const std::string done = fmt::format("extracted: {} (model.onnx, test_data_set_0/ with {} inputs, {} outputs)",
                                         extract_dir_, one.graph.inputs.size(), one.graph.outputs.size());
    // At trace levels stdout carries the trace alone (CLI.md), so the note goes to the log.
    if (verbose_ == 1) fmt::print("{}\n", done);
    else if (verbose_ >= 2) spdlog::info(done);
  }

  std::string model_;
  std::string address_;
  InputOptions inputs_;
  InputOptions model_inputs_;  // the --input options that name model inputs
  int verbose_ = 1;
  std::string extract_dir_;
};

}  // namespace

std::unique_ptr<Verb> make_node_verb() { return std::make_unique<NodeVerb>(); }

}  // namespace refeval::cli

// `refeval check-fusion`: is a fused operator equivalent to what it replaces?
//   node form:  refeval check-fusion MODEL --node ADDR | --op DOMAIN:TYPE
//               (the node's kernel against its model-local function or built-in decomposition)
//   model form: refeval check-fusion --fused A.onnx --unfused B.onnx
//               (every output and every value name the two models share)
// Both sides are also measured against the unfused side run in float64 (fusion/equivalence.h):
// a fused side that differs beyond the tolerance but is as accurate passes.
// Exit 0 when equivalent on every input set, 3 when not, 2 on usage or model errors (CLI.md).
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "fusion/decompositions/decompositions.h"
#include "fusion/model_check.h"
#include "fusion/node_check.h"
#include "fusion/report.h"
#include "refeval/address.h"
#include "refeval/model_io.h"
#include "verbs.h"

namespace refeval::cli {
namespace {

std::string decomposed_list() {
  std::vector<std::string> names;
  for (const auto& [domain, op] : fusion::decomposed_ops()) names.push_back(domain.empty() ? op : domain + ":" + op);
  return fmt::format("{}", fmt::join(names, ", "));
}

class CheckFusionVerb : public Verb {
 public:
  void setup(CLI::App* sub) override {
    sub->footer("Built-in decompositions: " + decomposed_list());
    sub->add_option("model", model_, "the model holding the fused node (node form)");
    sub->add_option("--node", node_, "ADDR: the fused node (name, #I, op:TYPE; CLI.md node addressing)");
    sub->add_option("--op", op_, "DOMAIN:TYPE: every node of that operator (e.g. com.microsoft:FastGelu)");
    sub->add_option("--fused", fused_, "A.onnx: the fused model (model form)");
    sub->add_option("--unfused", unfused_, "B.onnx: the unfused model (model form)");
    inputs_.add_to(sub);
    sub->add_option("--rtol", options_.tolerance.rtol, "relative tolerance (default 1e-3)");
    sub->add_option("--atol", options_.tolerance.atol, "absolute tolerance (default 1e-7)");
    sub->add_option("--repeat", options_.repeat, "timed runs of each side; the median is shown (default 5)")->check(CLI::Range(1, 1000000));
    sub->add_option("--random-sets", options_.sets.random_sets, "seeded random input sets (default 2)")->check(CLI::Range(0, 1000));
    sub->add_flag("--no-edge-cases", no_edge_cases_, "skip the zeros / negative / large / tiny input sets");
    sub->add_flag("--no-oracle", no_oracle_,
                  "judge by the difference alone: no float64 run of the unfused side (by default a fused side that differs "
                  "but is as close to it as the unfused side passes)");
    sub->add_option("--json", json_file_, "FILE: write the results as JSON");
  }

  int execute(const GlobalOptions& g) override {
    options_.sets.seed = inputs_.seed;
    options_.sets.edge_cases = !no_edge_cases_;
    options_.oracle = !no_oracle_;
    const bool node_form = !model_.empty() || !node_.empty() || !op_.empty();
    const bool model_form = !fused_.empty() || !unfused_.empty();
    if (node_form == model_form)
      fail_usage("check-fusion: give either MODEL with --node or --op, or --fused A.onnx --unfused B.onnx");
    std::vector<fusion::FusionReport> reports = node_form ? check_nodes(g) : std::vector{check_models(g)};
    bool all_equivalent = true;
    nlohmann::json checks = nlohmann::json::array();
    for (const auto& r : reports) {
      fmt::print("{}", fusion::format_report(r));
      all_equivalent = all_equivalent && r.equivalent();
      checks.push_back(fusion::report_json(r));
    }
    if (!json_file_.empty()) {
      std::ofstream out(json_file_);
      out << nlohmann::json{{"equivalent", all_equivalent}, {"checks", checks}}.dump(2) << "\n";
      if (!out) fail_usage(fmt::format("cannot write '{}'", json_file_));
    }
    std::fflush(stdout);
    return all_equivalent ? kOk : kCheckFailed;
  }

 private:
  std::vector<fusion::FusionReport> check_nodes(const GlobalOptions& g) {
    if (model_.empty()) fail_usage("check-fusion: --node and --op need the MODEL argument");
    if (node_.empty() == op_.empty()) fail_usage("check-fusion: give exactly one of --node ADDR and --op DOMAIN:TYPE");
    const Model model = open_model(model_);
    const auto matches = find_nodes(model.graph, node_.empty() ? "op:" + op_ : node_);
    ReferenceEvaluator ev(model, {&registry(g)});
    const auto feeds = make_feeds(ev, inputs_);
    std::vector<fusion::FusionReport> reports;
    for (const NodeMatch& m : matches) reports.push_back(fusion::check_node(model, m, registry(g), feeds, options_));
    return reports;
  }

  fusion::FusionReport check_models(const GlobalOptions& g) {
    if (fused_.empty() || unfused_.empty()) fail_usage("check-fusion: the model form needs both --fused and --unfused");
    const Model fused = open_model(fused_), unfused = open_model(unfused_);
    ReferenceEvaluator a(fused, {&registry(g)}), b(unfused, {&registry(g)});
    // Shared input names get the fused model's values; the unfused model's own inputs are generated too.
    auto feeds = make_feeds(b, inputs_);
    for (auto& [name, value] : make_feeds(a, inputs_)) feeds[name] = value;
    return fusion::check_models(fused, unfused, registry(g), feeds, options_);
  }

  std::string model_, node_, op_, fused_, unfused_, json_file_;
  InputOptions inputs_;
  fusion::CheckOptions options_;
  bool no_edge_cases_ = false, no_oracle_ = false;
};

}  // namespace

std::unique_ptr<Verb> make_check_fusion_verb() { return std::make_unique<CheckFusionVerb>(); }

}  // namespace refeval::cli

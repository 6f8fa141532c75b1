// `refeval ops`: the operator registry as a table or JSON (CLI.md).
#include <map>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "verbs.h"

namespace refeval::cli {
namespace {

struct OpRow {
  std::set<int> versions;
  bool any_version = false;
  std::set<std::string> types;
  std::string origin;
};

class OpsVerb : public Verb {
 public:
  void setup(CLI::App* sub) override {
    sub->add_flag("--json", json_, "print JSON instead of a table");
    sub->add_option("--domain", domain_, "only this domain");
  }

  int execute(const GlobalOptions& g) override {
    std::map<std::pair<std::string, std::string>, OpRow> rows;
    for (const OpRegistration* r : registry(g).list()) {
      const std::string domain = r->domain.empty() ? "ai.onnx" : r->domain;
      if (!domain_.empty() && domain != domain_) continue;
      OpRow& row = rows[{domain, r->op_type}];
      if (r->any_version) row.any_version = true;
      else row.versions.insert(r->since_version);
      for (DType t : r->factory.types) row.types.insert(std::string(dtype_short_name(t)));
      if (row.origin.empty() || r->origin != "builtin") row.origin = r->origin;
    }
    if (json_) {
      nlohmann::json out = nlohmann::json::array();
      for (const auto& [key, row] : rows)
        out.push_back({{"domain", key.first}, {"op_type", key.second}, {"since_versions", row.versions},
                       {"any_version", row.any_version}, {"types", row.types}, {"origin", row.origin}});
      fmt::print("{}\n", out.dump(2));
      return kOk;
    }
    fmt::print("{:<26} {:<28} {:<22} {}\n", "domain", "op_type", "since_versions", "types");
    for (const auto& [key, row] : rows) {
      std::string versions = fmt::format("{}", fmt::join(row.versions, ","));
      if (row.any_version) versions = versions.empty() ? "any" : versions + ",any";
      fmt::print("{:<26} {:<28} {:<22} {}\n", key.first, key.second, versions, fmt::join(row.types, ","));
    }
    fmt::print("{} operators\n", rows.size());
    return kOk;
  }

 private:
  bool json_ = false;
  std::string domain_;
};

}  // namespace

std::unique_ptr<Verb> make_ops_verb() { return std::make_unique<OpsVerb>(); }

}  // namespace refeval::cli

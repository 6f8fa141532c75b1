#include "refeval/registry.h"

#include <algorithm>
#include <set>

namespace refeval {

void register_builtin_ops(Registry& reg);  // ops/register_all.cc

namespace {
constexpr const char* kBuiltinOrigin = "builtin";
}

Registry::Registry(const Registry* parent, std::string origin) : parent_(parent), origin_(std::move(origin)) {}

void Registry::add_entry(const std::string& domain, const std::string& op_type, int since_version, bool any_version,
                         const OpFactory& factory) {
  Determinism d = factory.determinism;
  if (d == Determinism::Unknown && origin_ == kBuiltinOrigin) d = Determinism::Deterministic;
  entries_.push_back(std::make_unique<OpRegistration>(
      OpRegistration{normalize_domain(domain), op_type, since_version, any_version, factory, origin_, d}));
}

void Registry::add(const std::string& domain, const std::string& op_type, std::initializer_list<int> since_versions,
                   const OpFactory& factory) {
  for (int v : since_versions) add_entry(domain, op_type, v, false, factory);
}

void Registry::add_any_version(const std::string& domain, const std::string& op_type, const OpFactory& factory) {
  add_entry(domain, op_type, 0, true, factory);
}

const OpRegistration* Registry::resolve(const std::string& domain_in, const std::string& op_type, int64_t opset) const {
  const std::string domain = normalize_domain(domain_in);
  const OpRegistration* best = nullptr;
  for (const auto& e : entries_) {
    if (e->domain != domain || e->op_type != op_type) continue;
    if (e->any_version) return e.get();
    if (e->since_version <= opset && (!best || e->since_version > best->since_version)) best = e.get();
  }
  if (parent_) {
    const OpRegistration* inherited = parent_->resolve(domain, op_type, opset);
    if (inherited && (inherited->any_version || !best || inherited->since_version > best->since_version)) return inherited;
  }
  return best;
}

std::vector<const OpRegistration*> Registry::list() const {
  std::vector<const OpRegistration*> out;
  for (const auto& e : entries_) out.push_back(e.get());
  if (parent_)
    for (const auto* e : parent_->list()) out.push_back(e);
  return out;
}

std::vector<int> Registry::versions_of(const std::string& domain, const std::string& op_type) const {
  std::set<int> versions;
  for (const auto* e : list())
    if (e->domain == normalize_domain(domain) && e->op_type == op_type) versions.insert(e->since_version);
  return {versions.begin(), versions.end()};
}

const Registry& Registry::builtin() {
  static const Registry* reg = [] {
    auto* r = new Registry(nullptr, kBuiltinOrigin);
    register_builtin_ops(*r);
    return r;
  }();
  return *reg;
}

}  // namespace refeval

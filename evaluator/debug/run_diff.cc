#include "refeval/run_diff.h"

#include <set>
#include <unordered_map>

namespace refeval {

const ValueDiff* RunDiff::first_difference() const {
  for (const ValueDiff& d : values)
    if (!d.c.equal && d.a->source == ValueRecord::Source::Node) return &d;
  return nullptr;
}

RunDiff diff_runs(const std::vector<ValueRecord>& a, const std::vector<ValueRecord>& b, Tolerance tol) {
  std::unordered_map<std::string, const ValueRecord*> in_b;
  for (const ValueRecord& r : b) in_b.emplace(r.name, &r);
  RunDiff diff;
  std::set<std::string> in_a;
  for (const ValueRecord& r : a) {
    in_a.insert(r.name);
    auto it = in_b.find(r.name);
    if (it == in_b.end()) {
      ++diff.only_in_a;
      continue;
    }
    ValueDiff d{&r, it->second, compare_values(r.value, it->second->value, tol)};
    (r.source == ValueRecord::Source::Initializer ? diff.initializers : diff.values).push_back(std::move(d));
  }
  for (const ValueRecord& r : b) diff.only_in_b += !in_a.count(r.name);
  return diff;
}

}  // namespace refeval

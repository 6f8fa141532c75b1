#include "equivalence.h"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

namespace refeval::fusion {
namespace {

double median_ms(const Runner& run, const std::map<std::string, Value>& feeds, int repeat) {
  std::vector<double> times;
  for (int i = 0; i < repeat; ++i) {
    const auto start = std::chrono::steady_clock::now();
    run(feeds);
    times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

}  // namespace

bool SetResult::equal() const {
  return std::all_of(outputs.begin(), outputs.end(), [](const Comparison& c) { return c.equal; });
}

const SetResult* FusionReport::first_failure() const {
  for (const SetResult& s : sets)
    if (!s.equal()) return &s;
  return nullptr;
}

FusionReport check_equivalence(const Runner& fused, const Runner& unfused, const std::vector<InputSet>& sets,
                               const CheckOptions& options) {
  FusionReport report;
  report.tolerance = options.tolerance;
  for (const InputSet& set : sets) {
    const Values a = fused(set.feeds), b = unfused(set.feeds);
    if (a.size() != b.size())
      fail_runtime(fmt::format("input set '{}': the fused side returned {} values, the unfused {}", set.name, a.size(), b.size()));
    SetResult r{set.name, {}};
    for (size_t i = 0; i < a.size(); ++i) r.outputs.push_back(compare_values(a[i], b[i], options.tolerance));
    report.sets.push_back(std::move(r));
  }
  if (!sets.empty() && options.repeat > 0) {
    report.runs = options.repeat;
    report.fused_ms = median_ms(fused, sets[0].feeds, options.repeat);
    report.unfused_ms = median_ms(unfused, sets[0].feeds, options.repeat);
  }
  return report;
}

}  // namespace refeval::fusion

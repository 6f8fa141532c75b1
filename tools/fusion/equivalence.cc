#include "equivalence.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include <fmt/format.h>

#include "refeval/compute_vector.h"
#include "refeval/error.h"

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

// Both sides against the oracle, over floating tensors of the same shape (else none).
std::optional<OracleErrors> oracle_errors(const Value& fused, const Value& unfused, const Value& oracle, const Tolerance& tol) {
  using accuracy::is_float_tensor;
  if (!is_float_tensor(fused) || !is_float_tensor(unfused) || !is_float_tensor(oracle)) return std::nullopt;
  if (fused.tensor().shape() != oracle.tensor().shape() || unfused.tensor().shape() != oracle.tensor().shape()) return std::nullopt;
  OracleErrors e;
  e.fused = accuracy::error_of(fused.tensor(), oracle.tensor(), "fused");
  e.unfused = accuracy::error_of(unfused.tensor(), oracle.tensor(), "unfused");
  // Element by element: the fused value within tolerance of the oracle, beyond the unfused
  // side's own distance from it.
  const std::vector<double> f = to_doubles(fused.tensor()), u = to_doubles(unfused.tensor()), o = to_doubles(oracle.tensor());
  e.fused_as_accurate = true;
  for (size_t i = 0; i < o.size() && e.fused_as_accurate; ++i) {
    if (!std::isfinite(o[i]) || !std::isfinite(f[i])) {
      const auto same = [](double x, double y) { return (std::isnan(x) && std::isnan(y)) || x == y; };
      e.fused_as_accurate = same(f[i], o[i]) || same(f[i], u[i]);
      continue;
    }
    const double slack = std::isfinite(u[i]) ? std::fabs(u[i] - o[i]) : INFINITY;
    e.fused_as_accurate = std::fabs(f[i] - o[i]) <= slack + tol.atol + tol.rtol * std::fabs(o[i]);
  }
  return e;
}

}  // namespace

bool SetResult::passes(size_t i) const {
  return outputs[i].equal || (i < oracle.size() && oracle[i] && oracle[i]->fused_as_accurate);
}

bool SetResult::equal() const {
  for (size_t i = 0; i < outputs.size(); ++i)
    if (!passes(i)) return false;
  return true;
}

size_t FusionReport::accepted_by_oracle() const {
  size_t n = 0;
  for (const SetResult& s : sets)
    for (size_t i = 0; i < s.outputs.size(); ++i) n += !s.outputs[i].equal && s.passes(i);
  return n;
}

const SetResult* FusionReport::first_failure() const {
  for (const SetResult& s : sets)
    if (!s.equal()) return &s;
  return nullptr;
}

FusionReport check_equivalence(const Runner& fused, const Runner& unfused, const std::vector<InputSet>& sets,
                               const CheckOptions& options, const Runner& unfused_oracle) {
  FusionReport report;
  report.tolerance = options.tolerance;
  for (const InputSet& set : sets) {
    const Values a = fused(set.feeds), b = unfused(set.feeds);
    if (a.size() != b.size())
      fail_runtime(fmt::format("input set '{}': the fused side returned {} values, the unfused {}", set.name, a.size(), b.size()));
    SetResult r{set.name, {}, {}, {}};
    for (size_t i = 0; i < a.size(); ++i) r.outputs.push_back(compare_values(a[i], b[i], options.tolerance));
    if (unfused_oracle && options.oracle) {
      Values o;
      try {
        std::map<std::string, Value> wide;
        for (const auto& [name, v] : set.feeds) wide.emplace(name, accuracy::widen_value(v));
        o = unfused_oracle(wide);
      } catch (const refeval::Error& e) {
        r.oracle_note = e.what();
      }
      for (size_t i = 0; i < a.size() && i < o.size(); ++i)
        r.oracle.push_back(oracle_errors(a[i], b[i], o[i], options.tolerance));
    }
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

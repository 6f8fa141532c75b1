#include "report.h"

#include <fmt/format.h>

namespace refeval::fusion {
namespace {

std::string number(double v) { return fmt::format("{:.3g}", v); }

}  // namespace

std::string format_report(const FusionReport& r) {
  std::string out = fmt::format("check-fusion: {}\n  fused:   {}\n  unfused: {}\n", r.subject, r.fused, r.unfused);
  size_t width = 6;
  for (const auto& name : r.outputs) width = std::max(width, name.size());
  out += fmt::format("  {:<10} {:<{}} {:>10} {:>10}  {}\n", "set", "output", width, "max abs", "max rel", "result");
  for (const SetResult& s : r.sets)
    for (size_t i = 0; i < s.outputs.size(); ++i) {
      const Comparison& c = s.outputs[i];
      out += fmt::format("  {:<10} {:<{}} {:>10} {:>10}  {}\n", s.set, r.outputs[i], width, number(c.max_abs), number(c.max_rel),
                         c.equal ? "ok" : fmt::format("DIFFERENT ({} elements)", c.mismatches));
    }
  if (r.runs > 0)
    out += fmt::format("  time: fused {:.3f} ms, unfused {:.3f} ms (median of {} runs; unfused/fused {:.2f}x)\n", r.fused_ms,
                       r.unfused_ms, r.runs, r.fused_ms > 0 ? r.unfused_ms / r.fused_ms : 0.0);
  if (const SetResult* f = r.first_failure()) {
    for (size_t i = 0; i < f->outputs.size(); ++i)
      if (!f->outputs[i].equal) {
        out += fmt::format("  NOT equivalent: first failing input set '{}', output '{}': {}\n", f->set, r.outputs[i],
                           f->outputs[i].reason);
        break;
      }
  } else {
    out += fmt::format("  equivalent: {} input sets x {} outputs within rtol {}, atol {}\n", r.sets.size(), r.outputs.size(),
                       r.tolerance.rtol, r.tolerance.atol);
  }
  return out;
}

nlohmann::json report_json(const FusionReport& r) {
  nlohmann::json sets = nlohmann::json::array();
  for (const SetResult& s : r.sets) {
    nlohmann::json outputs = nlohmann::json::array();
    for (size_t i = 0; i < s.outputs.size(); ++i) {
      const Comparison& c = s.outputs[i];
      outputs.push_back({{"name", r.outputs[i]}, {"equal", c.equal}, {"max_abs", c.max_abs}, {"max_rel", c.max_rel},
                         {"mismatches", c.mismatches}, {"reason", c.reason}});
    }
    sets.push_back({{"set", s.set}, {"equal", s.equal()}, {"outputs", outputs}});
  }
  const SetResult* failure = r.first_failure();
  return {{"subject", r.subject},
          {"fused", r.fused},
          {"unfused", r.unfused},
          {"equivalent", failure == nullptr},
          {"first_failing_set", failure ? nlohmann::json(failure->set) : nlohmann::json()},
          {"rtol", r.tolerance.rtol},
          {"atol", r.tolerance.atol},
          {"sets", sets},
          {"time_ms", {{"fused", r.fused_ms}, {"unfused", r.unfused_ms}, {"runs", r.runs}}}};
}

}  // namespace refeval::fusion

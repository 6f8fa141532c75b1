#include "report.h"

#include <cmath>

#include <fmt/format.h>

namespace refeval::fusion {
namespace {

std::string number(double v) { return fmt::format("{:.3g}", v); }

// JSON has no infinity: an SQNR or relative error that is infinite is null.
nlohmann::json finite(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(); }

nlohmann::json error_json(const accuracy::Error& e) {
  return {{"max_abs", e.max_abs}, {"max_rel", finite(e.max_rel)}, {"rms", e.rms}, {"sqnr_db", finite(e.sqnr_db)},
          {"ulps", e.ulps}, {"nonfinite", e.nonfinite}};
}

}  // namespace

std::string format_report(const FusionReport& r) {
  std::string out = fmt::format("check-fusion: {}\n  fused:   {}\n  unfused: {}\n", r.subject, r.fused, r.unfused);
  size_t width = 6;
  for (const auto& name : r.outputs) width = std::max(width, name.size());
  // Beside the difference: each side's RMS error against the unfused side in float64.
  out += fmt::format("  {:<10} {:<{}} {:>10} {:>10} {:>12} {:>12}  {}\n", "set", "output", width, "max abs", "max rel", "oracle fused",
                     "oracle unfus", "result");
  for (const SetResult& s : r.sets)
    for (size_t i = 0; i < s.outputs.size(); ++i) {
      const Comparison& c = s.outputs[i];
      const OracleErrors* o = i < s.oracle.size() && s.oracle[i] ? &*s.oracle[i] : nullptr;
      const std::string result = c.equal              ? "ok"
                                 : s.passes(i)        ? fmt::format("ok: {} elements differ, the fused side is as accurate", c.mismatches)
                                                      : fmt::format("DIFFERENT ({} elements)", c.mismatches);
      out += fmt::format("  {:<10} {:<{}} {:>10} {:>10} {:>12} {:>12}  {}\n", s.set, r.outputs[i], width, number(c.max_abs),
                         number(c.max_rel), o ? number(o->fused.rms) : "-", o ? number(o->unfused.rms) : "-", result);
    }
  for (const SetResult& s : r.sets)
    if (!s.oracle_note.empty()) out += fmt::format("  no float64 oracle for set '{}': {}\n", s.set, s.oracle_note);
  if (r.runs > 0)
    out += fmt::format("  time: fused {:.3f} ms, unfused {:.3f} ms (median of {} runs; unfused/fused {:.2f}x)\n", r.fused_ms,
                       r.unfused_ms, r.runs, r.fused_ms > 0 ? r.unfused_ms / r.fused_ms : 0.0);
  if (const SetResult* f = r.first_failure()) {
    for (size_t i = 0; i < f->outputs.size(); ++i)
      if (!f->passes(i)) {
        out += fmt::format("  NOT equivalent: first failing input set '{}', output '{}': {}\n", f->set, r.outputs[i],
                           f->outputs[i].reason);
        break;
      }
  } else {
    out += fmt::format("  equivalent: {} input sets x {} outputs within rtol {}, atol {}{}\n", r.sets.size(), r.outputs.size(),
                       r.tolerance.rtol, r.tolerance.atol,
                       r.accepted_by_oracle() ? fmt::format(" ({} differing, the fused side as accurate against the float64 oracle)",
                                                            r.accepted_by_oracle())
                                              : "");
  }
  return out;
}

std::string oracle_summary(const FusionReport& r, const std::string& fused, const std::string& unfused) {
  double f = 0, u = 0;
  bool any = false;
  for (const SetResult& s : r.sets)
    for (const auto& o : s.oracle)
      if (o) any = true, f = std::max(f, o->fused.rms), u = std::max(u, o->unfused.rms);
  if (!any) return "";
  std::string line = fmt::format("float64 oracle rms error (worst set): {} {}, {} {}", fused, number(f), unfused, number(u));
  if (const size_t n = r.accepted_by_oracle()) line += fmt::format("; {} differing output(s) passed as the {} side is as accurate", n, fused);
  return line;
}

nlohmann::json report_json(const FusionReport& r) {
  nlohmann::json sets = nlohmann::json::array();
  for (const SetResult& s : r.sets) {
    nlohmann::json outputs = nlohmann::json::array();
    for (size_t i = 0; i < s.outputs.size(); ++i) {
      const Comparison& c = s.outputs[i];
      nlohmann::json o = {{"name", r.outputs[i]}, {"equal", c.equal}, {"passes", s.passes(i)}, {"max_abs", c.max_abs},
                          {"max_rel", c.max_rel}, {"mismatches", c.mismatches}, {"reason", c.reason}};
      if (i < s.oracle.size() && s.oracle[i])
        o["oracle"] = {{"fused", error_json(s.oracle[i]->fused)},
                       {"unfused", error_json(s.oracle[i]->unfused)},
                       {"fused_as_accurate", s.oracle[i]->fused_as_accurate}};
      else
        o["oracle"] = nullptr;
      outputs.push_back(o);
    }
    nlohmann::json set = {{"set", s.set}, {"equal", s.equal()}, {"outputs", outputs}};
    if (!s.oracle_note.empty()) set["oracle_note"] = s.oracle_note;
    sets.push_back(set);
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

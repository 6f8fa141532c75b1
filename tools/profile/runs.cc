#include "runs.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>

#include <fmt/format.h>

#include "refeval/error.h"

namespace refeval::profile {

int64_t Run::top_level_kernel_us() const {
  int64_t sum = 0;
  for (const Event* e : kernels)
    if (!e->extra_args.contains("depth")) sum += e->dur;
  return sum;
}

std::vector<Run> split_runs(const ProfileFile& file, std::vector<std::string>* warnings) {
  std::vector<Run> runs;
  for (const Event& e : file.events)
    if (e.kind == EventKind::Session && e.name == "model_run") {
      Run& r = runs.emplace_back();
      r.index = int(runs.size()) - 1, r.ts = e.ts, r.dur = e.dur;
      if (const auto p = e.extra_args.find("phase"); p != e.extra_args.end() && p->is_string()) r.phase = p->get<std::string>();
      if (const auto st = e.extra_args.find("step"); st != e.extra_args.end()) {
        if (st->is_number_integer()) r.step = st->get<int>();
        else if (st->is_string()) r.step = std::atoi(st->get<std::string>().c_str());  // ORT writes numbers as strings
      }
      if (const auto kv = e.extra_args.find("kv_cache_bytes"); kv != e.extra_args.end() && kv->is_number_integer())
        r.kv_cache_bytes = kv->get<int64_t>();
      if (const auto m = e.extra_args.find("memory"); m != e.extra_args.end() && m->is_object()) r.memory = &*m;
    }
  const bool synthetic = runs.empty();
  if (synthetic) {
    if (warnings) warnings->push_back(fmt::format("{}: no model_run events; all node events are read as one run", file.path));
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (const Event& e : file.events)
      if (e.kind == EventKind::Kernel || e.kind == EventKind::Fence) lo = std::min(lo, e.ts), hi = std::max(hi, e.ts + e.dur);
    if (lo > hi) return {};
    Run& r = runs.emplace_back();
    r.ts = lo, r.dur = hi - lo;
  }
  size_t outside = 0;
  for (const Event& e : file.events) {
    if (e.kind != EventKind::Kernel && e.kind != EventKind::Fence) continue;
    // The run whose span holds the event's start (spans are disjoint; sorted by ts).
    auto it = std::upper_bound(runs.begin(), runs.end(), e.ts, [](int64_t ts, const Run& r) { return ts < r.ts; });
    if (it == runs.begin() || e.ts > std::prev(it)->ts + std::prev(it)->dur) { ++outside; continue; }
    (e.kind == EventKind::Kernel ? std::prev(it)->kernels : std::prev(it)->fences).push_back(&e);
  }
  if (outside && warnings)
    warnings->push_back(fmt::format("{}: {} node event(s) outside every model_run were left out", file.path, outside));
  return runs;
}

namespace {

std::optional<int> parse_bound(std::string_view s, const std::string& range) {
  if (s.empty()) return std::nullopt;
  int v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size())
    fail_usage(fmt::format("--runs: '{}' is not a range like 1:5, 3: or :-1", range));
  return v;
}

}  // namespace

std::vector<Run> select_runs(std::vector<Run> runs, const RunSelection& sel) {
  const int n = int(runs.size());
  const bool tagged = std::any_of(runs.begin(), runs.end(), [](const Run& r) { return !r.phase.empty(); });
  int lo = sel.include_warmup || tagged || n <= 1 ? 0 : 1, hi = n;
  if (!sel.range.empty()) {
    const size_t colon = sel.range.find(':');
    if (colon == std::string::npos) fail_usage(fmt::format("--runs: '{}' is not a range like 1:5, 3: or :-1", sel.range));
    auto clamp = [n](int v) { return std::clamp(v < 0 ? v + n : v, 0, n); };
    lo = clamp(parse_bound(std::string_view(sel.range).substr(0, colon), sel.range).value_or(0));
    hi = clamp(parse_bound(std::string_view(sel.range).substr(colon + 1), sel.range).value_or(n));
  }
  if (lo >= hi) fail_usage(fmt::format("--runs: the profile has {} run(s); the selection is empty", n));
  std::vector<Run> kept;
  for (int i = lo; i < hi; ++i)
    if (sel.phase.empty() || runs[size_t(i)].phase == sel.phase) kept.push_back(std::move(runs[size_t(i)]));
  if (kept.empty()) fail_usage(fmt::format("--phase: no run of phase '{}' (phases are tagged by refeval generate)", sel.phase));
  return kept;
}

namespace {

void add_file(LoadedProfiles& out, ProfileFile file, const RunSelection& selection) {
  out.warnings.insert(out.warnings.end(), file.warnings.begin(), file.warnings.end());
  out.label += (out.label.empty() ? "" : " + ") + file.path;
  const ProfileFile& kept = out.files.emplace_back(std::move(file));
  std::vector<Run> runs = split_runs(kept, &out.warnings);
  if (runs.empty()) fail_input(fmt::format("{}: no node events: nothing to report", kept.path));
  out.runs_in_files += int(runs.size());
  for (Run& r : select_runs(std::move(runs), selection)) out.runs.push_back(std::move(r));
}

}  // namespace

LoadedProfiles load_profiles(const std::vector<std::string>& paths, const RunSelection& selection) {
  LoadedProfiles out;
  for (const std::string& p : paths) add_file(out, read_profile(p), selection);
  return out;
}

LoadedProfiles loaded_from(ProfileFile file, const RunSelection& selection) {
  LoadedProfiles out;
  add_file(out, std::move(file), selection);
  return out;
}

}  // namespace refeval::profile

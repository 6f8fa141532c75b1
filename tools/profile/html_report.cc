#include "html_report.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "html.h"
#include "memory_report.h"

#include "render.h"

namespace refeval::profile {
namespace {

std::string escape(std::string_view s) { return html_escape(s); }

constexpr const char* kPalette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948",
                                    "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac", "#86bcb6", "#d37295"};
constexpr const char* kBefore = "#9aa7b8";
constexpr const char* kAfter = "#4e79a7";

// Colours by op type, in the order of the by-op table (the costliest first).
std::map<std::string, std::string> op_colours(const Table& by_op) {
  std::map<std::string, std::string> c;
  for (size_t i = 0; i < by_op.rows.size(); ++i) c[by_op.rows[i].key] = kPalette[i % std::size(kPalette)];
  return c;
}

struct Bar {
  std::string label;
  std::vector<double> values;  // one per series
  std::vector<std::string> texts;
};

// A horizontal bar chart; one bar per series per label (before/after in a comparison).
// With one series, `bar_colours` (if given) colours each bar (by op type, as the timeline does).
std::string bar_chart(const std::string& title, const std::vector<Bar>& bars, const std::vector<std::string>& colours,
                      const std::string& css_class, const std::map<std::string, std::string>* bar_colours = nullptr) {
  // Labels right-aligned before the bars, as wide as the longest (about 6.5 px a character at 11 px).
  size_t longest = 0;
  for (const Bar& b : bars) longest = std::max(longest, b.label.size());
  const int label_w = std::clamp(int(double(longest) * 6.5) + 12, 150, 380), bar_w = 300, text_w = 90;
  const int series = int(colours.size()), bar_h = 14, gap = 6;
  const int row_h = series * bar_h + gap, height = int(bars.size()) * row_h + 30;
  double top = 0;
  for (const Bar& b : bars)
    for (double v : b.values) top = std::max(top, v);
  std::string svg = fmt::format(
      "<figure class=\"chart {}\"><figcaption>{}</figcaption>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" "
      "height=\"{}\" role=\"img\" aria-label=\"{}\">\n",
      css_class, escape(title), label_w + bar_w + text_w, height, escape(title));
  for (size_t i = 0; i < bars.size(); ++i) {
    const int y = 10 + int(i) * row_h;
    svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\" class=\"label\">{}</text>\n", label_w - 6,
                       y + series * bar_h / 2 + 4, escape(bars[i].label));
    for (int s = 0; s < series; ++s) {
      const double v = bars[i].values[size_t(s)];
      const double w = top > 0 ? std::max(v > 0 ? 1.0 : 0.0, v / top * bar_w) : 0;
      svg += fmt::format(
          "<rect class=\"bar\" x=\"{}\" y=\"{}\" width=\"{:.1f}\" height=\"{}\" fill=\"{}\"><title>{}: {}</title></rect>"
          "<text x=\"{:.1f}\" y=\"{}\" class=\"value\">{}</text>\n",
          label_w, y + s * bar_h, w, bar_h - 2,
          bar_colours && bar_colours->count(bars[i].label) ? bar_colours->at(bars[i].label) : colours[size_t(s)], escape(bars[i].label), escape(bars[i].texts[size_t(s)]),
          label_w + w + 4, y + s * bar_h + bar_h - 4, escape(bars[i].texts[size_t(s)]));
    }
  }
  return svg + "</svg></figure>\n";
}

std::vector<Row> top_rows(const Table& t, size_t top) {
  std::vector<Row> rows = t.rows;
  if (top && rows.size() > top) rows.resize(top);
  return rows;
}

std::string three_views(const Table& by_op, size_t top) {
  std::vector<Bar> dur, count, share;
  for (const Row& r : top_rows(by_op, top)) {
    dur.push_back({r.key, {r.total_ms}, {fmt::format("{:.3f} ms", r.total_ms)}});
    count.push_back({r.key, {double(r.count)}, {std::to_string(r.count)}});
    share.push_back({r.key, {r.pct}, {fmt::format("{:.1f}%", r.pct)}});
  }
  const auto colours = op_colours(by_op);
  return "<div class=\"charts\">\n" + bar_chart("Duration per op type (ms)", dur, {kAfter}, "duration", &colours) +
         bar_chart("Calls per op type", count, {kAfter}, "count", &colours) +
         bar_chart("Share of kernel time (%)", share, {kAfter}, "share", &colours) + "</div>\n";
}

std::string table_html(const Table& t, size_t top, const std::string& id) {
  const bool node = t.by == GroupBy::Node, scope = t.by == GroupBy::Scope;
  std::string h = fmt::format("<table class=\"rows\" id=\"{}\"><thead><tr><th>{}</th>{}<th>total ms</th><th>count</th>"
                              "<th>mean ms</th><th>%</th>{}</tr></thead><tbody>\n",
                              id, group_by_name(t.by), node ? "<th>op type</th><th>provider</th>" : "",
                              scope ? "<th>nodes</th><th>costliest node</th><th>its op</th><th>its %</th>" : "");
  for (const Row& r : top_rows(t, top))
    h += fmt::format("<tr><td>{}</td>{}<td>{:.3f}</td><td>{}</td><td>{:.6f}</td><td>{:.2f}</td>{}</tr>\n", escape(r.key),
                     node ? fmt::format("<td class=\"l\">{}</td><td class=\"l\">{}</td>", escape(r.op_type), escape(r.provider)) : "", r.total_ms,
                     r.count, r.mean_ms, r.pct,
                     scope ? fmt::format("<td>{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{:.1f}</td>", r.nodes, escape(r.top_node),
                                         escape(r.top_op_type), r.total_ms > 0 ? 100 * r.top_node_ms / r.total_ms : 0.0)
                           : "");
  return h + "</tbody></table>\n";
}

// Every call of each op type: run, node, shapes, time (ort_perf_view's drill-down, as a list).
std::string drill_down(const ProfileView& v) {
  std::map<std::string, std::vector<std::pair<int, const Event*>>> calls;
  for (const Run& r : v.runs)
    for (const Event* e : r.kernels) calls[e->op_type.empty() ? "(unknown)" : e->op_type].push_back({r.index, e});
  std::string h = "<div class=\"drill\">\n";
  for (const Row& row : v.by_op.rows) {
    const auto& list = calls[row.key];
    h += fmt::format("<details data-op=\"{}\"><summary>{} &mdash; {} calls, {:.3f} ms</summary>\n<table class=\"calls\"><thead><tr>"
                     "<th>run</th><th>node</th><th>inputs</th><th>outputs</th><th>&micro;s</th></tr></thead><tbody>\n",
                     escape(row.key), escape(row.key), row.count, row.total_ms);
    for (const auto& [run, e] : list)
      h += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n", run, escape(e->node),
                       escape(shapes_to_string(e->inputs)), escape(shapes_to_string(e->outputs)), e->dur);
    h += "</tbody></table></details>\n";
  }
  return h + "</div>\n";
}

// One run (the one of median wall time): a lane per op type, a rectangle per call.
std::string timeline(const ProfileView& v) {
  if (v.runs.empty()) return "";
  std::vector<const Run*> by_dur;
  for (const Run& r : v.runs) by_dur.push_back(&r);
  std::sort(by_dur.begin(), by_dur.end(), [](const Run* a, const Run* b) { return a->dur < b->dur; });
  const Run& run = *by_dur[by_dur.size() / 2];
  const auto colours = op_colours(v.by_op);
  std::map<std::string, int> lane;
  for (const Row& r : v.by_op.rows) lane.emplace(r.key, int(lane.size()));
  const int label_w = 150, width = 1000, lane_h = 16;
  const int height = int(lane.size()) * lane_h + 40;
  const double span = std::max<int64_t>(1, run.dur);
  std::string svg = fmt::format(
      "<figure class=\"timeline\"><figcaption>Timeline of run {0} ({1:.3f} ms, the median run)</figcaption>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{2}\" height=\"{3}\" viewBox=\"0 0 {2} {3}\" class=\"fit\">\n",
      run.index, double(run.dur) / 1000, label_w + width + 10, height);
  for (const auto& [op, i] : lane)
    svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\" class=\"label\">{}</text>\n", label_w - 6,
                       10 + i * lane_h + 11, escape(op));
  for (const Event* e : run.kernels) {
    const std::string op = e->op_type.empty() ? "(unknown)" : e->op_type;
    const double x = label_w + double(e->ts - run.ts) / span * width, w = std::max(0.5, double(e->dur) / span * width);
    svg += fmt::format("<rect x=\"{:.1f}\" y=\"{}\" width=\"{:.1f}\" height=\"{}\" fill=\"{}\"><title>{} ({}) {} &micro;s {}</title></rect>\n",
                       x, 10 + lane[op] * lane_h, w, lane_h - 3, colours.count(op) ? colours.at(op) : "#888",
                       escape(e->node), escape(op), e->dur, escape(shapes_to_string(e->inputs)));
  }
  svg += fmt::format("<text x=\"{}\" y=\"{}\" class=\"axis\">0 ms</text><text x=\"{}\" y=\"{}\" text-anchor=\"end\" class=\"axis\">{:.3f} ms</text>\n",
                     label_w, height - 8, label_w + width, height - 8, double(run.dur) / 1000);
  return svg + "</svg></figure>\n";
}

// A column per run of a generation loop: its wall time, the prefill in another colour; or, with
// `kv`, the KV cache's size after each run.
std::string step_chart(const std::string& title, const std::vector<Run>& runs, bool kv) {
  const int left = 84, col = std::max(4, std::min(24, 900 / std::max<int>(1, int(runs.size())))), plot_h = 160;
  const int width = left + col * int(runs.size()) + 20, height = plot_h + 40;
  auto value = [&](const Run& r) { return kv ? double(std::max<int64_t>(0, r.kv_cache_bytes)) / (1 << 20) : double(r.dur) / 1000; };
  double top = 0;
  for (const Run& r : runs) top = std::max(top, value(r));
  std::string svg = fmt::format(
      "<figure class=\"steps\"><figcaption>{}</figcaption>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" "
      "height=\"{}\" role=\"img\" aria-label=\"{}\">\n",
      escape(title), width, height, escape(title));
  svg += fmt::format("<text x=\"{}\" y=\"14\" text-anchor=\"end\" class=\"axis\">{:.3g} {}</text>"
                     "<text x=\"{}\" y=\"{}\" text-anchor=\"end\" class=\"axis\">0</text>\n",
                     left - 6, top, kv ? "MiB" : "ms", left - 6, 10 + plot_h);
  for (size_t i = 0; i < runs.size(); ++i) {
    const Run& r = runs[i];
    const double h = top > 0 ? std::max(1.0, value(r) / top * plot_h) : 0;
    const bool prefill = r.phase == "prefill";
    svg += fmt::format("<rect class=\"{}\" x=\"{}\" y=\"{:.1f}\" width=\"{}\" height=\"{:.1f}\" fill=\"{}\"><title>step {} "
                       "({}): {:.3f} {}</title></rect>\n",
                       prefill ? "prefill" : "decode", left + int(i) * col, 10 + plot_h - h, col - 1, h,
                       prefill ? kPalette[1] : kPalette[0], r.step >= 0 ? r.step : int(i), escape(r.phase), value(r), kv ? "MiB" : "ms");
    if (prefill)
      svg += fmt::format("<text x=\"{}\" y=\"{:.1f}\" class=\"label\">prefill</text>\n", left + int(i) * col, 10 + plot_h - h - 4 < 12 ? 12.0 : 10 + plot_h - h - 4);
  }
  svg += fmt::format("<text x=\"{}\" y=\"{}\" class=\"axis\">step 0</text><text x=\"{}\" y=\"{}\" text-anchor=\"end\" "
                     "class=\"axis\">step {}</text>\n",
                     left, height - 8, left + col * int(runs.size()), height - 8, runs.empty() ? 0 : int(runs.size()) - 1);
  return svg + "</svg></figure>\n";
}

// The runs of a generation loop (`refeval generate --profile`, or ORT's loop tagged the same way):
// latency per step with the prefill marked, the KV cache's growth, and the op charts per phase.
std::string generation_section(const ProfileView& v, size_t top) {
  std::vector<std::string> phases;
  for (const Run& r : v.runs)
    if (!r.phase.empty() && std::find(phases.begin(), phases.end(), r.phase) == phases.end()) phases.push_back(r.phase);
  if (phases.empty()) return "";
  std::vector<Run> decode;
  for (const Run& r : v.runs)
    if (r.phase != "prefill") decode.push_back(r);
  std::string h = "<h2>Generation</h2>\n<div class=\"charts\">\n" + step_chart("Latency per step (ms; prefill marked)", v.runs, false);
  if (!decode.empty() && decode.size() < v.runs.size()) h += step_chart("Latency per decode step (ms)", decode, false);
  if (std::any_of(v.runs.begin(), v.runs.end(), [](const Run& r) { return r.kv_cache_bytes >= 0; }))
    h += step_chart("KV cache after each step (MiB)", v.runs, true);
  h += "</div>\n";
  for (const std::string& phase : phases) {
    std::vector<Run> runs;
    for (const Run& r : v.runs)
      if (r.phase == phase) runs.push_back(r);
    const Table t = aggregate(v.by_op.summary.path, v.by_op.summary.runs_in_file, runs, GroupBy::Op);
    h += fmt::format("<h2>Phase {} ({} run{}, {:.3f} ms)</h2>\n", escape(phase), runs.size(), runs.size() == 1 ? "" : "s", t.summary.wall_ms) +
         three_views(t, top) + table_html(t, top, "ops-" + phase);
  }
  return h;
}

}  // namespace

std::string report_page(const std::string& title, const std::string& body) {
  return fmt::format(R"(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{}</title>
<style>{}</style></head>
<body>
{}
</body></html>
)",
                     escape(title), kReportCss, body);
}

namespace {
std::string page(const std::string& title, const std::string& body) { return report_page(title, body); }

// The memory section when the runs carry `refeval profile --memory`'s figures.
std::string memory_html(const ProfileView& v, size_t top) {
  if (std::none_of(v.runs.begin(), v.runs.end(), [](const Run& r) { return r.memory != nullptr; })) return "";
  return html_memory_section(memory_report(v.runs, v.by_op.summary.path), top);
}

std::string side_html(const ProfileView& v, size_t top) {
  return fmt::format("<pre class=\"summary\">{}</pre>\n<h2>Timeline</h2>\n{}<h2>Calls by op type</h2>\n{}<h2>Per node</h2>\n{}",
                     escape(summary_lines(v.by_op.summary)), timeline(v), drill_down(v), table_html(v.by_node, top, "nodes"));
}

}  // namespace

std::string html_report(const ProfileView& v, size_t top) {
  const std::string body = fmt::format("<h1>Profile: {}</h1>\n<pre class=\"summary\">{}</pre>\n{}<h2>Per op type</h2>\n{}{}<h2>Timeline</h2>\n{}"
                                       "<h2>Calls by op type</h2>\n{}<h2>Per node</h2>\n{}",
                                       escape(v.by_op.summary.path), escape(summary_lines(v.by_op.summary)),
                                       generation_section(v, top) + memory_html(v, top),
                                       three_views(v.by_op, top), table_html(v.by_op, top, "ops"), timeline(v), drill_down(v),
                                       table_html(v.by_node, top, "nodes"));
  return page("refeval report: " + v.by_op.summary.path, body);
}

std::string html_scope_report(const Table& by_scope, size_t top) {
  std::vector<Bar> dur, share;
  for (const Row& r : top_rows(by_scope, top)) {
    dur.push_back({r.key, {r.total_ms}, {fmt::format("{:.3f} ms", r.total_ms)}});
    share.push_back({r.key, {r.pct}, {fmt::format("{:.1f}%", r.pct)}});
  }
  const std::string body = fmt::format(
      "<h1>Profile by name scope (depth {}): {}</h1>\n<pre class=\"summary\">{}</pre>\n<div class=\"charts\">\n{}{}</div>\n"
      "<h2>Per scope</h2>\n{}",
      by_scope.scope_depth, escape(by_scope.summary.path), escape(summary_lines(by_scope.summary)),
      bar_chart("Duration per scope (ms)", dur, {kAfter}, "duration"), bar_chart("Share of kernel time (%)", share, {kAfter}, "share"),
      table_html(by_scope, top, "scopes"));
  return page("refeval report: " + by_scope.summary.path, body);
}

std::string html_comparison(const ProfileView& before, const ProfileView& after, const Comparison& c, size_t top) {
  std::vector<Bar> dur, count;
  for (size_t i = 0; i < c.rows.size() && (!top || i < top); ++i) {
    const CompareRow& r = c.rows[i];
    dur.push_back({r.key, {r.before_ms, r.after_ms}, {fmt::format("{:.3f} ms", r.before_ms), fmt::format("{:.3f} ms", r.after_ms)}});
    count.push_back({r.key, {r.before_count, r.after_count}, {fmt::format("{:g}", r.before_count), fmt::format("{:g}", r.after_count)}});
  }
  std::string table = "<table class=\"rows\" id=\"compare\"><thead><tr><th>op type</th><th>before ms</th><th>before calls</th>"
                      "<th>after ms</th><th>after calls</th><th>delta ms</th><th>speed-up</th><th>status</th></tr></thead><tbody>\n";
  for (const CompareRow& r : c.rows)
    table += fmt::format("<tr><td>{}</td><td>{:.3f}</td><td>{:g}</td><td>{:.3f}</td><td>{:g}</td><td>{:+.3f}</td><td>{}</td><td>{}</td></tr>\n",
                         escape(r.key), r.before_ms, r.before_count, r.after_ms, r.after_count, r.delta_ms(),
                         r.speedup() > 0 ? fmt::format("{:.2f}x", r.speedup()) : "",
                         r.status == '-' ? "vanished" : r.status == '+' ? "appeared" : "");
  table += "</tbody></table>\n";
  const std::string body = fmt::format(
      "<h1>Profiles compared: {} &rarr; {}</h1>\n<p class=\"legend\">Times and calls per run.<span style=\"background:{}\"></span>before"
      "<span style=\"background:{}\"></span>after</p>\n<div class=\"charts\">\n{}{}</div>\n{}\n<div class=\"side\"><div><h2>Before: {}</h2>\n"
      "{}</div><div><h2>After: {}</h2>\n{}</div></div>\n",
      escape(before.by_op.summary.path), escape(after.by_op.summary.path), kBefore, kAfter,
      bar_chart("Duration per op type (ms per run)", dur, {kBefore, kAfter}, "duration"),
      bar_chart("Calls per op type (per run)", count, {kBefore, kAfter}, "count"), table, escape(before.by_op.summary.path),
      side_html(before, top), escape(after.by_op.summary.path), side_html(after, top));
  return page("refeval report: comparison", body);
}

}  // namespace refeval::profile

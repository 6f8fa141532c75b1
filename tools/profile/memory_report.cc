#include "memory_report.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "aggregate.h"
#include "html.h"
#include "html_report.h"
#include "refeval/error.h"

namespace refeval::profile {
namespace {

using json = nlohmann::ordered_json;

int64_t int_of(const json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_number_integer() ? it->get<int64_t>() : 0;
}
std::string string_of(const json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

std::string mib(int64_t bytes) { return fmt::format("{:.2f} MiB", double(bytes) / (1 << 20)); }
std::string share(int64_t part, int64_t whole) { return whole > 0 ? fmt::format("{:.1f}%", 100.0 * double(part) / double(whole)) : "-"; }

MemoryRun memory_run(const Run& r) {
  MemoryRun m;
  m.run = &r;
  const json& j = *r.memory;
  m.peak_bytes = int_of(j, "peak_bytes"), m.inplace_peak_bytes = int_of(j, "inplace_peak_bytes");
  m.weights_bytes = int_of(j, "weights_bytes"), m.free_list_bytes = int_of(j, "free_list_bytes");
  m.packed_weight_bytes = int_of(j, "packed_weight_bytes"), m.peak_rss_bytes = int_of(j, "peak_rss_bytes");
  m.peak_node = string_of(j, "peak_node");
  m.peak_index = size_t(int_of(j, "peak_node_index"));
  if (const auto at = j.find("at_peak"); at != j.end() && at->is_array())
    for (const json& t : *at)
      if (t.is_object()) m.at_peak.push_back({string_of(t, "name"), int_of(t, "bytes"), string_of(t, "producer"), string_of(t, "last_reader")});
  for (const Event* e : r.kernels) {
    if (e->extra_args.contains("depth")) continue;  // a body's node: inside its caller's figure
    const auto live = e->extra_args.find("live_bytes");
    if (live != e->extra_args.end() && live->is_number_integer()) m.timeline.push_back({e->node, e->op_type, live->get<int64_t>()});
  }
  return m;
}

// The highest live bytes of the peak run's nodes in each name scope at `depth`, in the order the
// scopes first ran.
struct ScopePeak {
  std::string scope, node;
  int64_t bytes = 0;
};
std::vector<ScopePeak> scope_peaks(const MemoryRun& m, int depth) {
  std::vector<ScopePeak> out;
  std::map<std::string, size_t> index;
  for (const MemoryRun::Point& p : m.timeline) {
    const std::string scope = scope_of(p.node, depth);
    auto [it, fresh] = index.emplace(scope, out.size());
    if (fresh) out.push_back({scope, p.node, p.live_bytes});
    ScopePeak& s = out[it->second];
    if (p.live_bytes > s.bytes) s.bytes = p.live_bytes, s.node = p.node;
  }
  return out;
}

bool generation(const MemoryReport& m) {
  return std::any_of(m.runs.begin(), m.runs.end(), [](const MemoryRun& r) { return !r.run->phase.empty(); });
}

std::string summary_text(const MemoryReport& m) {
  const MemoryRun& p = m.peak_run();
  std::string s = fmt::format("{}: run {} ({} run{} with memory figures read{})\n", m.label, p.run->index, m.runs.size(),
                              m.runs.size() == 1 ? "" : "s", m.runs.size() > 1 ? "; the one with the highest peak" : "");
  s += fmt::format("peak: {} of activations at {} (node {} of {}); weights {} apart\n", mib(p.peak_bytes), p.peak_node,
                   p.peak_index, p.timeline.size(), mib(p.weights_bytes));
  if (p.inplace_peak_bytes < p.peak_bytes)
    s += fmt::format("in-place reuse (elementwise outputs into inputs read for the last time) would make it {} (-{})\n",
                     mib(p.inplace_peak_bytes), share(p.peak_bytes - p.inplace_peak_bytes, p.peak_bytes));
  else
    s += "in-place reuse would not lower it (no elementwise node at the peak frees an input of its output's size)\n";
  s += fmt::format("refeval's allocator: {} in free lists, {} of packed weights; peak RSS {}\n", mib(p.free_list_bytes),
                   mib(p.packed_weight_bytes), mib(p.peak_rss_bytes));
  return s;
}

Grid at_peak_grid(const MemoryRun& p, size_t top) {
  Grid g{{"tensor", "bytes", "MiB", "share", "producer", "last_reader"}, {false, true, true, true, false, false}, {}};
  for (size_t i = 0; i < p.at_peak.size() && (!top || i < top); ++i) {
    const auto& t = p.at_peak[i];
    g.rows.push_back({t.name, std::to_string(t.bytes), fmt::format("{:.2f}", double(t.bytes) / (1 << 20)), share(t.bytes, p.peak_bytes),
                      t.producer, t.last_reader});
  }
  return g;
}

Grid steps_grid(const MemoryReport& m) {
  Grid g{{"run", "phase", "step", "peak_MiB", "peak_node", "kv_cache_MiB"}, {true, false, true, true, false, true}, {}};
  for (const MemoryRun& r : m.runs)
    g.rows.push_back({std::to_string(r.run->index), r.run->phase, r.run->step >= 0 ? std::to_string(r.run->step) : "",
                      fmt::format("{:.2f}", double(r.peak_bytes) / (1 << 20)), r.peak_node,
                      r.run->kv_cache_bytes >= 0 ? fmt::format("{:.2f}", double(r.run->kv_cache_bytes) / (1 << 20)) : ""});
  return g;
}

json run_json(const MemoryReport& m, int depth) {
  const MemoryRun& p = m.peak_run();
  json j;
  j["file"] = m.label;
  j["run"] = p.run->index;
  j["peak_bytes"] = p.peak_bytes;
  j["peak_node"] = p.peak_node;
  j["peak_node_index"] = p.peak_index;
  j["inplace_peak_bytes"] = p.inplace_peak_bytes;
  j["weights_bytes"] = p.weights_bytes;
  j["free_list_bytes"] = p.free_list_bytes;
  j["packed_weight_bytes"] = p.packed_weight_bytes;
  j["peak_rss_bytes"] = p.peak_rss_bytes;
  j["timeline"] = json::array();
  for (const auto& t : p.timeline) j["timeline"].push_back({{"node", t.node}, {"op_type", t.op_type}, {"live_bytes", t.live_bytes}});
  j["at_peak"] = json::array();
  for (const auto& t : p.at_peak)
    j["at_peak"].push_back({{"name", t.name}, {"bytes", t.bytes}, {"producer", t.producer}, {"last_reader", t.last_reader}});
  if (depth > 0) {
    j["scopes"] = json::array();
    for (const ScopePeak& s : scope_peaks(p, depth)) j["scopes"].push_back({{"scope", s.scope}, {"peak_bytes", s.bytes}, {"node", s.node}});
  }
  j["runs"] = json::array();
  for (const MemoryRun& r : m.runs) {
    json run = {{"run", r.run->index}, {"peak_bytes", r.peak_bytes}, {"peak_node", r.peak_node}};
    if (!r.run->phase.empty()) run["phase"] = r.run->phase, run["step"] = r.run->step;
    if (r.run->kv_cache_bytes >= 0) run["kv_cache_bytes"] = r.run->kv_cache_bytes;
    j["runs"].push_back(std::move(run));
  }
  return j;
}

std::string escape(std::string_view s) { return html_escape(s); }

// Live bytes over the peak run's nodes as a filled step line: each node a column with its bytes
// on hover, the peak marked.
std::string timeline_chart(const MemoryRun& p) {
  const int left = 70, plot_w = std::max(300, std::min(1100, int(p.timeline.size()) * 6)), plot_h = 200, height = plot_h + 44;
  int64_t top = 1;
  for (const auto& t : p.timeline) top = std::max(top, t.live_bytes);
  const double col = double(plot_w) / double(std::max<size_t>(1, p.timeline.size()));
  auto y = [&](int64_t b) { return 10 + plot_h - double(b) / double(top) * plot_h; };
  std::string svg = fmt::format(
      "<figure class=\"memory\"><figcaption>Live activation bytes while each node runs (run {}; peak marked)</figcaption>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" role=\"img\" aria-label=\"memory timeline\">\n",
      p.run->index, left + plot_w + 20, height);
  svg += fmt::format("<text x=\"{}\" y=\"14\" text-anchor=\"end\" class=\"axis\">{}</text><text x=\"{}\" y=\"{}\" "
                     "text-anchor=\"end\" class=\"axis\">0</text>\n",
                     left - 6, mib(top), left - 6, 10 + plot_h);
  for (size_t i = 0; i < p.timeline.size(); ++i) {
    const auto& t = p.timeline[i];
    const bool peak = i == p.peak_index;
    svg += fmt::format("<rect class=\"{}\" x=\"{:.2f}\" y=\"{:.1f}\" width=\"{:.2f}\" height=\"{:.1f}\" fill=\"{}\"><title>{} ({}): {} "
                       "({} bytes)</title></rect>\n",
                       peak ? "live peak" : "live", left + double(i) * col, y(t.live_bytes), std::max(col, 1.0),
                       10 + plot_h - y(t.live_bytes), peak ? "#e15759" : "#4e79a7", escape(t.node), escape(t.op_type),
                       mib(t.live_bytes), t.live_bytes);
  }
  if (!p.timeline.empty()) {
    const double x = left + (double(p.peak_index) + 0.5) * col;
    svg += fmt::format("<line x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"10\" y2=\"{1}\" stroke=\"#e15759\" stroke-dasharray=\"3,2\"/>"
                       "<text x=\"{2:.1f}\" y=\"{3:.1f}\" text-anchor=\"{4}\" class=\"label\">peak {5} at {6}</text>\n",
                       x, 10 + plot_h, x + (x > left + plot_w / 2 ? -4 : 4), std::max(22.0, y(p.peak_bytes) - 4),
                       x > left + plot_w / 2 ? "end" : "start", mib(p.peak_bytes), escape(p.peak_node));
  }
  svg += fmt::format("<text x=\"{}\" y=\"{}\" class=\"axis\">first node</text><text x=\"{}\" y=\"{}\" text-anchor=\"end\" "
                     "class=\"axis\">node {}</text>\n",
                     left, height - 10, left + plot_w, height - 10, p.timeline.empty() ? 0 : p.timeline.size() - 1);
  return svg + "</svg></figure>\n";
}

// Per run of a generation loop: its peak activations and the KV cache after it, side by side.
std::string steps_chart(const MemoryReport& m) {
  const int left = 70, col = std::max(6, std::min(28, 900 / std::max<int>(1, int(m.runs.size())))), plot_h = 160;
  const int width = left + col * int(m.runs.size()) + 20, height = plot_h + 40;
  int64_t top = 1;
  for (const MemoryRun& r : m.runs) top = std::max({top, r.peak_bytes, r.run->kv_cache_bytes});
  std::string svg = fmt::format(
      "<figure class=\"memory-steps\"><figcaption>Per step: peak activations (blue) and KV cache after the step (orange)</figcaption>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" role=\"img\" aria-label=\"memory per step\">\n",
      width, height);
  svg += fmt::format("<text x=\"{}\" y=\"14\" text-anchor=\"end\" class=\"axis\">{}</text><text x=\"{}\" y=\"{}\" "
                     "text-anchor=\"end\" class=\"axis\">0</text>\n",
                     left - 6, mib(top), left - 6, 10 + plot_h);
  for (size_t i = 0; i < m.runs.size(); ++i) {
    const MemoryRun& r = m.runs[i];
    const int64_t kv = std::max<int64_t>(0, r.run->kv_cache_bytes);
    const double ha = double(r.peak_bytes) / double(top) * plot_h, hk = double(kv) / double(top) * plot_h;
    const int x = left + int(i) * col, half = std::max(2, (col - 1) / 2);
    const std::string label = fmt::format("step {} ({})", r.run->step >= 0 ? r.run->step : int(i), r.run->phase);
    svg += fmt::format("<rect class=\"activations\" x=\"{}\" y=\"{:.1f}\" width=\"{}\" height=\"{:.1f}\" fill=\"#4e79a7\"><title>{}: "
                       "peak activations {} at {}</title></rect>\n",
                       x, 10 + plot_h - ha, half, ha, escape(label), mib(r.peak_bytes), escape(r.peak_node));
    svg += fmt::format("<rect class=\"kv\" x=\"{}\" y=\"{:.1f}\" width=\"{}\" height=\"{:.1f}\" fill=\"#f28e2b\"><title>{}: KV cache {}"
                       "</title></rect>\n",
                       x + half, 10 + plot_h - hk, half, hk, escape(label), mib(kv));
  }
  svg += fmt::format("<text x=\"{}\" y=\"{}\" class=\"axis\">first run</text>\n", left, height - 8);
  return svg + "</svg></figure>\n";
}

std::string grid_html(const Grid& g, const std::string& id) {
  std::string h = fmt::format("<table class=\"rows\" id=\"{}\"><thead><tr>", id);
  for (const auto& c : g.header) h += "<th>" + escape(c) + "</th>";
  h += "</tr></thead><tbody>\n";
  for (const auto& r : g.rows) {
    h += "<tr>";
    for (size_t c = 0; c < r.size(); ++c) h += fmt::format("<td{}>{}</td>", g.numeric[c] ? "" : " class=\"l\"", escape(r[c]));
    h += "</tr>\n";
  }
  return h + "</tbody></table>\n";
}

}  // namespace

MemoryReport memory_report(const std::vector<Run>& runs, const std::string& label) {
  MemoryReport m;
  m.label = label;
  for (const Run& r : runs)
    if (r.memory) m.runs.push_back(memory_run(r));
  if (m.runs.empty())
    fail_input(fmt::format("{}: no memory figures in the runs read: record the profile with `refeval profile --memory` (or "
                           "`refeval generate --profile F --memory`)",
                           label));
  for (size_t i = 1; i < m.runs.size(); ++i)
    if (m.runs[i].peak_bytes > m.runs[m.worst].peak_bytes) m.worst = i;
  return m;
}

std::string render_memory(const MemoryReport& m, Format f, int depth, size_t top) {
  const MemoryRun& p = m.peak_run();
  if (f == Format::Json) return run_json(m, depth).dump(2) + "\n";
  if (f == Format::Csv) {  // the timeline, one row per node
    Grid g{{"index", "node", "op_type", "live_bytes"}, {true, false, false, true}, {}};
    for (size_t i = 0; i < p.timeline.size(); ++i)
      g.rows.push_back({std::to_string(i), p.timeline[i].node, p.timeline[i].op_type, std::to_string(p.timeline[i].live_bytes)});
    return render_grid(g, f);
  }
  std::string s = f == Format::Md ? "```\n" + summary_text(m) + "```\n\n" : summary_text(m);
  s += fmt::format("\nalive at the peak ({} of {} tensors):\n", top && top < p.at_peak.size() ? top : p.at_peak.size(), p.at_peak.size());
  if (f == Format::Md) s += "\n";
  s += render_grid(at_peak_grid(p, top), f);
  if (depth > 0) {
    Grid g{{"scope", "peak_MiB", "at_node"}, {false, true, false}, {}};
    for (const ScopePeak& sp : scope_peaks(p, depth)) g.rows.push_back({sp.scope, fmt::format("{:.2f}", double(sp.bytes) / (1 << 20)), sp.node});
    s += fmt::format("\npeak per name scope (depth {}):\n", depth) + (f == Format::Md ? "\n" : "") + render_grid(g, f);
  }
  if (generation(m)) s += "\nper step:\n" + std::string(f == Format::Md ? "\n" : "") + render_grid(steps_grid(m), f);
  return s;
}

namespace {
Grid comparison_grid(const MemoryRun& b, const MemoryRun& a) {
  Grid g{{"", "before", "after", "after/before"}, {false, true, true, true}, {}};
  auto row = [&](const char* what, int64_t x, int64_t y) {
    g.rows.push_back({what, mib(x), mib(y), x > 0 ? fmt::format("{:.3f}", double(y) / double(x)) : "-"});
  };
  row("peak activations", b.peak_bytes, a.peak_bytes);
  row("with in-place reuse", b.inplace_peak_bytes, a.inplace_peak_bytes);
  row("weights", b.weights_bytes, a.weights_bytes);
  row("packed weights", b.packed_weight_bytes, a.packed_weight_bytes);
  row("peak RSS", b.peak_rss_bytes, a.peak_rss_bytes);
  g.rows.push_back({"peak node", b.peak_node, a.peak_node, ""});
  g.rows.push_back({"nodes", std::to_string(b.timeline.size()), std::to_string(a.timeline.size()), ""});
  return g;
}
}  // namespace

std::string render_memory_comparison(const MemoryReport& before, const MemoryReport& after, Format f, size_t top) {
  const MemoryRun &b = before.peak_run(), &a = after.peak_run();
  if (f == Format::Json) {
    json j;
    j["before"] = run_json(before, 0);
    j["after"] = run_json(after, 0);
    j["peak_ratio"] = b.peak_bytes > 0 ? double(a.peak_bytes) / double(b.peak_bytes) : 0.0;
    return j.dump(2) + "\n";
  }
  std::string s = fmt::format("memory: {} -> {}\n", before.label, after.label) + (f == Format::Md ? "\n" : "") +
                  render_grid(comparison_grid(b, a), f);
  s += "\nbefore, alive at its peak:\n" + std::string(f == Format::Md ? "\n" : "") + render_grid(at_peak_grid(b, top), f);
  s += "\nafter, alive at its peak:\n" + std::string(f == Format::Md ? "\n" : "") + render_grid(at_peak_grid(a, top), f);
  return s;
}

std::string html_memory_section(const MemoryReport& m, size_t top) {
  const MemoryRun& p = m.peak_run();
  std::string h = "<h2>Memory</h2>\n<pre class=\"summary\">" + escape(summary_text(m)) + "</pre>\n<div class=\"charts\">\n" + timeline_chart(p);
  if (generation(m)) h += steps_chart(m);
  h += "</div>\n<h3>Alive at the peak</h3>\n" + grid_html(at_peak_grid(p, top), "at-peak");
  return h;
}

std::string html_memory_report(const MemoryReport& m, size_t top) {
  std::string section = html_memory_section(m, top);
  section.erase(0, section.find('\n') + 1);  // its "Memory" heading: the page's title says it
  return report_page("refeval report: memory of " + m.label, "<h1>Memory: " + escape(m.label) + "</h1>\n" + section);
}

std::string html_memory_comparison(const MemoryReport& before, const MemoryReport& after, size_t top) {
  const std::string body = fmt::format("<h1>Memory compared: {} &rarr; {}</h1>\n{}"
                                       "<div class=\"side\"><div><h2>Before</h2>\n{}</div><div><h2>After</h2>\n{}</div></div>\n",
                                       escape(before.label), escape(after.label),
                                       grid_html(comparison_grid(before.peak_run(), after.peak_run()), "memory-compare"),
                                       html_memory_section(before, top), html_memory_section(after, top));
  return report_page("refeval report: memory compared", body);
}

}  // namespace refeval::profile

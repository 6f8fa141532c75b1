#include "render.h"

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "refeval/error.h"

namespace refeval::profile {

Format parse_format(const std::string& s) {
  if (s == "text") return Format::Text;
  if (s == "csv") return Format::Csv;
  if (s == "json") return Format::Json;
  if (s == "md") return Format::Md;
  if (s == "html") return Format::Html;
  fail_usage(fmt::format("--format: '{}' is not text, csv, json, md or html", s));
}

namespace {

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string md_field(const std::string& s) {
  std::string out;
  for (char c : s) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

}  // namespace

std::string render_grid(const Grid& g, Format f) {
  std::string out;
  if (f == Format::Csv) {
    auto line = [&](const std::vector<std::string>& cells) {
      std::vector<std::string> q;
      for (const auto& c : cells) q.push_back(csv_field(c));
      out += fmt::format("{}\n", fmt::join(q, ","));
    };
    line(g.header);
    for (const auto& r : g.rows) line(r);
    return out;
  }
  if (f == Format::Md) {
    auto line = [&](const std::vector<std::string>& cells) {
      std::vector<std::string> q;
      for (const auto& c : cells) q.push_back(md_field(c));
      out += fmt::format("| {} |\n", fmt::join(q, " | "));
    };
    line(g.header);
    std::vector<std::string> rule;
    for (bool n : g.numeric) rule.push_back(n ? "---:" : "---");
    out += fmt::format("| {} |\n", fmt::join(rule, " | "));
    for (const auto& r : g.rows) line(r);
    return out;
  }
  std::vector<size_t> width(g.header.size());
  for (size_t c = 0; c < g.header.size(); ++c) {
    width[c] = g.header[c].size();
    for (const auto& r : g.rows) width[c] = std::max(width[c], r[c].size());
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string l;
    for (size_t c = 0; c < cells.size(); ++c) {
      if (c) l += "  ";
      l += g.numeric[c] ? fmt::format("{:>{}}", cells[c], width[c]) : fmt::format("{:<{}}", cells[c], width[c]);
    }
    while (!l.empty() && l.back() == ' ') l.pop_back();
    out += l + "\n";
  };
  line(g.header);
  for (const auto& r : g.rows) line(r);
  return out;
}

namespace {

std::string ms(double v) { return fmt::format("{:.3f}", v); }
std::string mean(double v) { return fmt::format("{:.6f}", v); }
std::string pct(double v) { return fmt::format("{:.2f}", v); }
std::string per_run(double v) { return fmt::format("{:g}", std::round(v * 1000) / 1000); }

Grid table_grid(const Table& t) {
  Grid g;
  g.header = {group_by_name(t.by)};
  g.numeric = {false};
  if (t.by == GroupBy::Node) g.header.insert(g.header.end(), {"op_type", "provider"}), g.numeric.insert(g.numeric.end(), {false, false});
  g.header.insert(g.header.end(), {"total_ms", "count", "mean_ms", "pct"});
  g.numeric.insert(g.numeric.end(), {true, true, true, true});
  const bool scope = t.by == GroupBy::Scope;
  if (scope) g.header.insert(g.header.end(), {"nodes", "costliest_node", "its_op", "its_pct"}), g.numeric.insert(g.numeric.end(), {true, false, false, true});
  for (const Row& r : t.rows) {
    std::vector<std::string> cells = {r.key};
    if (t.by == GroupBy::Node) cells.insert(cells.end(), {r.op_type, r.provider});
    cells.insert(cells.end(), {ms(r.total_ms), std::to_string(r.count), mean(r.mean_ms), pct(r.pct)});
    if (scope)  // the costliest node's share of its scope's time
      cells.insert(cells.end(), {std::to_string(r.nodes), r.top_node, r.top_op_type, pct(r.total_ms > 0 ? 100 * r.top_node_ms / r.total_ms : 0)});
    g.rows.push_back(std::move(cells));
  }
  return g;
}

Grid comparison_grid(const Comparison& c) {
  Grid g;
  g.header = {group_by_name(c.by)};
  g.numeric = {false};
  if (c.by == GroupBy::Node) g.header.push_back("op_type"), g.numeric.push_back(false);
  g.header.insert(g.header.end(), {"before_ms", "before_count", "after_ms", "after_count", "delta_ms", "speedup", "status"});
  g.numeric.insert(g.numeric.end(), {true, true, true, true, true, true, false});
  for (const CompareRow& r : c.rows) {
    std::vector<std::string> cells = {r.key};
    if (c.by == GroupBy::Node) cells.push_back(r.op_type);
    const char* status = r.status == '-' ? "vanished" : r.status == '+' ? "appeared" : "";
    cells.insert(cells.end(), {ms(r.before_ms), per_run(r.before_count), ms(r.after_ms), per_run(r.after_count),
                               fmt::format("{:+.3f}", r.delta_ms()), r.speedup() > 0 ? fmt::format("{:.2f}x", r.speedup()) : "",
                               status});
    g.rows.push_back(std::move(cells));
  }
  return g;
}

nlohmann::ordered_json summary_json(const Summary& s) {
  return {{"profile", s.path},         {"runs_in_file", s.runs_in_file}, {"runs_used", s.runs_used},
          {"first_run", s.first_run},  {"wall_ms", s.wall_ms},           {"kernel_ms", s.kernel_ms},
          {"fence_ms", s.fence_ms},    {"kernel_events", s.kernel_events}, {"fence_events", s.fence_events},
          {"providers", s.providers}};
}

}  // namespace

std::string summary_lines(const Summary& s) {
  const int last = s.first_run + s.runs_used - 1;
  std::string runs = s.runs_used == 1 ? fmt::format("run {}", s.first_run) : fmt::format("runs {}-{}", s.first_run, last);
  std::string note = !s.phase.empty() ? fmt::format(" (phase {})", s.phase)
                     : s.first_run == 1 ? " (run 0, the warm-up, left out)" : "";
  const double overhead = s.wall_ms - s.kernel_ms - s.fence_ms;
  return fmt::format("{}: {} of {}{}\nwall {:.3f} ms (model_run), kernel {:.3f} ms ({:.1f}%), fence {:.3f} ms ({} events), "
                     "other {:.3f} ms\n",
                     s.path, runs, s.runs_in_file, note, s.wall_ms, s.kernel_ms,
                     s.wall_ms > 0 ? 100 * s.kernel_ms / s.wall_ms : 0.0, s.fence_ms, s.fence_events, overhead);
}

std::string render_table(const Table& t, Format f) {
  if (f == Format::Json) {
    nlohmann::ordered_json rows = nlohmann::ordered_json::array();
    for (const Row& r : t.rows) {
      nlohmann::ordered_json j = {{group_by_name(t.by), r.key}};
      if (t.by == GroupBy::Node) j["op_type"] = r.op_type, j["provider"] = r.provider;
      j["total_ms"] = r.total_ms, j["count"] = r.count, j["mean_ms"] = r.mean_ms, j["pct"] = r.pct;
      if (t.by == GroupBy::Scope)
        j["nodes"] = r.nodes, j["costliest_node"] = {{"node", r.top_node}, {"op_type", r.top_op_type}, {"total_ms", r.top_node_ms}};
      rows.push_back(j);
    }
    nlohmann::ordered_json doc = summary_json(t.summary);
    doc["by"] = group_by_name(t.by);
    if (t.by == GroupBy::Scope) doc["depth"] = t.scope_depth;
    doc["rows"] = rows;
    return doc.dump(2) + "\n";
  }
  const std::string grid = render_grid(table_grid(t), f);
  return f == Format::Text ? summary_lines(t.summary) + "\n" + grid : grid;
}

std::string render_comparison(const Comparison& c, Format f) {
  if (f == Format::Json) {
    nlohmann::ordered_json rows = nlohmann::ordered_json::array();
    for (const CompareRow& r : c.rows) {
      nlohmann::ordered_json j = {{group_by_name(c.by), r.key}};
      if (c.by == GroupBy::Node) j["op_type"] = r.op_type;
      j["before_ms"] = r.before_ms, j["before_count"] = r.before_count, j["after_ms"] = r.after_ms;
      j["after_count"] = r.after_count, j["delta_ms"] = r.delta_ms(), j["speedup"] = r.speedup();
      j["status"] = r.status == '-' ? "vanished" : r.status == '+' ? "appeared" : "both";
      rows.push_back(j);
    }
    nlohmann::ordered_json doc = {{"before", summary_json(c.before)}, {"after", summary_json(c.after)},
                                  {"by", group_by_name(c.by)}, {"per_run", true}, {"rows", rows}};
    return doc.dump(2) + "\n";
  }
  const std::string grid = render_grid(comparison_grid(c), f);
  if (f != Format::Text) return grid;
  const double wb = c.before.wall_ms / std::max(1, c.before.runs_used), wa = c.after.wall_ms / std::max(1, c.after.runs_used);
  return fmt::format("before: {}\nafter:  {}\ntimes and counts per run; wall per run {:.3f} ms -> {:.3f} ms ({:.2f}x)\n\n{}",
                     summary_lines(c.before), summary_lines(c.after), wb, wa, wa > 0 ? wb / wa : 0.0, grid);
}

}  // namespace refeval::profile

#include "aggregate.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "refeval/error.h"

namespace refeval::profile {

GroupBy parse_group_by(const std::string& s) {
  if (s == "op") return GroupBy::Op;
  if (s == "node") return GroupBy::Node;
  if (s == "provider") return GroupBy::Provider;
  if (s == "phase") return GroupBy::Phase;
  if (s == "scope") return GroupBy::Scope;
  fail_usage(fmt::format("--by: '{}' is not op, node, provider, phase or scope", s));
}

const char* group_by_name(GroupBy by) {
  switch (by) {
    case GroupBy::Op: return "op_type";
    case GroupBy::Node: return "node";
    case GroupBy::Provider: return "provider";
    case GroupBy::Phase: return "phase";
    case GroupBy::Scope: return "scope";
  }
  return "";
}

std::vector<std::string> name_scopes(std::string_view node) {
  std::vector<std::string> parts;
  const size_t own = node.rfind('/');  // the node's own name follows the last '/'
  if (own == std::string_view::npos) return parts;
  for (size_t from = 0; from < own;) {
    const size_t slash = node.find('/', from);
    if (slash > from) parts.emplace_back(node.substr(from, slash - from));
    from = slash + 1;
  }
  return parts;
}

std::string scope_of(std::string_view node, int depth) {
  std::vector<std::string> parts = name_scopes(node);
  if (parts.empty()) return "(no scope)";
  if (depth > 0 && parts.size() > size_t(depth)) parts.resize(size_t(depth));
  return fmt::format("{}", fmt::join(parts, "/"));
}

namespace {

std::string key_of(const Event& e, const Run& run, GroupBy by, int scope_depth) {
  switch (by) {
    case GroupBy::Scope: return scope_of(e.node, scope_depth);
    case GroupBy::Phase: return run.phase.empty() ? "(untagged)" : run.phase;
    case GroupBy::Op: return e.op_type.empty() ? "(unknown)" : e.op_type;
    case GroupBy::Node: return e.node;
    case GroupBy::Provider: return e.provider.empty() ? "(unknown)" : e.provider;
  }
  return "";
}

void sort_rows(std::vector<Row>& rows) {
  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
    return a.total_ms != b.total_ms ? a.total_ms > b.total_ms : a.key < b.key;
  });
}

}  // namespace

Table aggregate(const std::string& path, int runs_in_file, const std::vector<Run>& runs, GroupBy by, int scope_depth) {
  Table t;
  t.by = by;
  t.scope_depth = by == GroupBy::Scope ? scope_depth : 0;
  Summary& s = t.summary;
  s.path = path, s.runs_in_file = runs_in_file, s.runs_used = int(runs.size());
  s.first_run = runs.empty() ? 0 : runs.front().index;
  if (!runs.empty() && std::all_of(runs.begin(), runs.end(), [&](const Run& r) { return r.phase == runs.front().phase; }))
    s.phase = runs.front().phase;
  std::map<std::string, Row> rows;
  std::map<std::string, int64_t> micros;  // sums in integer microseconds, exact
  std::map<std::string, std::map<std::string, int64_t>> node_micros;  // by scope: scope -> node -> us
  std::map<std::string, std::string> node_ops;
  std::set<std::string> providers;
  int64_t all_us = 0, top_us = 0, fence_us = 0;
  for (const Run& r : runs) {
    s.wall_ms += double(r.dur) / 1000;
    top_us += r.top_level_kernel_us();
    for (const Event* e : r.fences) fence_us += e->dur, ++s.fence_events;
    for (const Event* e : r.kernels) {
      const std::string key = key_of(*e, r, by, scope_depth);
      Row& row = rows[key];
      if (row.count == 0) {
        row.key = key;
        if (by == GroupBy::Node) row.op_type = e->op_type, row.provider = e->provider;
        if (by == GroupBy::Op) row.op_type = key;
      }
      ++row.count;
      micros[key] += e->dur;
      if (by == GroupBy::Scope) node_micros[key][e->node] += e->dur, node_ops[e->node] = e->op_type;
      all_us += e->dur;
      ++s.kernel_events;
      if (!e->provider.empty()) providers.insert(e->provider);
    }
  }
  s.kernel_ms = double(top_us) / 1000, s.fence_ms = double(fence_us) / 1000;
  s.providers.assign(providers.begin(), providers.end());
  for (auto& [key, row] : rows) {
    row.total_ms = double(micros[key]) / 1000;
    row.mean_ms = row.total_ms / double(row.count);
    row.pct = all_us ? 100.0 * double(micros[key]) / double(all_us) : 0;
    if (by == GroupBy::Scope) {
      const auto& nodes = node_micros[key];
      const auto top = std::max_element(nodes.begin(), nodes.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
      row.nodes = int64_t(nodes.size());
      row.top_node = top->first, row.top_op_type = node_ops[top->first], row.top_node_ms = double(top->second) / 1000;
    }
    t.rows.push_back(row);
  }
  sort_rows(t.rows);
  return t;
}

void keep_top(Table& t, size_t n) {
  if (n && t.rows.size() > n) t.rows.resize(n);
}

double CompareRow::speedup() const { return before_ms > 0 && after_ms > 0 ? before_ms / after_ms : 0; }

Comparison compare(const Table& before, const Table& after) {
  if (before.by != after.by) fail_usage("compare: both tables must be grouped the same way");
  Comparison c{before.by, before.summary, after.summary, {}};
  const double nb = std::max(1, before.summary.runs_used), na = std::max(1, after.summary.runs_used);
  std::map<std::string, CompareRow> rows;
  for (const Row& r : before.rows) {
    CompareRow& row = rows[r.key];
    row.key = r.key, row.op_type = r.op_type, row.status = '-';
    row.before_ms = r.total_ms / nb, row.before_count = double(r.count) / nb;
  }
  for (const Row& r : after.rows) {
    CompareRow& row = rows[r.key];
    row.status = row.key.empty() ? '+' : '=';
    row.key = r.key;
    if (row.op_type.empty()) row.op_type = r.op_type;
    row.after_ms = r.total_ms / na, row.after_count = double(r.count) / na;
  }
  for (auto& [key, row] : rows) c.rows.push_back(row);
  std::sort(c.rows.begin(), c.rows.end(), [](const CompareRow& a, const CompareRow& b) {
    const double ka = std::max(a.before_ms, a.after_ms), kb = std::max(b.before_ms, b.after_ms);
    return ka != kb ? ka > kb : a.key < b.key;
  });
  return c;
}

}  // namespace refeval::profile

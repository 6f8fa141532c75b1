// Per-operator, per-node and per-provider tables of the selected runs of a profile (the
// chapter's three views: total duration, call count, share), and the before/after comparison of
// two profiles. Kernel events only: fence events are counted apart, Session events give the
// wall time.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "runs.h"

namespace refeval::profile {

enum class GroupBy { Op, Node, Provider, Phase, Scope };
// "op", "node", "provider", "phase" (the runs' args.phase, `refeval generate`), "scope"; ErrorKind::Usage otherwise
GroupBy parse_group_by(const std::string& s);
const char* group_by_name(GroupBy by);  // the key column: "op_type", "node", "provider", "phase", "scope"

// The name scope of a node at `depth`: the first `depth` of the `/`-separated scopes exporters
// write before the node's own name (torch and ORT GenAI: "/model/layers.3/self_attn/q_proj/MatMul"
// is "model/layers.3" at depth 2, "model/layers.3/self_attn" at 3); a node with fewer scopes has
// all it has; one with none is "(no scope)". `depth` 0 means every scope.
std::string scope_of(std::string_view node, int depth);
// Every scope of a node's name, the node's own name left out ("/model/layers.3/MatMul" -> model,
// layers.3; empty parts skipped; none for "MatMul_12" or "/Add"): the viewer groups by the same.
std::vector<std::string> name_scopes(std::string_view node);

struct Row {
  std::string key;       // op type, node name or provider
  std::string op_type;   // by node: the node's op type; by provider: ""
  std::string provider;  // by node: the node's provider
  double total_ms = 0;
  int64_t count = 0;
  double mean_ms = 0, pct = 0;  // pct: share of the kernel time of all rows (0-100)
  // by scope: how many nodes ran in it, and the costliest of them (its time over the runs)
  int64_t nodes = 0;
  std::string top_node, top_op_type;
  double top_node_ms = 0;
};

struct Summary {
  std::string path;
  int runs_in_file = 0, runs_used = 0, first_run = 0;
  std::string phase;  // the runs' phase when they all have the same one (refeval generate's tags)
  double wall_ms = 0;          // sum of the used runs' model_run durations
  double kernel_ms = 0;        // kernel time of the main graph's nodes (bodies run inside their callers)
  double fence_ms = 0;         // fence events (ORT before 1.20)
  int64_t kernel_events = 0, fence_events = 0;
  std::vector<std::string> providers;
};

struct Table {
  GroupBy by = GroupBy::Op;
  int scope_depth = 0;  // by scope
  Summary summary;
  std::vector<Row> rows;  // by total time, largest first; ties by key
};

Table aggregate(const std::string& path, int runs_in_file, const std::vector<Run>& runs, GroupBy by, int scope_depth = 2);
// Keeps the first n rows (0: all).
void keep_top(Table& t, size_t n);

// One key on both sides, per run (the sides may have profiled different numbers of runs).
struct CompareRow {
  std::string key, op_type;
  double before_ms = 0, after_ms = 0;        // per run
  double before_count = 0, after_count = 0;  // per run
  char status = '=';                         // '=' on both sides, '-' only before (vanished), '+' only after (appeared)
  double delta_ms() const { return after_ms - before_ms; }
  double speedup() const;  // before / after; 0 when a side is 0
};

struct Comparison {
  GroupBy by = GroupBy::Op;
  Summary before, after;
  std::vector<CompareRow> rows;  // by before time then after time, largest first
};

Comparison compare(const Table& before, const Table& after);

}  // namespace refeval::profile

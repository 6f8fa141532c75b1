// `refeval report --by memory`: the memory figures of a profile recorded with `--memory` (memory.h)
// as tables, JSON and an HTML chart: the peak, the node that sets it, the tensors alive then, the
// peak per name scope, and for a generation loop the activations and KV cache per step.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "render.h"
#include "runs.h"

namespace refeval::profile {

struct MemoryRun {
  const Run* run = nullptr;
  int64_t peak_bytes = 0, inplace_peak_bytes = 0, weights_bytes = 0;
  int64_t free_list_bytes = 0, packed_weight_bytes = 0, peak_rss_bytes = 0;
  std::string peak_node;
  size_t peak_index = 0;
  struct Point {
    std::string node, op_type;
    int64_t live_bytes;
  };
  std::vector<Point> timeline;  // main-graph nodes in execution order
  struct Tensor {
    std::string name;
    int64_t bytes;
    std::string producer, last_reader;
  };
  std::vector<Tensor> at_peak;  // largest first
};

struct MemoryReport {
  std::string label;
  std::vector<MemoryRun> runs;  // the selected runs, in order
  size_t worst = 0;             // the run with the highest peak (the first of them)
  const MemoryRun& peak_run() const { return runs[worst]; }
};

// ErrorKind::Input when no selected run has memory figures (a profile made without --memory, or ORT's).
MemoryReport memory_report(const std::vector<Run>& runs, const std::string& label);

// depth: the name scopes' depth for the per-scope peaks (0: none); top: rows of the tensors at the
// peak (0: all). Text, CSV (the timeline), Markdown and JSON.
std::string render_memory(const MemoryReport& m, Format f, int depth, size_t top);
std::string render_memory_comparison(const MemoryReport& before, const MemoryReport& after, Format f, size_t top);
// The page's memory section: the timeline chart of the peak run (peak marked, each node's bytes on
// hover), the tensors alive at the peak, and per step of a generation loop its peak beside the KV cache.
std::string html_memory_section(const MemoryReport& m, size_t top);
std::string html_memory_report(const MemoryReport& m, size_t top);
std::string html_memory_comparison(const MemoryReport& before, const MemoryReport& after, size_t top);

}  // namespace refeval::profile

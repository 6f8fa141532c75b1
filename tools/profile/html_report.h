// `refeval report --format html`: one self-contained page (no script or style from the network)
// with the chapter's three views as inline-SVG bar charts (duration, count and share per op
// type), the per-node table, a drill-down of every call of each op type with its shapes and
// times, and the timeline of one run; with a second profile, both sides side by side.
#pragma once

#include <string>
#include <vector>

#include "aggregate.h"

namespace refeval::profile {

struct ProfileView {
  Table by_op, by_node;   // untrimmed
  std::vector<Run> runs;  // the selected runs
};

// top: rows shown in charts and tables (0: all).
std::string html_report(const ProfileView& view, size_t top);
// `--by scope`: time per name scope as bar charts and a table with each scope's costliest node.
std::string html_scope_report(const Table& by_scope, size_t top);
std::string html_comparison(const ProfileView& before, const ProfileView& after, const Comparison& by_op, size_t top);

// A whole page with the report's styles around `body`.
std::string report_page(const std::string& title, const std::string& body);

// The report page's styles (tools/profile/report.css), embedded at build time.
extern const char* const kReportCss;

}  // namespace refeval::profile

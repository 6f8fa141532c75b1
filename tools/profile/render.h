// Tables and comparisons as text (aligned columns), CSV, JSON and Markdown. HTML is html_report.h.
#pragma once

#include <string>
#include <vector>

#include "aggregate.h"

namespace refeval::profile {

enum class Format { Text, Csv, Json, Md, Html };
Format parse_format(const std::string& s);  // ErrorKind::Usage for an unknown name

// A table of strings: the header, then rows; numbers already formatted. Rendered as aligned text,
// CSV or Markdown (not JSON or HTML).
struct Grid {
  std::vector<std::string> header;
  std::vector<bool> numeric;  // right-aligned in text
  std::vector<std::vector<std::string>> rows;
};
std::string render_grid(const Grid& g, Format f);

// Not Html (its page needs the calls too).
std::string render_table(const Table& t, Format f);
std::string render_comparison(const Comparison& c, Format f);

// "f.json: runs 1-10 of 11 (the first, a warm-up, left out)" and the wall / kernel / fence line.
std::string summary_lines(const Summary& s);

}  // namespace refeval::profile

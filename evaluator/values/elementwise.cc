#include "refeval/elementwise.h"

#include <fmt/format.h>

namespace refeval {

Shape broadcast_shapes(const std::vector<Shape>& shapes) {
  size_t rank = 0;
  for (const auto& s : shapes) rank = std::max(rank, s.size());
  Shape out(rank, 1);
  for (const auto& s : shapes) {
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t& o = out[rank - s.size() + i];
      const int64_t d = s[i];
      if (d == o || d == 1) continue;
      if (o == 1) { o = d; continue; }
      std::vector<std::string> all;
      for (const auto& x : shapes) all.push_back(shape_to_string(x));
      fail_runtime(fmt::format("shapes {} cannot be broadcast together", fmt::join(all, ", ")));
    }
  }
  return out;
}

}  // namespace refeval

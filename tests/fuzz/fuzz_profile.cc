// libFuzzer target: arbitrary bytes as a profile file (ONNX Runtime's JSON trace), read and
// reported as `refeval report` does: runs, tables by op, node and provider, every rendering.
#include <cstdint>
#include <string>

#include "aggregate.h"
#include "html_report.h"
#include "profile_file.h"
#include "refeval/error.h"
#include "render.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace refeval::profile;
  try {
    const ProfileFile file = parse_profile(std::string(reinterpret_cast<const char*>(data), size), "fuzz.json");
    const std::vector<Run> runs = split_runs(file);
    if (runs.empty()) return 0;
    const std::vector<Run> used = select_runs(runs, {.include_warmup = true, .range = "", .phase = ""});
    for (GroupBy by : {GroupBy::Op, GroupBy::Node, GroupBy::Provider}) {
      const Table t = aggregate("fuzz.json", int(runs.size()), used, by);
      for (Format f : {Format::Text, Format::Csv, Format::Json, Format::Md}) render_table(t, f);
      render_comparison(compare(t, t), Format::Text);
    }
    const ProfileView view{aggregate("fuzz.json", int(runs.size()), used, GroupBy::Op),
                           aggregate("fuzz.json", int(runs.size()), used, GroupBy::Node), used};
    html_report(view, 10);
  } catch (const refeval::Error&) {
  }
  return 0;
}

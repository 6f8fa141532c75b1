// The runs of a profile: each model_run span with the kernel and fence events inside it
// (ort-profiling-and-fusions.md §A.4), and which of them a report uses.
#pragma once

#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "profile_file.h"

namespace refeval::profile {

struct Run {
  int index = 0;  // 0 is the first run of the file (the warm-up)
  int64_t ts = 0, dur = 0;
  std::string phase;  // args.phase of the model_run ("prefill", "decode"), "" when untagged
  int step = -1;      // args.step, -1 when untagged
  int64_t kv_cache_bytes = -1;  // args.kv_cache_bytes after the run (refeval generate), -1 when not given
  const nlohmann::ordered_json* memory = nullptr;  // args.memory (refeval profile --memory), in the file's event
  std::vector<const Event*> kernels, fences;  // in start order
  int64_t top_level_kernel_us() const;        // kernel time of the main graph's nodes (bodies run inside theirs)
};

// Every model_run of the file in start order. A file without model_run events (cut short
// before the first one was written, or a hand-made trace) is one run spanning all node events.
std::vector<Run> split_runs(const ProfileFile& file, std::vector<std::string>* warnings = nullptr);

// Which runs a report reads: `--runs a:b` (0-based, half-open, either bound optional, negative
// counts from the end as in Python), else every run but the first unless `include_warmup` or the
// runs are tagged with phases (a generation loop has no warm-up: its first run is the prefill);
// then, with `phase`, only the runs of that phase.
struct RunSelection {
  bool include_warmup = false;
  std::string range;  // "a:b", "" for the default
  std::string phase;  // "" for every phase
};
std::vector<Run> select_runs(std::vector<Run> runs, const RunSelection& selection);

// Profiles read for a report: one or more files (their runs in file order, each file's
// selection applied on its own), and the label tables show ("a.json", "a.json + b.json").
struct LoadedProfiles {
  std::deque<ProfileFile> files;  // owns the events the runs point to
  std::vector<Run> runs;
  int runs_in_files = 0;
  std::string label;
  std::vector<std::string> warnings;
};
LoadedProfiles load_profiles(const std::vector<std::string>& paths, const RunSelection& selection);
// The same for events in memory (the profile verb's own).
LoadedProfiles loaded_from(ProfileFile file, const RunSelection& selection);

}  // namespace refeval::profile

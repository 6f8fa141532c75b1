// Reading and writing ONNX Runtime profile files: a JSON array of events (§A.2). The reader takes
// what ORT 1.8 to 1.30 writes (fence events or not, node_index or graph_index, numbers as strings,
// keys in any order, files cut short by a killed process, unescaped names on a line of their own)
// and refeval's own files; a file it cannot read at all is an ErrorKind::Input error naming it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "profile_event.h"

namespace refeval::profile {

struct ProfileFile {
  std::string path;
  std::vector<Event> events;          // sorted by start time (older ORT wrote them by end time)
  std::vector<std::string> warnings;  // what was skipped and why, for the caller to report
};

ProfileFile read_profile(const std::string& path);
ProfileFile parse_profile(std::string_view text, const std::string& source);

// ORT's layout: "[", one event per line joined by ",\n", "]"; args numbers as strings.
std::string format_profile(const std::vector<Event>& events);
void write_profile(const std::string& path, const std::vector<Event>& events);

}  // namespace refeval::profile

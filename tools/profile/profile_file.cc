#include "profile_file.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "refeval/error.h"

namespace refeval::profile {
namespace {

using json = nlohmann::ordered_json;

constexpr std::string_view kKernelSuffix = "_kernel_time";
constexpr std::string_view kFenceSuffixes[] = {"_fence_before", "_fence_after"};

// ORT writes numeric args as strings ("27648"); refeval and Chrome traces write numbers.
std::optional<int64_t> as_int(const json& v) {
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (!(std::fabs(d) < 9e18)) return std::nullopt;  // NaN, infinite or beyond int64
    return int64_t(std::llround(d));
  }
  if (!v.is_string()) return std::nullopt;
  const std::string& s = v.get_ref<const std::string&>();
  int64_t out = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return out;
}

// [{"float": [1, 9, 768]}, ...]; anything else (missing, "", a string) gives no shapes.
std::vector<TypeShape> type_shapes(const json& v) {
  std::vector<TypeShape> out;
  if (!v.is_array()) return out;
  for (const json& item : v) {
    if (!item.is_object() || item.empty()) continue;
    TypeShape ts{item.begin().key(), {}};
    if (item.begin().value().is_array())
      for (const json& d : item.begin().value()) ts.shape.push_back(as_int(d).value_or(-1));
    out.push_back(std::move(ts));
  }
  return out;
}

json type_shapes_json(const std::vector<TypeShape>& shapes) {
  json out = json::array();
  for (const TypeShape& s : shapes) out.push_back(json{{s.type, s.shape}});
  return out;
}

std::string string_of(const json& v) { return v.is_string() ? v.get<std::string>() : v.is_null() ? "" : v.dump(); }

Event to_event(const json& j) {
  Event e;
  e.cat = string_of(j.value("cat", json()));
  e.name = string_of(j.value("name", json()));
  e.pid = as_int(j.value("pid", json())).value_or(0);
  e.tid = as_int(j.value("tid", json())).value_or(0);
  e.ts = as_int(j.value("ts", json())).value_or(0);
  e.dur = std::max<int64_t>(0, as_int(j.value("dur", json())).value_or(0));
  if (e.cat == "Session") e.kind = EventKind::Session;
  if (string_of(j.value("ph", json())) == "C") e.kind = EventKind::Counter;
  if (e.cat == "Node") {
    if (e.name.ends_with(kKernelSuffix)) {
      e.kind = EventKind::Kernel;
      e.node = e.name.substr(0, e.name.size() - kKernelSuffix.size());
    }
    for (std::string_view suffix : kFenceSuffixes)
      if (e.name.ends_with(suffix)) {
        e.kind = EventKind::Fence;
        e.node = e.name.substr(0, e.name.size() - suffix.size());
      }
  }
  const json args = j.value("args", json::object());
  if (!args.is_object()) return e;
  for (const auto& [key, value] : args.items()) {
    if (key == "op_name") e.op_type = string_of(value);
    else if (key == "provider") e.provider = string_of(value);
    else if (key == "node_index") e.node_index = as_int(value);
    else if (key == "graph_index") { if (!e.node_index) e.node_index = as_int(value); }
    else if (key == "input_type_shape") e.inputs = type_shapes(value);
    else if (key == "output_type_shape") e.outputs = type_shapes(value);
    else if (key == "activation_size") e.activation_size = as_int(value).value_or(0);
    else if (key == "parameter_size") e.parameter_size = as_int(value).value_or(0);
    else if (key == "output_size") e.output_size = as_int(value).value_or(0);
    else e.extra_args[key] = value;
  }
  return e;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// ORT writes one event per line: read line by line what a whole-file parse refused.
std::vector<json> events_by_line(std::string_view text, size_t& unreadable) {
  std::vector<json> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = trim(text.substr(pos, end - pos));
    pos = end + 1;
    if (line.starts_with('[')) line = trim(line.substr(1));
    if (line.ends_with(']')) line = trim(line.substr(0, line.size() - 1));
    if (line.ends_with(',')) line.remove_suffix(1);
    if (line.empty()) continue;
    json j;
    try {
      j = json::parse(line, nullptr, /*allow_exceptions=*/false);
    } catch (const json::exception&) {  // a number beyond double, even in non-throwing mode
      j = json(json::value_t::discarded);
    }
    if (j.is_discarded() || !j.is_object()) ++unreadable;
    else out.push_back(std::move(j));
  }
  return out;
}

}  // namespace

std::string shapes_to_string(const std::vector<TypeShape>& shapes) {
  std::vector<std::string> parts;
  for (const TypeShape& s : shapes) parts.push_back(fmt::format("{}[{}]", s.type, fmt::join(s.shape, "x")));
  return fmt::format("{}", fmt::join(parts, "+"));
}

ProfileFile parse_profile(std::string_view text, const std::string& source) {
  ProfileFile f{source, {}, {}};
  if (trim(text).empty()) fail_input(fmt::format("{}: empty file, not a profile", source));
  std::vector<json> objects;
  try {
    json doc = json::parse(text);
    if (doc.is_object() && doc.contains("traceEvents")) doc = doc["traceEvents"];  // Chrome's object form
    if (!doc.is_array()) fail_input(fmt::format("{}: not a profile: expected a JSON array of events", source));
    objects.assign(doc.begin(), doc.end());
  } catch (const json::exception& e) {  // parse errors, and numbers out of range (406)
    size_t unreadable = 0;
    objects = events_by_line(text, unreadable);
    if (objects.empty())
      fail_input(fmt::format("{}: not a profile: no event could be read ({})", source, e.what()));
    if (unreadable)
      f.warnings.push_back(fmt::format("{}: {} line(s) that are not complete JSON events were skipped (a file cut short, "
                                       "or a name ONNX Runtime did not escape)",
                                       source, unreadable));
  }
  size_t not_events = 0;
  for (const json& o : objects) {
    if (!o.is_object() || !o.contains("name") || !o.contains("ts")) { ++not_events; continue; }
    f.events.push_back(to_event(o));
  }
  if (not_events)
    f.warnings.push_back(fmt::format("{}: {} array element(s) without a name and a ts were skipped", source, not_events));
  if (f.events.empty()) fail_input(fmt::format("{}: no events (an empty profile)", source));
  std::stable_sort(f.events.begin(), f.events.end(), [](const Event& a, const Event& b) { return a.ts < b.ts; });
  return f;
}

ProfileFile read_profile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail_input(fmt::format("{}: cannot open the profile", path));
  std::ostringstream text;
  text << in.rdbuf();
  return parse_profile(text.str(), path);
}

std::string format_profile(const std::vector<Event>& events) {
  std::string out = "[\n";
  for (size_t i = 0; i < events.size(); ++i) {
    const Event& e = events[i];
    json args = json::object();
    if (e.kind == EventKind::Kernel || e.kind == EventKind::Fence) args["op_name"] = e.op_type;
    if (e.kind == EventKind::Kernel) {
      args["provider"] = e.provider;
      if (e.node_index) args["node_index"] = std::to_string(*e.node_index);
      args["activation_size"] = std::to_string(e.activation_size);
      args["parameter_size"] = std::to_string(e.parameter_size);
      args["output_size"] = std::to_string(e.output_size);
      args["input_type_shape"] = type_shapes_json(e.inputs);
      args["output_type_shape"] = type_shapes_json(e.outputs);
      args["thread_scheduling_stats"] = "";
    }
    for (const auto& [key, value] : e.extra_args.items()) args[key] = value;
    const json j = e.kind == EventKind::Counter  // a sample, no duration
                       ? json{{"cat", e.cat}, {"pid", e.pid}, {"tid", e.tid}, {"ts", e.ts}, {"ph", "C"}, {"name", e.name}, {"args", args}}
                       : json{{"cat", e.cat}, {"pid", e.pid}, {"tid", e.tid}, {"dur", e.dur}, {"ts", e.ts},
                              {"ph", "X"},    {"name", e.name}, {"args", args}};
    out += j.dump(-1, ' ', false, json::error_handler_t::replace);
    out += i + 1 < events.size() ? ",\n" : "\n";
  }
  return out + "]\n";
}

void write_profile(const std::string& path, const std::vector<Event>& events) {
  std::ofstream out(path, std::ios::binary);
  out << format_profile(events);
  if (!out) fail_input(fmt::format("{}: cannot write the profile", path));
}

}  // namespace refeval::profile

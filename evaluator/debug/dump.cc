#include "refeval/dump.h"

#include <cctype>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "refeval/ir.h"
#include "refeval/model_io.h"
#include "refeval/stats.h"

namespace refeval {
namespace fs = std::filesystem;
using json = nlohmann::json;
using ordered_json = nlohmann::ordered_json;  // index entries keep CLI.md's field order

namespace {

// Names longer than this are cut, so file names stay under common 255-byte limits.
constexpr size_t kMaxFileStem = 120;

const char* source_name(ValueRecord::Source s) {
  switch (s) {
    case ValueRecord::Source::Initializer: return "initializer";
    case ValueRecord::Source::Input: return "input";
    default: return "node";
  }
}

// min/max/mean are over finite elements; with none (or a non-numeric value) they are null, as
// JSON has no NaN.
ordered_json entry_json(const ValueRecord& r, const std::string& file) {
  ordered_json j = {{"name", r.name}, {"file", file}};
  j["node"] = r.node.empty() ? ordered_json(nullptr) : ordered_json(r.node);
  j["op_type"] = r.op_type.empty() ? ordered_json(nullptr) : ordered_json(r.op_type);
  for (const char* k : {"dtype", "shape", "min", "max", "mean", "nan", "inf"}) j[k] = nullptr;
  j["kind"] = r.value.kind_name();
  j["source"] = source_name(r.source);
  if (!r.value.is_tensor()) return j;
  const Tensor& t = r.value.tensor();
  j["dtype"] = dtype_numpy_name(t.dtype());
  j["shape"] = t.shape();
  const TensorStats s = tensor_stats(t, 0);
  if (!s.numeric) return j;
  j["nan"] = s.nan;
  j["inf"] = s.inf;
  if (s.count > s.nan + s.inf) {
    j["min"] = s.min;
    j["max"] = s.max;
    j["mean"] = s.mean;
  }
  return j;
}

std::string optional_string(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

std::string safe_file_name(const std::string& value_name, std::set<std::string>& used) {
  std::string stem;
  for (unsigned char c : value_name) stem += std::isalnum(c) || c == '.' || c == '-' || c == '_' ? char(c) : '_';
  if (stem.size() > kMaxFileStem) stem.resize(kMaxFileStem);
  if (stem.empty() || stem[0] == '.') stem = "v" + stem;  // no hidden files, no "." or ".."
  auto lower = [](std::string s) {
    for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
    return s;
  };
  std::string name = stem + ".pb";
  for (int k = 2; !used.insert(lower(name)).second; ++k) name = fmt::format("{}_{}.pb", stem, k);
  return name;
}

void RecordObserver::graph_begin(const GraphEvent& e) {
  if (e.depth != 0) return;
  for (const auto& [name, v] : *e.initializers) records_.push_back({name, ValueRecord::Source::Initializer, "", "", v});
  for (const auto& [name, v] : *e.inputs) records_.push_back({name, ValueRecord::Source::Input, "", "", v});
}

void RecordObserver::after_node(const NodeEvent& e, Values& outputs) {
  if (e.depth != 0) return;
  for (size_t k = 0; k < outputs.size() && k < e.node.outputs.size(); ++k)
    if (!e.node.outputs[k].empty() && !outputs[k].is_absent())
      records_.push_back({e.node.outputs[k], ValueRecord::Source::Node, e.id, e.node.op_type, outputs[k]});
}

DumpObserver::DumpObserver(std::string dir) : dir_(std::move(dir)) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec || !fs::is_directory(dir_)) fail_input(fmt::format("--dump {}: cannot create the folder", dir_));
}

void DumpObserver::write(const ValueRecord& r) {
  const std::string file = safe_file_name(r.name, used_files_);
  write_value_pb((fs::path(dir_) / file).string(), r.name, r.value);
  index_.push_back(entry_json(r, file).dump());
}

void DumpObserver::graph_begin(const GraphEvent& e) {
  if (e.depth != 0) return;
  for (const auto& [name, v] : *e.initializers) write({name, ValueRecord::Source::Initializer, "", "", v});
  for (const auto& [name, v] : *e.inputs) write({name, ValueRecord::Source::Input, "", "", v});
}

void DumpObserver::after_node(const NodeEvent& e, Values& outputs) {
  if (e.depth != 0) return;
  for (size_t k = 0; k < outputs.size() && k < e.node.outputs.size(); ++k)
    if (!e.node.outputs[k].empty() && !outputs[k].is_absent())
      write({e.node.outputs[k], ValueRecord::Source::Node, e.id, e.node.op_type, outputs[k]});
}

void DumpObserver::graph_end(const GraphEvent& e) {
  if (e.depth == 0) finish();
}

void DumpObserver::finish() {
  const std::string path = (fs::path(dir_) / "index.json").string();
  std::ofstream out(path);
  out << "[\n";
  for (size_t i = 0; i < index_.size(); ++i) out << "  " << index_[i] << (i + 1 < index_.size() ? ",\n" : "\n");
  out << "]\n";
  if (!out) fail_input(fmt::format("cannot write '{}'", path));
}

std::vector<DumpEntry> read_dump_index(const std::string& dir) {
  const std::string path = (fs::path(dir) / "index.json").string();
  if (!fs::is_directory(dir)) fail_input(fmt::format("{}: not a dump folder (no such folder)", dir));
  if (!fs::exists(path)) fail_input(fmt::format("{}: not a dump folder (no index.json)", dir));
  json j;
  try {
    j = json::parse(read_file_bytes(path));
  } catch (const json::exception& e) {
    fail_input(fmt::format("{}: not valid JSON ({})", path, e.what()));
  }
  if (!j.is_array()) fail_input(fmt::format("{}: expected a JSON array of values", path));
  std::vector<DumpEntry> entries;
  for (size_t i = 0; i < j.size(); ++i) {
    const json& e = j[i];
    if (!e.is_object() || !e.contains("name") || !e["name"].is_string() || !e.contains("file") || !e["file"].is_string())
      fail_input(fmt::format("{}: entry {} needs string fields \"name\" and \"file\"", path, i));
    DumpEntry d{e["name"], e["file"], optional_string(e, "node"), optional_string(e, "op_type"),
                optional_string(e, "kind"), optional_string(e, "source")};
    if (d.file.empty() || fs::path(d.file).is_absolute() || d.file.find("..") != std::string::npos)
      fail_input(fmt::format("{}: entry '{}': file '{}' must be a plain path inside the folder", path, d.name, d.file));
    entries.push_back(std::move(d));
  }
  return entries;
}

std::vector<ValueRecord> read_dump(const std::string& dir) {
  std::vector<ValueRecord> records;
  for (const DumpEntry& d : read_dump_index(dir)) {
    ValueType declared;
    declared.kind = d.kind == "sequence" ? ValueType::Kind::Sequence
                    : d.kind == "optional" ? ValueType::Kind::Optional
                    : d.kind == "map" ? ValueType::Kind::Map
                    : ValueType::Kind::Tensor;
    ValueRecord r;
    r.name = d.name;
    r.node = d.node;
    r.op_type = d.op_type;
    r.source = d.source == "initializer" ? ValueRecord::Source::Initializer
               : d.source == "input" || (d.source.empty() && d.node.empty()) ? ValueRecord::Source::Input
               : ValueRecord::Source::Node;
    r.value = read_value_file((fs::path(dir) / d.file).string(), &declared);
    records.push_back(std::move(r));
  }
  return records;
}

}  // namespace refeval

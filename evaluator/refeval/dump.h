// Recording and dumping every value of a run (CLI.md, Dump folders), and reading dumps back so
// `refeval compare` can diff a model against a folder another runtime wrote.
//
//   DIR/index.json  [{"name", "file", "node", "op_type", "kind", "dtype", "shape",
//                     "min", "max", "mean", "nan", "inf"}, ...]   in execution order
//   DIR/<safe name>.pb   one value file per entry (.npy files are read too)
//
// Only the main graph's values are recorded: a body runs once per iteration or branch, so its
// values have no single identity; they are visible through the body's caller outputs instead.
// Initializers and feeds come first, with "node" and "op_type" null.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "refeval/observer.h"

namespace refeval {

// One value of the main graph and where it came from.
struct ValueRecord {
  enum class Source { Initializer, Input, Node };
  std::string name;
  Source source = Source::Node;
  std::string node;     // qualified node id (NodeEvent::id); empty for initializers and inputs
  std::string op_type;  // empty for initializers and inputs
  Value value;
};

// Collects every main-graph value in execution order. Values are shared handles, so recording
// costs no copies; it keeps the values alive until the recorder is cleared.
class RecordObserver : public Observer {
 public:
  void graph_begin(const GraphEvent& e) override;
  void after_node(const NodeEvent& e, Values& outputs) override;
  const std::vector<ValueRecord>& records() const { return records_; }

 private:
  std::vector<ValueRecord> records_;
};

// A dump index entry; what a dump holds for one value.
struct DumpEntry {
  std::string name;
  std::string file;     // relative to the dump folder
  std::string node;     // empty: an initializer or an input
  std::string op_type;
  // Extensions of CLI.md's layout, optional when reading:
  std::string kind;     // "tensor" (default), "sequence", "optional" or "map": the file's message
  std::string source;   // "initializer", "input" or "node"; default "node" if a node is named, else "input"
};

// Writes each main-graph value to DIR as it is produced, and DIR/index.json at the end of the
// run. If a run fails midway, call finish() to keep what was dumped up to the failure.
class DumpObserver : public Observer {
 public:
  explicit DumpObserver(std::string dir);  // creates DIR; ErrorKind::Input if it cannot
  void graph_begin(const GraphEvent& e) override;
  void after_node(const NodeEvent& e, Values& outputs) override;
  void graph_end(const GraphEvent& e) override;
  void finish();  // writes index.json (again); idempotent
  size_t size() const { return index_.size(); }

 private:
  void write(const ValueRecord& r);
  std::string dir_;
  std::set<std::string> used_files_;  // lower-cased, so names stay unique on case-blind disks
  std::vector<std::string> index_;    // one JSON object per value, serialized
};

// A file name from a value name: characters other than [A-Za-z0-9._-] become '_', long names are
// cut; `used` (lower-cased names) makes it unique by a "_2", "_3"... suffix.
std::string safe_file_name(const std::string& value_name, std::set<std::string>& used);

// Reads DIR/index.json (ErrorKind::Input naming the folder if it is missing or malformed).
std::vector<DumpEntry> read_dump_index(const std::string& dir);
// Reads every value of a dump in index order.
std::vector<ValueRecord> read_dump(const std::string& dir);

}  // namespace refeval

// What every verb that runs a model shares (CLI.md): the input options, feed generation, the
// evaluator with plugins, and exit codes.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "refeval/evaluator.h"
#include "refeval/limits.h"
#include "refeval/registry.h"
#include "log.h"

namespace refeval::cli {

enum ExitCode { kOk = 0, kEvalError = 1, kUsageError = 2, kCheckFailed = 3 };

struct GlobalOptions {
  std::vector<std::string> custom_ops;
  std::string max_memory;  // "8G", "512M", "0" (no cap); default 80% of physical memory
  uint64_t max_loop_iterations = kDefaultLoopIterationCap;  // 0: no limit
  int threads = 1;  // --threads: 0 = every core (refeval/threads.h)
  std::string isa;  // --isa: "" = the best this CPU and build run (refeval/isa.h)
  bool emulate_accuracy_level = false;  // --emulate-accuracy-level (refeval/numerics.h)
  std::string log_level = "info";
  bool quiet = false;  // -q: errors only
};

// Applies --max-memory, --max-loop-iterations, --threads, --isa and --emulate-accuracy-level
// (refeval/tensor.h, limits.h, threads.h, isa.h, numerics.h).
void apply_limits(const GlobalOptions& g);

// The registry every evaluator of this process uses: the built-ins plus --custom-ops libraries.
const Registry& registry(const GlobalOptions& g);

struct InputOptions {
  std::vector<std::string> inputs;  // NAME=FILE
  std::string inputs_dir;
  uint64_t seed = 0;
  std::vector<std::string> dims;   // NAME=V
  std::vector<std::string> fills;  // NAME=VALUE
  void add_to(CLI::App* app);
};

// load_model (refeval/model_io.h) with a progress note while a large model loads.
inline constexpr uintmax_t kLargeModelBytes = 64 << 20;
Model open_model(const std::string& path);

// Feeds for every model input: from files, constants, or generated reproducibly.
std::map<std::string, Value> make_feeds(const ReferenceEvaluator& ev, const InputOptions& opt);
// `base` with its inputs read from folder `dir` (--input-set): NAME.npy files, else input_K.pb.
InputOptions input_set_options(const InputOptions& base, const std::string& dir);

// Writes a verb's result to `path`, or to stdout when `path` is empty; says where at info level.
void write_output(const std::string& path, const std::string& text, const std::string& what);

// Splits "a,b,c" (empty parts dropped).
std::vector<std::string> split_list(const std::string& s);
// Splits "NAME=VALUE"; ErrorKind::Usage naming `option` otherwise.
std::pair<std::string, std::string> split_assignment(const std::string& s, const char* option);

}  // namespace refeval::cli

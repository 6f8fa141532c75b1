// refeval [GLOBAL] VERB [OPTIONS] ARGS. `refeval MODEL.onnx ...` means `refeval run MODEL.onnx ...`.
// Every error is one line on stderr, "refeval: error: ...", and maps to the exit codes of CLI.md.
#include <malloc.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>
#include <string>

#include <fmt/format.h>

#include "verbs.h"

namespace {

using namespace refeval::cli;

int exit_code_of(const refeval::Error& e) {
  return e.kind() == refeval::ErrorKind::Runtime ? kEvalError : kUsageError;
}

// `refeval [GLOBAL] MODEL.onnx ...` means `refeval [GLOBAL] run MODEL.onnx ...`: the first
// argument after the global options names a model instead of a verb.
// The position of the verb (or of the model standing for `run`): the first argument after the
// global options.
size_t verb_position(const std::vector<std::string>& args) {
  static const std::set<std::string> with_value = {"--custom-ops", "--max-memory", "--max-loop-iterations", "--log-level", "--threads", "--isa"};
  size_t i = 0;
  while (i < args.size() && args[i].starts_with('-')) i += with_value.count(args[i]) ? 2 : 1;
  return i;
}

void insert_implicit_run(std::vector<std::string>& args) {
  const size_t i = verb_position(args);
  if (i < args.size() && args[i].size() > 5 && args[i].ends_with(".onnx")) args.insert(args.begin() + long(i), "run");
}

// On a VM a page fault costs 10-15 microseconds, and nearly every page refeval first touches is a
// fault: loading GPT-2 small (650 MB) took 261,000 of them, 4.3 s of a 4.6 s run, and `accuracy`,
// which keeps every value of several runs of the model, spent two thirds of its time in them.
// glibc puts its heap and large blocks on 2 MB pages only when told before main (GLIBC_TUNABLES),
// so these invocations start themselves again once with glibc.malloc.hugetlb=1 and blocks up to
// 32 MB from the heap: GPT-2 small's run 4.9 s -> 1.1 s, the repo's GPT-2 accuracy profile 0.47 ->
// 0.1-0.2 s. The restart costs 15 ms, more than a small model saves (a normal run reuses its
// buffers), so it is for `accuracy` and for models of 64 MB or more (the files named on the
// command line, an .onnx file's directory counted for its external data). A user's own
// glibc.malloc.hugetlb setting is left alone; if the exec fails, refeval runs as it is.
uintmax_t model_bytes(const std::vector<std::string>& args) {
  namespace fs = std::filesystem;
  uintmax_t bytes = 0;
  std::error_code ec;
  for (const std::string& a : args) {
    const fs::path p(a);
    if (!fs::is_regular_file(p, ec)) continue;
    if (p.extension() != ".onnx") {
      bytes += fs::file_size(p, ec);
      continue;
    }
    int seen = 0;  // the model and the data files beside it, not its neighbours' .onnx files
    for (const auto& e : fs::directory_iterator(p.has_parent_path() ? p.parent_path() : fs::path("."), ec)) {
      if (++seen > 1000) break;
      if (e.is_regular_file(ec) && (e.path() == p || e.path().extension() != ".onnx")) bytes += e.file_size(ec);
    }
  }
  return bytes;
}

void restart_with_huge_pages(char** argv) {
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  const std::string had = tunables ? tunables : "";
  if (had.find("glibc.malloc.hugetlb") != std::string::npos) return;  // the user's, or restarted already
  const std::string wanted = "glibc.malloc.hugetlb=1:glibc.malloc.mmap_threshold=33554432";
  setenv("GLIBC_TUNABLES", (had.empty() ? wanted : had + ":" + wanted).c_str(), 1);
  execv("/proc/self/exe", argv);
  if (tunables) setenv("GLIBC_TUNABLES", had.c_str(), 1);
  else unsetenv("GLIBC_TUNABLES");
}

}  // namespace

int main(int argc, char** argv) {
  // glibc hands the top of its heap back to the system once 128 KB of it are free and takes it
  // again, a page fault per page, on the next run: tensors between the small lists (4 KB) and
  // the buffer cache (256 KB) paid that on every --repeat run (a one-node FastGelu with a 98 KB
  // output: 0.073 ms median, 0.031 with this). 16 MB of slack stay at the top.
  mallopt(M_TOP_PAD, 16 << 20);
  // Setting M_TOP_PAD also freezes glibc's mmap threshold at 128 KB (it no longer rises as large
  // blocks are freed), so every tensor between 128 and 256 KB was a fresh mapping on every run,
  // each page a fault: ResNet-18's 196 KB activations made a Relu take 0.65 ms. Blocks up to
  // 32 MB come from the heap and are reused.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  init_logging();
  std::vector<std::string> args(argv + 1, argv + argc);
  if (const size_t verb = verb_position(args);
      verb < args.size() && (args[verb] == "accuracy" || model_bytes(args) >= (uintmax_t(64) << 20)))
    restart_with_huge_pages(argv);
  insert_implicit_run(args);

  CLI::App app{"refeval: a reference evaluator and graph debugger for ONNX models", "refeval"};
  app.set_version_flag("--version", std::string("refeval ") + REFEVAL_VERSION);
  app.require_subcommand(1);
  app.fallthrough();
  GlobalOptions global;
  app.add_option("--custom-ops", global.custom_ops, "LIB: load custom operators from a shared library (repeatable)");
  app.add_option("--max-memory", global.max_memory, "SIZE: refuse any tensor larger than this (e.g. 8G; 0: no cap; default 80% of RAM)");
  app.add_option("--max-loop-iterations", global.max_loop_iterations,
                 fmt::format("N: refuse a Loop that would run more iterations (0: no limit; default {})",
                             refeval::kDefaultLoopIterationCap));

  app.add_option("--threads", global.threads, "N: threads for matrix products, convolutions and large elementwise ops (default 1; 0: every core); results do not depend on it")
      ->check(CLI::Range(0, 1024));
  app.add_option("--isa", global.isa,
                 "avx512, avx2 or generic: the instruction set of refeval's own kernels (default: the best this CPU and build run; "
                 "also REFEVAL_ISA); products give the same bits on each");
  app.add_flag("--emulate-accuracy-level", global.emulate_accuracy_level,
               "MatMulNBits nodes with accuracy_level 4 reproduce ONNX Runtime's CPU int8 path (A quantized to int8 per block) instead of the exact math");
  app.add_option("--log-level", global.log_level, "LEVEL: diagnostics shown on stderr: trace, debug, info (default), warning, error, off");
  app.add_flag("-q,--quiet", global.quiet, "errors only on stderr (no warnings, notes or progress)");

  struct Entry { const char* name; const char* help; std::unique_ptr<Verb> verb; CLI::App* sub = nullptr; };
  std::vector<Entry> verbs;
  verbs.push_back({"run", "run a model and print its trace and outputs", make_run_verb()});
  verbs.push_back({"test", "run ONNX backend test folders and compare with their expected outputs", make_test_verb()});
  verbs.push_back({"ops", "list the operator registry", make_ops_verb()});
  verbs.push_back({"node", "evaluate one node, its inputs from files or from the model; --extract a one-node model", make_node_verb()});
  verbs.push_back({"compare", "compare two models, or a model and a dump folder, value by value", make_compare_verb()});
  verbs.push_back({"debug", "step through a model: breakpoints, values, set, NaN watch", make_debug_verb()});
  verbs.push_back({"check-fusion", "check a fused operator or model against its unfused form", make_check_fusion_verb()});
  verbs.push_back({"profile", "time every node of W warm-up and N runs; write ONNX Runtime's profile JSON and print per-op totals", make_profile_verb()});
  verbs.push_back({"report", "per-op, per-node or per-provider tables, charts and comparisons of profile files (ORT's or refeval's)", make_report_verb()});
  verbs.push_back({"optimize", "fold constants, remove redundant nodes and fuse as ONNX Runtime does; --verify proves it equivalent", make_optimize_verb()});
  verbs.push_back({"show", "the graph as ONNX text, Graphviz DOT/SVG or an offline HTML viewer with profile heat and diff", make_show_verb()});
  verbs.push_back({"generate", "greedy generation with a decoder's KV cache: prefill + decode steps, time per phase, KV memory, --profile by phase", make_generate_verb()});
  verbs.push_back({"reduce", "shrink a failing model (NaN, a mismatch with a dump, a command, an error) to a small subgraph that still fails", make_reduce_verb()});
  verbs.push_back({"accuracy", "each node's error against a float64 oracle of the model: accumulated, local, contribution to the outputs", make_accuracy_verb()});
  verbs.push_back({"tokenize", "a Hugging Face tokenizer.json: text to token ids, or ids back to text (--decode)", make_tokenize_verb()});
  verbs.push_back({"quantize", "int4 (MatMulNBits), dynamic int8 (MatMulInteger) or float16 models as ONNX Runtime's tools write them, with the loss and the time measured", make_quantize_verb()});
  for (auto& v : verbs) {
    v.sub = app.add_subcommand(v.name, v.help);
    v.verb->setup(v.sub);
  }

  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    print_error(e.what());
    return kUsageError;
  }
  try {
    set_log_level(global.quiet ? "error" : global.log_level);
    apply_limits(global);
    for (auto& v : verbs)
      if (v.sub->parsed()) return v.verb->execute(global);
  } catch (const refeval::Error& e) {
    print_error(e.what());
    return exit_code_of(e);
  } catch (const std::exception& e) {
    print_error(e.what());
    return kEvalError;
  }
  return kOk;
}

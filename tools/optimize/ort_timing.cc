#include "ort_timing.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include <fmt/format.h>

#include "refeval/error.h"
#include "refeval/model_io.h"

extern char** environ;

namespace refeval::optimize {
namespace fs = std::filesystem;
namespace {

fs::path ort_dir() {
  if (const char* dir = std::getenv("REFEVAL_ORT_DIR"); dir && *dir) return dir;
  return REFEVAL_ORT_DIR;
}

std::string first_line(const fs::path& file) {
  std::ifstream in(file);
  std::string line;
  std::getline(in, line);
  return line;
}

// time_pair.js's own one-line error comes last, after whatever ORT logged.
std::string last_line(const fs::path& file) {
  std::ifstream in(file);
  std::string line, last;
  while (std::getline(in, line))
    if (!line.empty()) last = line;
  return last;
}

// Runs `argv` with stdout and stderr in files under `dir`; returns its exit status (-1: not started).
int run(std::vector<std::string> argv, const std::vector<std::string>& env, const fs::path& dir) {
  std::vector<char*> args, envp;
  for (std::string& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  std::vector<std::string> owned = env;
  for (char** e = environ; *e; ++e) owned.emplace_back(*e);
  for (std::string& e : owned) envp.push_back(e.data());
  envp.push_back(nullptr);
  posix_spawn_file_actions_t files;
  posix_spawn_file_actions_init(&files);
  const std::string out = (dir / "stdout").string(), err = (dir / "stderr").string();
  posix_spawn_file_actions_addopen(&files, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&files, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  const int spawned = posix_spawnp(&pid, args[0], &files, nullptr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&files);
  if (spawned != 0) return -1;
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

OrtTiming time_in_ort(const std::string& original, const std::string& optimized, const std::map<std::string, Value>& feeds,
                      const OrtTimingOptions& options) {
  const fs::path scripts = ort_dir();
  if (!fs::exists(scripts / "time_pair.js") || !fs::is_directory(scripts / "node_modules" / "onnxruntime-node"))
    fail_usage(fmt::format("--benchmark-with-ort: onnxruntime-node not found in '{}' (run npm install there, as scripts/install-deps.sh does, "
                           "or set REFEVAL_ORT_DIR to a folder with time_pair.js and node_modules/onnxruntime-node)",
                           scripts.string()));
  // ORT litters $TMPDIR; its files and the feeds go to a folder of ours, removed afterwards.
  const fs::path dir = fs::temp_directory_path() / fmt::format("refeval_ort_{}", getpid());
  fs::create_directories(dir);
  struct Cleanup {
    fs::path dir;
    ~Cleanup() { std::error_code ignored; fs::remove_all(dir, ignored); }
  } cleanup{dir};
  std::vector<std::string> argv = {"node", (scripts / "time_pair.js").string(), fs::absolute(original).string(),
                                   fs::absolute(optimized).string(), std::to_string(options.repeat), std::to_string(options.rounds)};
  int k = 0;
  for (const auto& [name, value] : feeds) {
    const fs::path file = dir / fmt::format("feed_{}.npy", k++);
    write_npy(file.string(), value.tensor());
    argv.push_back(name + "=" + file.string());
  }
  const int status = run(argv, {fmt::format("ORT_THREADS={}", options.threads), "TMPDIR=" + dir.string()}, dir);
  if (status == -1) fail_usage("--benchmark-with-ort: node was not found (install nodejs, as scripts/install-deps.sh does)");
  if (status != 0) fail_runtime(fmt::format("--benchmark-with-ort: ONNX Runtime failed: {}", last_line(dir / "stderr")));
  OrtTiming t;
  std::istringstream line(first_line(dir / "stdout"));
  if (!(line >> t.original_ms >> t.optimized_ms >> t.ratio >> t.max_abs_diff >> t.max_abs))
    fail_runtime(fmt::format("--benchmark-with-ort: time_pair.js printed '{}', not five numbers", line.str()));
  return t;
}

}  // namespace refeval::optimize

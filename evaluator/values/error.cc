#include "refeval/error.h"

#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace refeval {
namespace {

// REFEVAL_ERROR_LOG: every error message constructed anywhere (CLI runs, unit tests, fuzz replays)
// appended to one file, one per line, for tests/evaluator/errors.py, which checks that each
// message in the code is produced by a test. Read once; unset costs one branch per error.
void log_message(const std::string& message) {
  static const char* const path = std::getenv("REFEVAL_ERROR_LOG");
  if (!path || !*path) return;
  std::string line;
  line.reserve(message.size() + 1);
  for (char c : message) line += c == '\n' ? std::string("\\n") : std::string(1, c);  // one message, one line
  line += '\n';
  static std::mutex mutex;  // kernels may fail on several threads at once
  std::lock_guard lock(mutex);
  if (std::FILE* f = std::fopen(path, "a")) {
    std::fwrite(line.data(), 1, line.size(), f);
    std::fclose(f);
  }
}

}  // namespace

Error::Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) { log_message(message); }

}  // namespace refeval

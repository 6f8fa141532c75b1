// Diagnostics (CLI.md): results and traces go to stdout; errors, warnings, notes and progress go
// to stderr through one spdlog logger, as "refeval: error: ...", "refeval: warning: ...". The
// global --log-level (trace, debug, info, warning, error, off; default info) chooses what is
// shown and -q shows errors only.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>

namespace refeval::cli {

// Installs the stderr logger as spdlog's default (level info). Call once, first thing.
void init_logging();
// --log-level NAME; ErrorKind::Usage for an unknown name.
void set_log_level(const std::string& name);

// Logs an error on one line whatever the message holds: names from a corrupt file may contain
// control characters, which are escaped.
void print_error(const std::string& message);

// A progress line on stderr for long work ("test 345/1802: test_name", "loading gpt2.onnx
// (653 MB)"), drawn only when stderr is a terminal and info messages are shown, redrawn at most
// ten times a second, erased when the work ends and before every log message. A verb that
// prints results while work goes on calls clear() first, so the two never share a line.
class Progress {
 public:
  // total 0: a phase without steps (the line shows `task` alone while it lasts).
  Progress(std::string task, size_t total = 0);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  // One more item begins (`item` names it, e.g. the test).
  void step(std::string_view item = {});
  // Erases the line shown, if any; the next step draws it again.
  static void clear();

 private:
  void draw(std::string_view item);
  std::string task_;
  size_t total_, done_ = 0;
  std::chrono::steady_clock::time_point last_draw_{};
};

}  // namespace refeval::cli

#include "log.h"

#include <cstdio>
#include <memory>
#include <mutex>

#include <unistd.h>

#include <fmt/format.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include "refeval/error.h"

namespace refeval::cli {
namespace {

// Whether a progress line is on the terminal now (one at a time: verbs run one task).
bool line_shown = false;

void erase_line() {
  if (!line_shown) return;
  std::fputs("\r\033[K", stderr);
  line_shown = false;
}

// Writes log messages to stderr, after stdout's pending results (so a terminal shows both in
// order) and after erasing a progress line.
class StderrSink final : public spdlog::sinks::base_sink<std::mutex> {
 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t text;
    formatter_->format(msg, text);
    std::fflush(stdout);
    erase_line();
    std::fwrite(text.data(), 1, text.size(), stderr);
  }
  void flush_() override { std::fflush(stderr); }
};

bool progress_enabled() { return isatty(STDERR_FILENO) && spdlog::should_log(spdlog::level::info); }

}  // namespace

void init_logging() {
  auto logger = std::make_shared<spdlog::logger>("refeval", std::make_shared<StderrSink>());
  logger->set_pattern("%n: %l: %v");
  logger->set_level(spdlog::level::info);
  logger->flush_on(spdlog::level::trace);
  spdlog::set_default_logger(std::move(logger));
}

void set_log_level(const std::string& name) {
  const spdlog::level::level_enum level = spdlog::level::from_str(name);
  // from_str answers "off" for every name it does not know.
  if (level == spdlog::level::off && name != "off")
    fail_usage(fmt::format("--log-level {}: expected trace, debug, info, warning, error or off", name));
  spdlog::set_level(level);
}

void print_error(const std::string& message) {
  std::string line;
  for (unsigned char c : message) line += c < 0x20 || c == 0x7f ? fmt::format("\\x{:02x}", c) : std::string(1, char(c));
  spdlog::error(line);
}

Progress::Progress(std::string task, size_t total) : task_(std::move(task)), total_(total) {
  if (total_ == 0) draw({});
}

Progress::~Progress() {
  if (progress_enabled()) erase_line();
}

void Progress::step(std::string_view item) {
  ++done_;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  draw(item);
}

void Progress::clear() { erase_line(); }

void Progress::draw(std::string_view item) {
  if (!progress_enabled()) return;
  std::string text = total_ ? fmt::format("{} {}/{}", task_, done_, total_) : task_;
  if (!item.empty()) text += fmt::format(": {}", item);
  if (text.size() > 78) text.resize(78);  // one line of a narrow terminal: \r must return to its start
  std::fflush(stdout);
  fmt::print(stderr, "\r\033[K{}", text);
  std::fflush(stderr);
  line_shown = true;
}

}  // namespace refeval::cli

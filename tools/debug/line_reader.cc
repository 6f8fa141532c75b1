#include "debug/line_reader.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>

#include <editline/readline.h>
#include <fmt/format.h>

#include "refeval/error.h"

namespace refeval::cli {
namespace {

class TerminalReader final : public LineReader {
 public:
  TerminalReader() { using_history(); }
  std::optional<std::string> read(const std::string& prompt) override {
    std::fflush(stdout);
    char* raw = nullptr;
    for (;;) {
      errno = 0;
      raw = readline(prompt.c_str());
      if (raw || errno != EINTR) break;
      fmt::print("\n");  // Ctrl-C at the prompt drops the line, as in a shell
    }
    if (!raw) return std::nullopt;
    std::string line(raw);
    std::free(raw);
    if (line.find_first_not_of(" \t") != std::string::npos) add_history(line.c_str());
    return line;
  }
  bool interactive() const override { return true; }
};

class StreamReader final : public LineReader {
 public:
  explicit StreamReader(std::istream& in) : in_(in) {}
  std::optional<std::string> read(const std::string& prompt) override {
    std::string line;
    if (!std::getline(in_, line)) return std::nullopt;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    fmt::print("{}{}\n", prompt, line);
    std::fflush(stdout);
    return line;
  }
  bool interactive() const override { return false; }

 private:
  std::istream& in_;
};

class FileReader final : public LineReader {
 public:
  explicit FileReader(const std::string& path) : file_(path), lines_(file_) {
    if (!file_) fail_usage(fmt::format("--commands {}: cannot read the file", path));
  }
  std::optional<std::string> read(const std::string& prompt) override { return lines_.read(prompt); }
  bool interactive() const override { return false; }

 private:
  std::ifstream file_;
  StreamReader lines_;
};

}  // namespace

std::unique_ptr<LineReader> make_terminal_reader() { return std::make_unique<TerminalReader>(); }
std::unique_ptr<LineReader> make_stdin_reader() { return std::make_unique<StreamReader>(std::cin); }
std::unique_ptr<LineReader> make_file_reader(const std::string& path) { return std::make_unique<FileReader>(path); }

}  // namespace refeval::cli

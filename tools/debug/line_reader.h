// Where the commands of `refeval debug` come from: a terminal, with line editing and history
// (libedit), or plain lines from a pipe or a --commands file.
#pragma once

#include <memory>
#include <optional>
#include <string>

namespace refeval::cli {

class LineReader {
 public:
  virtual ~LineReader() = default;
  // The next line, without its newline; nullopt at the end of the input.
  virtual std::optional<std::string> read(const std::string& prompt) = 0;
  // A person typing: a mistyped command is theirs to retype, not a failed script.
  virtual bool interactive() const = 0;
};

// stdin is a terminal: libedit's editing keys and history.
std::unique_ptr<LineReader> make_terminal_reader();
// stdin is a pipe or a file: each command is echoed after the prompt, so the output reads like
// the session a person would have had.
std::unique_ptr<LineReader> make_stdin_reader();
// A --commands file; ErrorKind::Usage if it cannot be read.
std::unique_ptr<LineReader> make_file_reader(const std::string& path);

}  // namespace refeval::cli

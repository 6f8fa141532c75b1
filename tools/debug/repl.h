// The command interpreter of `refeval debug`: reads commands, drives a Debugger (refeval/debugger.h)
// and prints what a person wants to see. It is one client of the Debugger API; an IDE is another.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "debug/line_reader.h"
#include "refeval/debugger.h"
#include "refeval/evaluator.h"

namespace refeval::cli {

class Repl {
 public:
  Repl(ReferenceEvaluator& ev, std::map<std::string, Value> feeds, LineReader& reader);
  // Reads and runs commands until `quit` or the end of the input; returns the exit code:
  // 1 if the last run failed in an operator, else 2 if a script (not a person at a terminal)
  // gave a command that was refused, else 0.
  int session();

  using Args = std::vector<std::string>;
  struct Command {
    const char* name;
    const char* alias;
    const char* usage;
    const char* help;
    // An action ends the prompt: it starts the run, or resumes it from a stop.
    std::optional<DebugAction> (Repl::*handler)(const Args&);
  };

 private:
  static const std::vector<Command>& commands();
  static const Command* find_command(const std::string& word);
  DebugAction prompt();  // commands until one that runs the model; Quit at the end of the input
  std::optional<DebugAction> execute(const std::string& line);
  bool run_model(DebugAction first);  // false when the user quit during the run
  DebugAction on_stop(const Stop& stop);

  std::optional<DebugAction> cmd_help(const Args&);
  std::optional<DebugAction> cmd_break(const Args&);
  std::optional<DebugAction> cmd_delete(const Args&);
  std::optional<DebugAction> cmd_run(const Args&);
  std::optional<DebugAction> cmd_step(const Args&);
  std::optional<DebugAction> cmd_next(const Args&);
  std::optional<DebugAction> cmd_continue(const Args&);
  std::optional<DebugAction> cmd_finish(const Args&);
  std::optional<DebugAction> cmd_print(const Args&);
  std::optional<DebugAction> cmd_info(const Args&);
  std::optional<DebugAction> cmd_list(const Args&);
  std::optional<DebugAction> cmd_set(const Args&);
  std::optional<DebugAction> cmd_watch(const Args&);
  std::optional<DebugAction> cmd_quit(const Args&);

  std::optional<DebugAction> resume(DebugAction action, const char* name);
  void info_node() const;
  void list_around(const std::string& id) const;

  ReferenceEvaluator& ev_;
  std::map<std::string, Value> feeds_;
  LineReader& reader_;
  Debugger dbg_;
  bool running_ = false;
  int run_failure_ = 0;      // exit code of the last run's error; 0 if it ended well
  int refused_commands_ = 0;
  std::string last_line_;    // an empty line repeats step or next
};

}  // namespace refeval::cli

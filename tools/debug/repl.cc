#include "debug/repl.h"

#include <csignal>
#include <sstream>

#include <fmt/format.h>

#include "cli_common.h"
#include "debug/print.h"
#include "refeval/address.h"
#include "refeval/format.h"
#include "refeval/model_io.h"

namespace refeval::cli {
namespace {

constexpr const char* kPrompt = "(refeval) ";
constexpr size_t kListBefore = 4, kListAfter = 5;

std::vector<std::string> split_words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

// Ctrl-C during a run stops it at the next node, as in gdb, instead of ending the session.
Debugger* g_interruptible = nullptr;
extern "C" void on_sigint(int) {
  if (g_interruptible) g_interruptible->interrupt();
}

class CtrlCStopsTheRun {
 public:
  explicit CtrlCStopsTheRun(Debugger& dbg) {
    g_interruptible = &dbg;
    struct sigaction sa {};
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &previous_);
  }
  ~CtrlCStopsTheRun() {
    sigaction(SIGINT, &previous_, nullptr);
    g_interruptible = nullptr;
  }

 private:
  struct sigaction previous_ {};
};

void expect_args(const Repl::Args& args, size_t min, size_t max, const char* usage) {
  if (args.size() < min || args.size() > max) fail_usage(fmt::format("usage: {}", usage));
}

}  // namespace

const std::vector<Repl::Command>& Repl::commands() {
  static const std::vector<Command> table = {
      {"break", "b", "break ADDR", "stop before the node(s) ADDR names: NAME, #I, op:TYPE, PARENT/ATTR/NODE", &Repl::cmd_break},
      {"delete", "d", "delete [N]", "delete breakpoint N, or every breakpoint", &Repl::cmd_delete},
      {"run", "r", "run", "start the run; it stops at breakpoints and watches", &Repl::cmd_run},
      {"step", "s", "step", "run to the next node, entering bodies (If, Loop, Scan, functions)", &Repl::cmd_step},
      {"next", "n", "next", "run to the next node of this graph, running bodies through", &Repl::cmd_next},
      {"continue", "c", "continue", "run to the next breakpoint or watch, or the end", &Repl::cmd_continue},
      {"finish", "fin", "finish", "run until the current body is done (stops after its If/Loop/Scan node) or the graph ends",
       &Repl::cmd_finish},
      {"print", "p", "print VALUE [full|stats]", "a value computed so far: summary and first values, every value, or statistics",
       &Repl::cmd_print},
      {"info", "i", "info node|inputs|outputs|breaks|values", "the current node, its input or output values, the breakpoints, "
       "the values of the current graph", &Repl::cmd_info},
      {"list", "l", "list [ADDR]", "the nodes around the current one (=> current, * breakpoint), or around ADDR", &Repl::cmd_list},
      {"set", "", "set VALUE FILE", "replace a value with the contents of a .pb or .npy file", &Repl::cmd_set},
      {"watch", "", "watch nan|off", "stop after a node where NaN or Inf appear", &Repl::cmd_watch},
      {"help", "h", "help [COMMAND]", "this list, or one command", &Repl::cmd_help},
      {"quit", "q", "quit", "leave (abandoning the run)", &Repl::cmd_quit},
  };
  return table;
}

const Repl::Command* Repl::find_command(const std::string& word) {
  for (const auto& c : commands())
    if (word == c.name || (*c.alias && word == c.alias)) return &c;
  return nullptr;
}


Repl::Repl(ReferenceEvaluator& ev, std::map<std::string, Value> feeds, LineReader& reader)
    : ev_(ev), feeds_(std::move(feeds)), reader_(reader), dbg_(ev.model()) {
  dbg_.on_stop([this](Debugger&, const Stop& stop) { return on_stop(stop); });
  ev_.add_observer(&dbg_);
}

int Repl::session() {
  std::optional<CtrlCStopsTheRun> ctrl_c;
  if (reader_.interactive()) ctrl_c.emplace(dbg_);
  const Model& m = ev_.model();
  fmt::print("{}: {} nodes, inputs {}. Type help for the commands, run or step to start.\n", m.path, m.graph.nodes.size(),
             fmt::join(ev_.input_names(), ", "));
  for (DebugAction action = prompt(); action != DebugAction::Quit; action = prompt())
    if (!run_model(action)) break;
  std::fflush(stdout);
  if (run_failure_) return run_failure_;
  return refused_commands_ > 0 && !reader_.interactive() ? kUsageError : kOk;
}

DebugAction Repl::prompt() {
  while (auto line = reader_.read(kPrompt))
    if (auto action = execute(*line)) return *action;
  if (reader_.interactive()) fmt::print("\n");
  return DebugAction::Quit;
}

std::optional<DebugAction> Repl::execute(const std::string& typed) {
  std::string line = typed;
  if (line.find_first_not_of(" \t") == std::string::npos) {
    if (last_line_.empty() || !reader_.interactive()) return std::nullopt;
    line = last_line_;  // gdb's habit: Enter repeats a step or a next
  }
  Args words = split_words(line);
  if (words.empty() || words[0][0] == '#') return std::nullopt;  // a comment in a --commands file
  const Command* c = find_command(words[0]);
  last_line_ = c && (c->handler == &Repl::cmd_step || c->handler == &Repl::cmd_next) ? line : "";
  try {
    if (!c) fail_usage(fmt::format("unknown command '{}' (help lists the commands)", words[0]));
    words.erase(words.begin());
    return (this->*c->handler)(words);
  } catch (const Error& e) {
    print_error(e.what());
    ++refused_commands_;
  }
  return std::nullopt;
}

bool Repl::run_model(DebugAction first) {
  dbg_.set_action(first);
  running_ = true;
  run_failure_ = 0;
  try {
    const Values out = ev_.run({}, feeds_);
    running_ = false;
    fmt::print("The run finished.\n");
    const auto names = ev_.output_names();
    for (size_t k = 0; k < out.size() && k < names.size(); ++k) fmt::print("  {}: {}\n", names[k], value_summary(out[k]));
  } catch (const DebugQuit&) {
    running_ = false;
    return false;
  } catch (const Error& e) {
    running_ = false;
    print_error(e.what());
    run_failure_ = e.kind() == ErrorKind::Runtime ? kEvalError : kUsageError;
    fmt::print("The run failed; the values computed until then can still be printed.\n");
  }
  return true;
}

DebugAction Repl::on_stop(const Stop& stop) {
  fmt::print("{}\n", stop_header(stop, dbg_));
  return prompt();
}

std::optional<DebugAction> Repl::resume(DebugAction action, const char* name) {
  if (!running_) fail_usage(fmt::format("the model is not running: {} needs a stop (run or step first)", name));
  return action;
}

std::optional<DebugAction> Repl::cmd_run(const Args& args) {
  expect_args(args, 0, 0, "run");
  if (running_) fail_usage("the model is already running: continue, step, next, finish or quit");
  return DebugAction::Continue;
}

std::optional<DebugAction> Repl::cmd_step(const Args& args) {
  expect_args(args, 0, 0, "step");
  return DebugAction::Step;  // before a run: start it and stop before the first node
}

std::optional<DebugAction> Repl::cmd_next(const Args& args) {
  expect_args(args, 0, 0, "next");
  return DebugAction::Next;
}

std::optional<DebugAction> Repl::cmd_continue(const Args& args) {
  expect_args(args, 0, 0, "continue");
  return resume(DebugAction::Continue, "continue");
}

std::optional<DebugAction> Repl::cmd_finish(const Args& args) {
  expect_args(args, 0, 0, "finish");
  return resume(DebugAction::Finish, "finish");
}

std::optional<DebugAction> Repl::cmd_quit(const Args&) { return DebugAction::Quit; }

std::optional<DebugAction> Repl::cmd_help(const Args& args) {
  expect_args(args, 0, 1, "help [COMMAND]");
  if (args.size() == 1) {
    const Command* c = find_command(args[0]);
    if (!c) fail_usage(fmt::format("unknown command '{}' (help lists the commands)", args[0]));
    fmt::print("{}{}\n  {}\n", c->usage, *c->alias ? fmt::format("  (or {})", c->alias) : "", c->help);
    return std::nullopt;
  }
  for (const auto& c : commands()) fmt::print("  {:<3} {:<40} {}\n", c.alias, c.usage, c.help);
  fmt::print("Enter repeats step or next. VALUE is any value name: inputs, initializers, node outputs, and\n"
             "inside a body its own values too.\n");
  return std::nullopt;
}

std::optional<DebugAction> Repl::cmd_break(const Args& args) {
  expect_args(args, 1, 1, "break ADDR");
  const int number = dbg_.add_breakpoint(args[0]);
  const auto& ids = dbg_.breakpoints().back().ids;
  if (ids.size() == 1)
    fmt::print("Breakpoint {} at {}\n", number, ids[0]);
  else
    fmt::print("Breakpoint {} at {} nodes: {}\n", number, ids.size(), fmt::join(ids, ", "));
  return std::nullopt;
}

std::optional<DebugAction> Repl::cmd_delete(const Args& args) {
  expect_args(args, 0, 1, "delete [N]");
  if (args.empty()) {
    dbg_.clear_breakpoints();
    fmt::print("Deleted every breakpoint.\n");
    return std::nullopt;
  }
  int number = 0;
  try {
    number = std::stoi(args[0]);
  } catch (const std::exception&) {
    fail_usage(fmt::format("delete: '{}' is not a breakpoint number", args[0]));
  }
  dbg_.delete_breakpoint(number);
  fmt::print("Deleted breakpoint {}.\n", number);
  return std::nullopt;
}

std::optional<DebugAction> Repl::cmd_print(const Args& args) {
  expect_args(args, 1, 2, "print VALUE [full|stats]");
  ValueDetail detail = ValueDetail::Summary;
  if (args.size() == 2) {
    if (args[1] == "full")
      detail = ValueDetail::Full;
    else if (args[1] == "stats")
      detail = ValueDetail::Stats;
    else
      fail_usage(fmt::format("print: '{}' is neither full nor stats", args[1]));
  }
  const Value* v = dbg_.value(args[0]);
  if (!v) fail_usage(fmt::format("no value '{}' has been computed {}", args[0], running_ ? "yet in this scope" : "(run first)"));
  fmt::print("{}\n", value_text(args[0], *v, detail));
  return std::nullopt;
}

void Repl::info_node() const {
  const Stop& s = *dbg_.stop();
  fmt::print("{}\n", node_line(*s.node, s.id, dbg_));
  for (const Attribute& a : s.node->attributes) {
    std::string text;
    switch (a.type) {
      case AttrType::Float: text = python_float(a.f); break;
      case AttrType::Int: text = std::to_string(a.i); break;
      case AttrType::String: text = "'" + a.s + "'"; break;
      case AttrType::Ints: text = fmt::format("[{}]", fmt::join(a.ints, ", ")); break;
      case AttrType::Floats: text = fmt::format("[{}]", fmt::join(a.floats, ", ")); break;
      case AttrType::Tensor: text = describe(a.t, 3); break;
      case AttrType::Graph: text = fmt::format("a graph of {} nodes", a.g ? a.g->nodes.size() : 0); break;
      default: text = std::string(attr_type_name(a.type)); break;
    }
    fmt::print("  attribute {} = {}\n", a.name, text);
  }
  for (const DebugFrame& f : dbg_.frames())
    if (f.depth > 0) fmt::print("  in {}: {}\n", f.caller, f.label);
  const auto numbers = dbg_.breakpoints_at(s.id);
  if (!numbers.empty()) fmt::print("  breakpoints {}\n", fmt::join(numbers, ", "));
}

std::optional<DebugAction> Repl::cmd_info(const Args& args) {
  expect_args(args, 1, 1, "info node|inputs|outputs|breaks|values");
  const std::string& what = args[0];
  if (what == "breaks" || what == "breakpoints") {
    if (dbg_.breakpoints().empty()) fmt::print("No breakpoints.\n");
    for (const Breakpoint& b : dbg_.breakpoints())
      fmt::print("  {}  {}  hits {}  at {}\n", b.number, b.address, b.hits, fmt::join(b.ids, ", "));
    if (dbg_.watching_nonfinite()) fmt::print("  watching for NaN/Inf\n");
    return std::nullopt;
  }
  if (what == "values") {
    for (const auto& name : dbg_.value_names()) fmt::print("  {}: {}\n", name, value_summary(*dbg_.value(name)));
    return std::nullopt;
  }
  if (what != "node" && what != "inputs" && what != "outputs") fail_usage(fmt::format("info: '{}' is not node, inputs, outputs, breaks or values", what));
  const Stop* s = dbg_.stop();
  if (!s) fail_usage(fmt::format("info {}: the run is not stopped at a node", what));
  if (what == "node") {
    info_node();
  } else if (what == "inputs") {
    for (size_t k = 0; k < s->node->inputs.size(); ++k) {
      const std::string& name = s->node->inputs[k];
      if (name.empty()) continue;
      const Value* v = dbg_.value(name);  // what set() left, which the node will read
      fmt::print("  {}: {}\n", name, value_summary(v ? *v : (*s->inputs)[k]));
    }
  } else {
    for (size_t k = 0; k < s->node->outputs.size(); ++k)
      if (!s->node->outputs[k].empty())
        fmt::print("  {}: {}\n", s->node->outputs[k], s->after ? value_summary((*s->outputs)[k]) : "not computed yet (next)");
  }
  return std::nullopt;
}

void Repl::list_around(const std::string& id) const {
  const NodeLocation* where = dbg_.locate(id);
  if (!where) fail_usage(fmt::format("list: no listing for '{}'", id));
  const std::string current = dbg_.stop() ? dbg_.stop()->id : "";
  const auto& nodes = *where->siblings;
  const size_t begin = where->index > kListBefore ? where->index - kListBefore : 0;
  const size_t end = std::min(nodes.size(), where->index + kListAfter + 1);
  for (size_t i = begin; i < end; ++i) {
    const std::string node = node_id(where->prefix, nodes[i], i);
    fmt::print("{} {} {}\n", node == current ? "=>" : "  ", dbg_.breakpoints_at(node).empty() ? ' ' : '*', node_line(nodes[i], node, dbg_));
  }
  if (end < nodes.size()) fmt::print("     ... {} more\n", nodes.size() - end);
}

std::optional<DebugAction> Repl::cmd_list(const Args& args) {
  expect_args(args, 0, 1, "list [ADDR]");
  const Graph& main = ev_.model().graph;
  if (!args.empty()) {
    list_around(find_nodes(main, args[0]).front().id);
  } else if (dbg_.stop()) {
    list_around(dbg_.stop()->id);
  } else if (!main.nodes.empty()) {
    list_around(node_id("", main.nodes[0], 0));
  }
  return std::nullopt;
}

std::optional<DebugAction> Repl::cmd_set(const Args& args) {
  expect_args(args, 2, 2, "set VALUE FILE");
  const bool computed = dbg_.value(args[0]) != nullptr;
  Value v = read_value_file(args[1], ev_.declared_type(args[0]));
  dbg_.set(args[0], v);
  fmt::print("{} = {}{}\n", args[0], value_summary(v),
             computed ? "" : fmt::format(" (takes effect when {} is computed)", args[0]));
  return std::nullopt;
}

std::optional<DebugAction> Repl::cmd_watch(const Args& args) {
  expect_args(args, 1, 1, "watch nan|off");
  if (args[0] != "nan" && args[0] != "inf" && args[0] != "off") fail_usage(fmt::format("watch: '{}' is not nan or off", args[0]));
  dbg_.watch_nonfinite(args[0] != "off");
  fmt::print("{}\n", args[0] == "off" ? "No longer watching for NaN/Inf."
                                      : "Watching for NaN/Inf: the run stops after the node where they appear.");
  return std::nullopt;
}

}  // namespace refeval::cli

// Debugger: breakpoints, stepping, live values and value replacement, for an IDE, a test or the
// `refeval debug` REPL. It is an Observer, so there are no threads: the run calls the client's
// stop callback from inside the evaluator, and the action the callback returns says how the run
// goes on. Everything the client may do while stopped (read values, set values, add breakpoints)
// it does from inside that callback.
//
//   refeval::ReferenceEvaluator ev(refeval::load_model("model.onnx"));
//   refeval::Debugger dbg(ev.model());
//   dbg.add_breakpoint("op:MatMul");               // any CLI.md address: NAME, #I, op:TYPE, PARENT/ATTR/NODE
//   dbg.watch_nonfinite(true);                     // also stop after the first node producing NaN/Inf
//   dbg.on_stop([](refeval::Debugger& d, const refeval::Stop& s) {
//     fmt::print("stopped at {} ({})\n", s.id, s.node->op_type);
//     if (const refeval::Value* w = d.value("W")) fmt::print("W: {}\n", refeval::describe(*w, 3));
//     d.set("W", refeval::read_value_file("w_fixed.npy", nullptr));  // later readers of W see this
//     return refeval::DebugAction::Step;           // stop again before the next node, bodies included
//   });
//   ev.add_observer(&dbg);
//   try {
//     refeval::Values out = ev.run({}, feeds);
//   } catch (const refeval::DebugQuit&) {           // the callback returned DebugAction::Quit
//   }
//
// For a callback around every node (progress, logging), add a plain Observer next to it.
// The debugger holds on to every value of the graphs being run (that is what lets a client print
// any of them), so a model's intermediates stay in memory until its run ends.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "refeval/ir.h"
#include "refeval/observer.h"

namespace refeval {

// How the run goes on after a stop (gdb's words).
enum class DebugAction {
  Continue,  // until a breakpoint or a watch stops it, or the run ends
  Step,      // stop before the next node that runs, entering bodies (If/Loop/Scan, functions)
  Next,      // stop before the next node of this graph or an enclosing one: bodies run through
  Finish,    // stop after the node whose body this is has completed (every iteration);
             // in the main graph: run to the end
  Quit,      // abandon the run: ReferenceEvaluator::run throws DebugQuit
};

// Thrown through the evaluator when the client quits. Deliberately not a std::exception, so that
// nothing on the way (ops running bodies, the engine's error wrapping) turns it into an Error.
struct DebugQuit {};

enum class StopReason { Breakpoint, Step, Finish, Watch, Interrupt };

// Where and why the run stopped. Before a node (its inputs are known and it has not run) or,
// for Finish and Watch, after it (its outputs are known, not yet seen by any other node).
struct Stop {
  StopReason reason = StopReason::Step;
  bool after = false;
  const Node* node = nullptr;
  std::string id;          // qualified id (CLI.md addressing), as in NodeEvent::id
  int depth = 0;           // 0: main graph; n: inside n nested bodies
  const Values* inputs = nullptr;
  const Values* outputs = nullptr;  // after only
  int breakpoint = 0;      // the breakpoint's number, for StopReason::Breakpoint
  std::string detail;      // for Watch: which output holds NaN/Inf and where the first one is
};

struct Breakpoint {
  int number = 0;                // 1, 2, ... in the order added; never reused
  std::string address;           // as given
  std::vector<std::string> ids;  // qualified ids of the nodes it names
  int hits = 0;
};

// One graph being run: the main graph, or one execution of a body or function.
struct DebugFrame {
  int depth = 0;
  std::string caller;  // qualified id of the If/Loop/Scan/function node; "" for the main graph
  std::string label;   // "body iteration 2", "then_branch", "function MyFn"
};

// Where a node sits in the model: its graph's nodes in stored order, for listings.
struct NodeLocation {
  const std::vector<Node>* siblings = nullptr;
  size_t index = 0;    // stored position among the siblings (CLI.md #I)
  std::string prefix;  // id prefix shared by the siblings ("" in the main graph)
};

class Debugger : public Observer {
 public:
  using StopCallback = std::function<DebugAction(Debugger&, const Stop&)>;

  // `model` must outlive the debugger (ReferenceEvaluator::model() does).
  explicit Debugger(const Model& model);
  ~Debugger() override;

  void on_stop(StopCallback callback) { on_stop_ = std::move(callback); }
  // The action in force until the next stop; a new run starts with it. Default Continue;
  // Step makes the run stop before its first node.
  void set_action(DebugAction action);

  // Breakpoints stop the run before the node they name, on every execution (each iteration of
  // a body). A bad address is an Error (ErrorKind::Usage) saying why. Besides CLI.md addresses,
  // the qualified id of a node inside a model-local function ("call/MyFn/#0") is accepted.
  int add_breakpoint(const std::string& address);
  void delete_breakpoint(int number);  // ErrorKind::Usage if there is no such breakpoint
  void clear_breakpoints();
  const std::vector<Breakpoint>& breakpoints() const { return breakpoints_; }
  // Numbers of the breakpoints that name this qualified id.
  std::vector<int> breakpoints_at(const std::string& id) const;

  // Stop after each node where NaN or Inf appear: an output (a tensor, or one inside a sequence
  // or optional) holds some while no input does. Nodes they merely spread to do not stop.
  void watch_nonfinite(bool on) { watch_nonfinite_ = on; }
  bool watching_nonfinite() const { return watch_nonfinite_; }

  // Stops the run before its next node (StopReason::Interrupt). Safe to call from a signal
  // handler or another thread: the way a Ctrl-C reaches a long run.
  void interrupt() { interrupted_ = true; }

  // The current stop, or null while running or before the first stop of a run.
  const Stop* stop() const { return stopped_ ? &stop_ : nullptr; }
  // Innermost first: the body being run, then its callers, then the main graph. After a failed
  // run the frames stay as they were when the error was thrown (post mortem).
  std::vector<DebugFrame> frames() const;

  // A value computed so far (initializers, feeds, node outputs), looked up from the innermost
  // frame outwards, so while stopped inside a body both the body's values and those of the
  // graphs around it are visible. Null when the name has no value (yet).
  const Value* value(const std::string& name) const;
  // Names with a value in the innermost frame, in the order they were computed.
  std::vector<std::string> value_names() const;

  // Replaces a value. A value already computed: every node that reads it from now on, in its
  // frame and in bodies below, reads `v` instead (a graph output already computed keeps what
  // its node produced). An output of the node just stopped after: replaced before anyone sees it.
  // A name not computed yet: replaces the value the next time a node produces it (or a body
  // binds it as an input).
  void set(const std::string& name, Value v);

  // The graph around a qualified id, for listings; null for an unknown id.
  const NodeLocation* locate(const std::string& id) const;

  // Observer
  void graph_begin(const GraphEvent&) override;
  void graph_end(const GraphEvent&) override;
  void before_node(const NodeEvent&) override;
  void replace_inputs(const NodeEvent&, Values& inputs) override;
  void after_node(const NodeEvent&, Values& outputs) override;

 private:
  struct Frame;
  Frame* find_frame(const std::string& name) const;  // the innermost frame holding `name`
  bool breakpoint_hit(const std::string& id, int& number);
  std::string nonfinite_detail(const Node& node, const Values& outputs) const;
  void stop_here(Stop stop);

  const Model& model_;
  std::map<std::string, NodeLocation> locations_;
  StopCallback on_stop_;
  DebugAction action_ = DebugAction::Continue;
  int action_depth_ = 0;  // the depth the current Next/Finish was given at
  std::vector<Breakpoint> breakpoints_;
  int next_number_ = 1;
  bool watch_nonfinite_ = false;
  std::atomic<bool> interrupted_ = false;
  std::vector<std::unique_ptr<Frame>> frames_;
  std::map<std::string, Value> pending_;  // set() of names not computed yet
  bool stopped_ = false;
  Stop stop_;
  Values* stopped_outputs_ = nullptr;  // the outputs of the node stopped after, for set()
};

}  // namespace refeval

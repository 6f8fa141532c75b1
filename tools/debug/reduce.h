// `refeval reduce`: shrinks a failing model to a small subgraph that still fails, in the manner of
// Polygraphy's `debug reduce` (viewers-and-numerics.md §B.2), on refeval's own recorded run.
//
// The model is run once per input set with every main-graph value recorded. Then, on the nodes in
// topological order:
//   1. outputs: the shortest prefix of nodes on which the predicate holds (every value the prefix
//      leaves unconsumed is an output); its last node is the culprit, its outputs become the graph
//      outputs and only their ancestors stay;
//   2. inputs: the latest suffix of those ancestors on which the predicate still holds; values the
//      removed nodes made become graph inputs fed with their recorded values;
//   3. branches: each remaining node that does not produce an output is cut in turn (with the
//      nodes only it needed); a cut that keeps the predicate holding stays, its values frozen to
//      constants or made graph inputs (Options::freeze).
// Phases 1 and 2 bisect (O(log N) runs), step one node at a time, or bisect and then refine the
// result linearly (Mode::Both). If/Loop/Scan nodes are kept whole with their bodies, and the values
// their bodies capture count as their inputs. A candidate is judged by a Predicate on every input
// set (or on any of them).
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "refeval/compare.h"
#include "refeval/dump.h"
#include "refeval/ir.h"
#include "refeval/registry.h"
#include "refeval/value.h"

namespace refeval::reduce {

using Feeds = std::map<std::string, Value>;

// A candidate subgraph as a predicate sees it, for one input set.
struct Candidate {
  const Model& model;
  const Feeds& feeds;                // every graph input
  const std::set<std::string>& cut;  // inputs and initializers holding values of removed nodes
  size_t set = 0;                    // which input set
};

struct Verdict {
  bool holds = false;
  std::string detail;  // what was seen: "new NaN in 'x' from node 'n' (Sqrt)", "exit 1"
};

// Thrown by a predicate (and honoured by reduce()) when the user interrupts: the smallest failing
// subgraph found so far is the result.
struct Interrupted {};

class Predicate {
 public:
  virtual ~Predicate() = default;
  virtual std::string name() const = 0;  // "--nan", "--check 'CMD'"
  virtual Verdict test(const Candidate& c) = 0;
  // A value to feed for a removed node's output instead of the recorded one (a dump's value).
  virtual const Value* reference(const std::string& /*name*/) const { return nullptr; }
};

// A node produces a NaN that none of its inputs holds, or an Inf where its inputs are all finite;
// or an initializer of the model (not a frozen value) holds one.
std::unique_ptr<Predicate> nan_predicate(const Registry* registry = nullptr);
// A node's output differs from the value of the same name in `dump` beyond `tol`. Removed nodes'
// values are fed from the dump where it holds them, so a subgraph fails only if it makes the
// difference itself.
std::unique_ptr<Predicate> compare_predicate(std::vector<ValueRecord> dump, Tolerance tol,
                                             const Registry* registry = nullptr);
// refeval's run fails with a message matching the ECMAScript regular expression `regex`
// (searched, not matched whole). ErrorKind::Usage if the expression is invalid.
std::unique_ptr<Predicate> error_predicate(const std::string& regex, const Registry* registry = nullptr);
// `command` run by /bin/sh after replacing {model} by the candidate's path and {inputs} by the
// folder of its input_K.pb files (written under `work_dir`); a non-zero exit means still failing.
std::unique_ptr<Predicate> check_predicate(std::string command, std::string work_dir);

enum class Mode { Bisect, Linear, Both };
enum class Freeze { Inputs, Constants };

struct Step {
  int number = 0;
  std::string phase;  // "full model", "outputs", "inputs", "branches"
  size_t nodes = 0;
  bool holds = false;
  std::string detail;
};

struct Options {
  Mode mode = Mode::Both;
  Freeze freeze = Freeze::Inputs;
  bool all_sets = true;  // the predicate must hold on every set (false: on any)
  int max_steps = 0;     // predicate evaluations after the full model's; 0: no limit
  std::function<void(const Step&)> on_step;
  const std::atomic<bool>* stop = nullptr;  // set by a signal handler: stop, keep the best so far
};

struct Result {
  Model model;                     // the smallest failing subgraph found
  std::vector<Feeds> feeds;        // its graph inputs, per input set
  std::vector<std::string> kept;   // its nodes, described ("node 'n' (Op)")
  size_t original_nodes = 0;
  int steps = 0;                   // predicate evaluations, the full model's included
  bool stopped = false;            // --max-steps or an interrupt cut the search short
  std::string detail;              // the predicate's verdict on the result
};

// Node ids in stored order of `g` ("#I" or the name), for messages.
std::string node_label(const Node& n, size_t index);

// Reduces `model` run on each of `sets`. ErrorKind::Usage if there are no sets, if
// Freeze::Constants is asked with several sets (each would freeze different values), or if the
// predicate does not hold on the full model.
Result reduce(const Model& model, const std::vector<Feeds>& sets, Predicate& predicate, const Options& options = {},
              const Registry* registry = nullptr);

// Initializers of `model` whose values differ from the dump's value of the same name.
std::vector<std::string> differing_initializers(const Model& model, const std::vector<ValueRecord>& dump, Tolerance tol);

// Writes the result as a backend test: `model_path`, and test_data_set_K/ beside it with
// input_K.pb and, as expected outputs, output_K.pb computed by refeval for the small model.
// Returns an empty string, or why the expected outputs could not be computed (the small model
// fails in refeval, as with an --error predicate).
std::string write_result(const Result& r, const std::string& model_path, const Registry* registry = nullptr);

}  // namespace refeval::reduce

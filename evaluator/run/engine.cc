// Stage 3, run: one loop over the planned steps. Values flow through frame slots; observers hear
// about every graph and node; values are freed after their last use unless an observer keeps them.
#include <utility>

#include <fmt/format.h>

#include "refeval/file_backed.h"
#include "run/engine.h"

namespace refeval {
namespace {

class StepContext final : public RunContext {
 public:
  StepContext(Engine& engine, const Frame& frame, const Step& step, int depth)
      : engine_(engine), frame_(frame), step_(step), depth_(depth) {}
  const Node& node() const override { return *step_.node; }
  Values run_body(const Plan& body, const Values& inputs, const std::string& label) override {
    GraphEvent ev;
    ev.depth = depth_ + 1;
    ev.caller = step_.node;
    ev.label = label;
    ev.path = step_.id;
    return engine_.run(body, &frame_, inputs, ev);
  }

 private:
  Engine& engine_;
  const Frame& frame_;
  const Step& step_;
  int depth_;
};

std::string with_node(const Node& n, const std::string& message) { return fmt::format("{}: {}", n.describe(), message); }

}  // namespace

Values Engine::run(const Plan& plan, const Frame* parent, const Values& inputs, GraphEvent event,
                   const std::vector<int>* wanted, NamedValues* all) {
  std::vector<bool> keep(plan.num_slots(), false);
  if (wanted)
    for (int s : *wanted) keep[size_t(s)] = true;
  Frame frame;
  frame.parent = parent;
  frame.slots.resize(plan.num_slots());
  for (const auto& [own, outer] : plan.captures) frame.slots[size_t(own)] = parent->slots[size_t(outer)];

  NamedValues initializers, fed;
  for (const auto& [slot, tensor] : plan.initializer_slots) {
    frame.slots[size_t(slot)] = tensor;
    initializers.emplace_back(plan.slot_names[size_t(slot)], tensor);
  }
  std::vector<bool> is_input(plan.num_slots(), false);
  for (size_t i = 0; i < plan.input_slots.size(); ++i) {
    const int slot = plan.input_slots[i];
    is_input[size_t(slot)] = true;
    if (i < inputs.size() && !inputs[i].is_absent()) {
      frame.slots[size_t(slot)] = inputs[i];
      fed.emplace_back(plan.input_names[i], inputs[i]);
    }
  }
  bool keep_all = false, every_node = false;
  for (Observer* o : observers) keep_all = keep_all || o->keeps_values(), every_node = every_node || o->sees_every_node();
  const bool skip_absorbed = !keep_all && !every_node;
  if (all) {
    for (const auto& v : initializers) all->push_back(v);
    for (const auto& v : fed) all->push_back(v);
  }

  event.initializers = &initializers;
  event.inputs = &fed;
  for (Observer* o : observers) o->graph_begin(event);

  Values args;
  for (const Step& step : plan.steps) {
    // (unless the caller asked for one of its outputs)
    if (step.skippable && skip_absorbed &&
        std::none_of(step.outputs.begin(), step.outputs.end(), [&](int s) { return s >= 0 && keep[size_t(s)]; })) {
      for (int slot : step.release)
        if (!keep[size_t(slot)]) frame.slots[size_t(slot)] = Value();
      continue;
    }
    args.assign(step.inputs.size(), Value());
    for (size_t k = 0; k < step.inputs.size(); ++k) {
      const int slot = step.inputs[k];
      if (slot < 0) continue;
      // A value read for the last time moves: a copy would allocate its shape and touch its
      // reference count only for the frame's copy to be dropped after the step.
      if (step.last_read[k] && !keep_all && !keep[size_t(slot)]) args[k] = std::exchange(frame.slots[size_t(slot)], Value());
      else args[k] = frame.slots[size_t(slot)];
      if (args[k].is_absent() && !is_input[size_t(slot)] && !step.absorbed[k])
        throw Error(ErrorKind::Runtime, with_node(*step.node, fmt::format("input '{}' was not produced by the node that should compute it",
                                                                           plan.slot_names[size_t(slot)])));
    }
    NodeEvent ne{event.depth, *step.node, step.id, step.index, args};
    for (Observer* o : observers) o->before_node(ne);
    for (Observer* o : observers) o->replace_inputs(ne, args);
    StepContext ctx(*this, frame, step, event.depth);
    Values outs;
    bool replayed = false;
    for (Observer* o : observers)
      if ((replayed = o->replay(ne, outs))) break;
    if (!replayed) {
      try {
        if (step.fold && step.folded) {
          outs = *step.folded;
        } else {
          outs = step.op->run(args, ctx);
          if (step.fold) {
            step.folded = outs;
            // Weights mapped from their file that this fold read (a tied LM head's Transpose of
            // the embedding table) go back to the file: later reads fault in only what they touch.
            for (const Value& v : args)
              if (v.is_tensor()) release_file_pages(v.tensor().raw_data(), v.tensor().nbytes());
          }
        }
      } catch (const Error& e) {
        throw Error(e.kind() == ErrorKind::Model ? ErrorKind::Runtime : e.kind(), with_node(*step.node, e.what()));
      } catch (const std::bad_alloc&) {
        throw Error(ErrorKind::Resource, with_node(*step.node, "out of memory"));
      } catch (const std::exception& e) {
        throw Error(ErrorKind::Runtime, with_node(*step.node, e.what()));
      }
    }
    if (outs.size() > step.outputs.size()) outs.resize(step.outputs.size());  // outputs the node did not ask for
    for (Observer* o : observers) o->after_node(ne, outs);
    for (size_t k = 0; k < outs.size(); ++k) {
      const int slot = step.outputs[k];
      if (slot < 0) continue;
      if (all) all->emplace_back(plan.slot_names[size_t(slot)], outs[k]);
      frame.slots[size_t(slot)] = std::move(outs[k]);
    }
    if (!keep_all)
      for (int slot : step.release)
        if (!keep[size_t(slot)]) frame.slots[size_t(slot)] = Value();
  }

  const std::vector<int>& result_slots = wanted ? *wanted : plan.output_slots;
  Values results;
  NamedValues named_results;
  for (int slot : result_slots) {
    const Value& v = frame.slots[size_t(slot)];
    const std::string& name = plan.slot_names[size_t(slot)];
    if (v.is_absent()) fail_runtime(fmt::format("value '{}' was not produced", name));
    results.push_back(v);
    named_results.emplace_back(name, v);
  }
  event.outputs = &named_results;
  for (Observer* o : observers) o->graph_end(event);
  return results;
}

}  // namespace refeval

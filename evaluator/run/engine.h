// Private to the evaluator: the run loop (stage 3) that executes a Plan (plan/plan.h), telling
// observers about every graph and node.
#pragma once

#include <vector>

#include "plan/plan.h"
#include "refeval/observer.h"

namespace refeval {

struct Frame {
  std::vector<Value> slots;
  const Frame* parent = nullptr;
};

class Engine {
 public:
  std::vector<Observer*> observers;
  // Runs `plan` with `inputs` bound to its formal inputs (positionally; Absent = not given, which
  // is only allowed for inputs that have an initializer). Returns the values of `wanted` slots
  // (kept alive throughout), or of the graph outputs when null. `all`, when given, receives every
  // value in execution order.
  Values run(const Plan& plan, const Frame* parent, const Values& inputs, GraphEvent event,
             const std::vector<int>* wanted = nullptr, NamedValues* all = nullptr);
};

}  // namespace refeval

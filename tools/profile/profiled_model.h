// A model loaded, planned and run under the profiler as `refeval profile` does (the CLI verb and
// Python's refeval.profile() share it): ONNX Runtime's Session spans for loading and
// initialization, then one model_run span per run with every node timed.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "profile_event.h"
#include "profiler.h"
#include "refeval/evaluator.h"

namespace refeval::profile {

class ProfiledModel {
 public:
  // `load` reads the model; its time is the model_loading_uri span, planning the evaluator's the
  // session_initialization span.
  // release_packed_weights: EvaluatorOptions' (for a caller that does not profile).
  ProfiledModel(const std::function<Model()>& load, const Registry& registry, bool release_packed_weights = false);

  ReferenceEvaluator& evaluator() { return *ev_; }
  // The observer itself, for a caller that runs the evaluator and marks the runs (refeval generate).
  Profiler* profiler() { return &profiler_; }
  void run(const std::map<std::string, Value>& feeds);  // one profiled run
  // Every event in start order, a Session span before the node events that start with it.
  std::vector<Event> events() const;

 private:
  Profiler profiler_;  // time 0 of the file: created first
  std::unique_ptr<ReferenceEvaluator> ev_;
};

}  // namespace refeval::profile

#include "profiled_model.h"

#include <algorithm>

namespace refeval::profile {

ProfiledModel::ProfiledModel(const std::function<Model()>& load, const Registry& registry, bool release_packed_weights) {
  using Clock = Profiler::Clock;
  const auto load_start = Clock::now();
  Model model = load();
  const auto init_start = Clock::now();
  profiler_.add_session_event("model_loading_uri", load_start, init_start);
  ev_ = std::make_unique<ReferenceEvaluator>(std::move(model), EvaluatorOptions{&registry, release_packed_weights});
  profiler_.add_session_event("session_initialization", init_start, Clock::now());
  ev_->add_observer(&profiler_);
}

void ProfiledModel::run(const std::map<std::string, Value>& feeds) {
  profiler_.begin_run();
  ev_->run({}, feeds);
  profiler_.end_run();
}

std::vector<Event> ProfiledModel::events() const {
  std::vector<Event> events = profiler_.events();
  std::stable_sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    return a.ts != b.ts ? a.ts < b.ts : (a.kind == EventKind::Session && b.kind != EventKind::Session);
  });
  return events;
}

}  // namespace refeval::profile

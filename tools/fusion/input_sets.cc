#include "input_sets.h"

#include <functional>
#include <random>

#include <fmt/format.h>

#include "refeval/dispatch.h"

namespace refeval::fusion {
namespace {

// Draws one value for element i of a varied tensor.
using Draw = std::function<double(int64_t i)>;

Tensor varied(const Tensor& t, const Draw& draw) {
  Tensor out(t.dtype(), t.shape());
  visit<Floats>(t.dtype(), [&]<class T>() {
    T* p = out.data<T>();
    for (int64_t i = 0; i < out.size(); ++i) p[i] = T(draw(i));
  });
  return out;
}

// Whether every element of a floating tensor is 0 or 1 (a mask written as floats).
bool zeros_and_ones(const Tensor& t) {
  bool binary = true;
  visit<Floats>(t.dtype(), [&]<class T>() {
    const T* p = t.data<T>();
    for (int64_t i = 0; i < t.size() && binary; ++i) binary = double(p[i]) == 0.0 || double(p[i]) == 1.0;
  });
  return binary && t.size() > 0;
}

InputSet vary(const std::string& name, const std::map<std::string, Value>& given, const std::set<std::string>& fixed,
              const Draw& draw) {
  InputSet set{name, given};
  for (auto& [input, value] : set.feeds)
    if (!fixed.count(input) && value.is_tensor() && Floats::contains(value.tensor().dtype()) && !zeros_and_ones(value.tensor()))
      value = varied(value.tensor(), draw);
  return set;
}

// Uniform in [0, 1) with refeval's documented mapping of the generator's output (README).
struct Uniform {
  std::mt19937_64 rng;
  double operator()() { return double(rng() >> 11) * 0x1.0p-53; }
};

}  // namespace

std::vector<InputSet> make_input_sets(const std::map<std::string, Value>& given, const std::set<std::string>& fixed,
                                      const InputSetOptions& options) {
  std::vector<InputSet> sets{{"given", given}};
  for (int k = 1; k <= options.random_sets; ++k) {
    Uniform u{std::mt19937_64(options.seed + uint64_t(k))};
    sets.push_back(vary(fmt::format("random {}", k), given, fixed, [&](int64_t) { return 6 * u() - 3; }));
  }
  if (!options.edge_cases) return sets;
  Uniform u{std::mt19937_64(options.seed + 1000)};
  sets.push_back(vary("zeros", given, fixed, [](int64_t) { return 0.0; }));
  sets.push_back(vary("negative", given, fixed, [&](int64_t) { return -8 * u() - 1e-3; }));
  sets.push_back(vary("large", given, fixed, [&](int64_t) { return (2 * u() - 1) * 1e4; }));
  sets.push_back(vary("tiny", given, fixed, [&](int64_t) { return (2 * u() - 1) * 1e-6; }));
  return sets;
}

}  // namespace refeval::fusion

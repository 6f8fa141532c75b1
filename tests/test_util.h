// Helpers shared by the unit tests: build tensors in one line and run one node.
#pragma once

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "refeval/builder.h"
#include "refeval/compare.h"
#include "refeval/evaluator.h"

namespace refeval::testing {

template <class T>
Tensor tensor(Shape shape, std::vector<T> values) { return Tensor::from_vector<T>(std::move(shape), values); }

// n smooth, varied values in [-1.5, 1.5] (a sine of frequency f): inputs for attention tests whose
// oracle must see distinct scores.
inline std::vector<float> wave(size_t n, float f, float phase = 0.3f) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = std::sin(f * float(i) + phase) * 1.5f;
  return v;
}

// Runs a single node (inputs named by the node) at `opset` of its domain and returns its outputs.
// n floats uniform in [-1, 1), the same for the same seed.
inline std::vector<float> random_floats(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<float> v(n);
  for (float& x : v) x = d(gen);
  return v;
}

inline Values run_node(const Node& n, const Values& inputs, int64_t opset = kLatestOnnxOpset) {
  OpsetMap opsets{{"", opset}};
  if (!n.domain.empty()) opsets[n.domain] = opset;
  auto ev = ReferenceEvaluator::from_node(n, opsets);
  std::map<std::string, Value> feeds;
  for (size_t i = 0; i < inputs.size() && i < n.inputs.size(); ++i)
    if (!n.inputs[i].empty() && !inputs[i].is_absent()) feeds[n.inputs[i]] = inputs[i];
  return ev.run({}, feeds);
}

// CHECKs that `actual` equals `expected` under the backend-test tolerance, printing why not.
inline void check_equal(const Value& actual, const Value& expected, Tolerance tol = {}) {
  const Comparison c = compare_values(actual, expected, tol);
  INFO(c.reason);
  CHECK(c.equal);
}

}  // namespace refeval::testing

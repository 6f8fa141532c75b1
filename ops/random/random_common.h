// Helpers shared by the random family.
//
// Reproducibility: a node with a `seed` attribute draws from a generator seeded from it afresh at
// every run, so its output is the same run to run. A node without `seed` draws from one
// process-wide generator seeded once from the fixed default kDefaultSeed, so a process that runs
// the same models in the same order gets the same numbers every time. The generator is
// std::mt19937 (fully specified by the C++ standard) seeded with the integer seed, and uniform and
// normal variates are derived here as numpy's legacy RandomState derives them (not through std::
// distributions, whose algorithms vary), so a seeded node draws the numbers that
// numpy.random.RandomState(seed) draws in the ONNX reference evaluator.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <random>

#include "refeval/dispatch.h"
#include "refeval/op_run.h"
#include "refeval/registry.h"

namespace refeval::ops {

inline constexpr uint32_t kDefaultSeed = 5489;  // the Mersenne Twister's own default

// A generator state: 32-bit Mersenne Twister plus the spare normal variate of the polar method.
struct RandomState {
  explicit RandomState(uint32_t seed) : engine(seed) {}
  std::mt19937 engine;
  bool has_gauss = false;
  double gauss = 0;
};

// Where one run of a node draws its numbers from: its own state (seeded nodes) or the locked
// process-wide state.
class Draw {
  friend class RandomSource;  // the only way to a Draw, so every random op declares itself Random
  explicit Draw(std::optional<uint32_t> seed) {
    if (seed) {
      own_.emplace(*seed);
      state_ = &*own_;
    } else {
      lock_ = std::unique_lock<std::mutex>(shared_mutex());
      state_ = &shared_state();
    }
  }

 public:
  // A uniform double in [0, 1) from 53 random bits of two 32-bit outputs (numpy's random_sample).
  double uniform() {
    const uint32_t a = state_->engine() >> 5, b = state_->engine() >> 6;
    return (double(a) * 67108864.0 + double(b)) / 9007199254740992.0;
  }
  // A standard normal variate by the polar method, caching the second value (numpy's legacy gauss).
  double normal() {
    if (state_->has_gauss) {
      state_->has_gauss = false;
      return state_->gauss;
    }
    double x1, x2, r2;
    do {
      x1 = 2.0 * uniform() - 1.0;
      x2 = 2.0 * uniform() - 1.0;
      r2 = x1 * x1 + x2 * x2;
    } while (r2 >= 1.0 || r2 == 0.0);
    const double f = std::sqrt(-2.0 * std::log(r2) / r2);
    state_->has_gauss = true;
    state_->gauss = f * x1;
    return f * x2;
  }

 private:
  static RandomState& shared_state() {
    static RandomState s(kDefaultSeed);
    return s;
  }
  static std::mutex& shared_mutex() {
    static std::mutex m;
    return m;
  }
  std::optional<RandomState> own_;
  std::unique_lock<std::mutex> lock_;
  RandomState* state_ = nullptr;
};

// The node's `seed` attribute, as an integer. A seeded node restarts its generator at every run,
// so each run of it gives the same numbers, as the ONNX reference evaluator does. Only an
// operator registered as Determinism::Random may draw: one that forgot to declare it would be
// folded on constant inputs, so constructing this fails for it at once, in every test.
class RandomSource {
 public:
  explicit RandomSource(const NodeContext& ctx) {
    if (ctx.determinism() != Determinism::Random)
      ctx.fail("draws random numbers but its class does not declare Determinism::Random");
    if (auto s = ctx.optional_attr<float>("seed")) {
      if (!std::isfinite(*s)) ctx.fail("seed must be finite");
      seed_ = uint32_t(int64_t(*s));
    }
  }
  Draw draw() const { return Draw(seed_); }

 private:
  std::optional<uint32_t> seed_;
};

// The `dtype` attribute as an element type, checked against the allowed set.
template <class List>
DType dtype_attr(const NodeContext& ctx, std::optional<DType> fallback) {
  auto d = ctx.optional_attr<int64_t>("dtype");
  if (!d) {
    if (!fallback) ctx.fail("the 'dtype' attribute is required here");
    return *fallback;
  }
  if (!is_valid_dtype(int32_t(*d)) || !List::contains(DType(*d)))
    ctx.fail("dtype " + std::to_string(*d) + " is not allowed for this operator");
  return DType(*d);
}

// A tensor of `dtype` and `shape` filled by f() (a double), converted to the element type.
template <class List, class F>
Tensor fill_random(DType dtype, const Shape& shape, F&& f) {
  Tensor t(dtype, shape);
  visit<List>(dtype, [&]<class T>() {
    T* p = t.data<T>();
    for (int64_t i = 0; i < t.size(); ++i) p[i] = from_compute<T>(compute_t<T>(f()));
  });
  return t;
}

}  // namespace refeval::ops

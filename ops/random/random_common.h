// Helpers shared by the random family.
//
// Reproducibility: a node with a `seed` attribute draws from a generator seeded from it afresh at
// every run, so its output is the same run to run. A node without `seed` draws from one
// process-wide generator seeded once from the fixed default kDefaultSeed, so a process that runs
// the same models in the same order gets the same numbers every time. The generator is
// std::mt19937_64 (fully specified by the C++ standard); uniform and normal variates are derived
// here (53-bit uniform, Box-Muller), not through std:: distributions whose algorithms vary.
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

inline constexpr uint64_t kDefaultSeed = 0x5eed0f00dULL;

// Where one run of a node draws its numbers from.
class Draw {
 public:
  explicit Draw(std::optional<uint64_t> seed) {
    if (seed) own_.emplace(*seed);
  }
  // A uniform double in [0, 1).
  double uniform() {
    if (own_) return double((*own_)() >> 11) * 0x1.0p-53;
    std::lock_guard<std::mutex> lock(shared_mutex());
    return double(shared_engine()() >> 11) * 0x1.0p-53;
  }
  // A standard normal variate (Box-Muller; each call consumes two uniforms).
  double normal() {
    const double u1 = 1.0 - uniform();  // (0, 1]
    const double u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
  }

 private:
  static std::mt19937_64& shared_engine() {
    static std::mt19937_64 e(kDefaultSeed);
    return e;
  }
  static std::mutex& shared_mutex() {
    static std::mutex m;
    return m;
  }
  std::optional<std::mt19937_64> own_;
};

// The node's `seed` attribute. A seeded node restarts its generator at every run, so each run of
// it gives the same numbers (as the ONNX reference evaluator does).
class RandomSource {
 public:
  explicit RandomSource(const NodeContext& ctx) {
    if (auto s = ctx.optional_attr<float>("seed")) {
      uint32_t bits;
      std::memcpy(&bits, &*s, sizeof bits);
      seed_ = uint64_t(bits) ^ 0x9e3779b97f4a7c15ULL;
    }
  }
  Draw draw() const { return Draw(seed_); }

 private:
  std::optional<uint64_t> seed_;
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

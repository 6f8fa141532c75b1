// What the rotary fusions (rotate-half in rotary.cc, rotations written pair by pair in
// rotary_pairs.cc) share: tracing a cos or sin operand to the table it is gathered from or
// to the position frequencies it is computed from, the caches com.microsoft RotaryEmbedding
// takes, and the fused node itself.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "../pass.h"
#include "../pattern.h"
#include "../rewrite.h"

namespace refeval::optimize::rotary {

constexpr const char* kPass = "rotary-embedding";

// A constant's int64 values, or a shape-computed value whose elements are all known sizes.
std::optional<std::vector<int64_t>> known_ints(const GraphIndex& g, const std::string& v);
std::string dims_string(const std::vector<Dim>& dims);
// [begin, end) of a Slice on the last axis of a value of `rank` axes whose last dim is h, clamped
// as Slice does; nullopt when its bounds are not known or it slices another axis or with a step.
std::optional<std::pair<int64_t, int64_t>> last_axis_range(const GraphIndex& g, const Node& s, int64_t h, size_t rank = 4);

struct Caches {
  std::string cos, sin;
};
using CacheMap = std::map<std::string, Caches>;  // cache source key -> initializer names

// One rotation found by a pattern: y = rotate(x) with the cos and sin operands of its products.
// x is (B, N, S, h) or (B, S, N, h); the tables are (.., h) (cat(freqs, freqs), rotate-half) or
// (.., h / 2) (one value per pair: `half_tables`).
struct Rotation {
  std::string x, cos, sin, out;
  bool interleaved = false;  // pairs (x[2i], x[2i+1]); else (x[i], x[i + h/2])
  bool half_tables = false;
  int64_t rotary_dim = 0;    // the first rotary_dim columns of each head rotated, the rest kept; 0: all
};

// The RotaryEmbedding (with its caches, made once per source in `caches`) that computes `r`, or
// the refusal on ctx. The callers check that r.x is known 4-D.
std::optional<Replacement> fuse(const Match& m, RewriteContext& ctx, CacheMap& caches, const Rotation& r);

// Rotations written pair by pair (rotary_pairs.cc): how many it fused.
int fuse_pairwise_rotary(Model& model, PassContext& ctx, CacheMap& caches);

}  // namespace refeval::optimize::rotary

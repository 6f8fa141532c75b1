// What the normalisation fusions (layer_norm.cc, skip_layer_norm.cc) check beyond their patterns.
// Each check returns why a match cannot fuse, for --explain, or "" when it can.
#pragma once

#include <optional>
#include <string>

#include "../graph_index.h"
#include "../pattern.h"

namespace refeval::optimize {

// A ReduceMean over the last axis alone, keeping it: axes as attribute (< 18) or constant input,
// -1 or rank - 1.
std::string last_axis_mean_problem(const Node& mean, const GraphIndex& g);

// The epsilon a decomposition adds inside its square root: a positive scalar constant of at most
// 0.01 (larger is not an epsilon, and the fused operators take a float attribute).
std::optional<float> norm_epsilon(const std::string& value, const GraphIndex& g, std::string& problem);

// A per-channel vector of a normalisation (`role` "gamma" or "beta"): a 1-D constant of x's last
// dim (known) and of x's element type (ORT's CPU kernels take one type T for X, scale and bias).
std::string channel_vector_problem(const std::string& role, const std::string& value, const std::string& x, const GraphIndex& g);

// The types around the fused operator: x a float type; with a Cast to the compute type around
// the decomposition (`cast_in`, the Cast node reading x, or null), that Cast widens x to float
// (double for a double x), so the decomposition computed in float as the fused operator does;
// the replaced root writes x's type.
std::string norm_types_problem(const std::string& x, const Node* cast_in, const std::string& y, const GraphIndex& g);

// "'name'" of a graph node for messages.
std::string node_label(const Node& n);

}  // namespace refeval::optimize

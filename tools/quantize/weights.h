// What the quantizers share: which MatMuls multiply by a weight (a constant 2-D float initializer
// no feed can replace), and which initializers a graph still reads after a rewrite.
#pragma once

#include <set>
#include <string>

#include "refeval/ir.h"

namespace refeval::quantize {

// Why MatMul node n of g has no weight to quantize, or "" when its B is one.
std::string weight_refusal(const Graph& g, const Node& n);
// Whether n's B is computed by the graph (attention's products): no weight, nothing to say.
bool multiplies_computed_values(const Graph& g, const Node& n);
// Every value name a node of g, or of a graph nested in one of its attributes, reads, and g's outputs.
std::set<std::string> values_read(const Graph& g);

}  // namespace refeval::quantize

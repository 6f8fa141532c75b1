// What the quantizers share: which MatMuls multiply by a weight (a constant 2-D float initializer
// no feed can replace), which initializers a graph still reads after a rewrite, and the result.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "refeval/ir.h"

namespace refeval::quantize {

struct QuantizeResult {
  Model model;
  std::vector<std::string> quantized;                        // the MatMul (and Gemm) nodes rewritten
  std::vector<std::pair<std::string, std::string>> skipped;  // (node, why) of the other MatMuls with an initializer B or excluded
  int64_t computed_products = 0;  // MatMuls whose B is computed (attention's products): no weight to quantize
  std::vector<std::string> tables;  // Gather nodes of embedding tables rewritten (--int4 --embeddings)
  std::vector<std::pair<std::string, std::string>> tables_skipped;  // (node, why) of Gathers of other initializers
  // MatMuls reading a table through Transpose (a tied LM head), quantized: with the table's own
  // GatherBlockQuantized blocks (shared: one int4 copy), or from the table transposed.
  std::vector<std::string> tied_shared, tied_copied;
};
// A usage error naming `path` and the first MatMul left alone when nothing was quantized.
void require_quantized(const QuantizeResult& r, const std::string& path);

// Why MatMul node n of g has no weight to quantize, or "" when its B is one.
std::string weight_refusal(const Graph& g, const Node& n);
// Why Gemm node n of g cannot be a MatMul by a weight plus a bias (transA 0, alpha and beta 1, B a
// weight as for MatMul, C absent or a float [N]), or "" when it can.
std::string gemm_refusal(const Graph& g, const Node& n);
// Whether n's B is computed by the graph (attention's products): no weight, nothing to say.
bool multiplies_computed_values(const Graph& g, const Node& n);
// The table E when MatMul n's B is Transpose(E) (perm absent or [1, 0]) of a 2-D float
// initializer no feed replaces, and nothing else reads the transposed value: a tied LM head.
const Initializer* tied_table(const Graph& g, const Node& n);
// A 2-D float tensor's values transposed (a table [vocab, hidden] as a MatMul weight [hidden, vocab]).
std::vector<float> transposed(const Tensor& t);
// Every value name a node of g, or of a graph nested in one of its attributes, reads, and g's outputs.
std::set<std::string> values_read(const Graph& g);

}  // namespace refeval::quantize

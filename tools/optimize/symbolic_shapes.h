// Symbolic shapes where ONNX's own inference gives up. ONNX 1.12 knows `batch` and `seq` through
// most operators, but loses them at data-dependent shapes that every torch export has: a Range
// of a sequence length (position ids), a Slice of the causal buffer from `k_len - q_len` to
// `k_len`, and everything after them (a Where over that mask, Softmax, the head merge). ORT's
// symbolic shape inference (sympy) is what lets its fusions see through these; this is the same
// idea on a small scale: dims are polynomials with integer coefficients over the model's
// symbols ("past + seq", "batch*seq"), and values computed from shapes (Shape -> Gather ->
// Concat, Slice bounds) are vectors of such polynomials, propagated in graph order.
//
// A dim refined here is written as a Dim whose param is the polynomial's canonical text, so two
// dims are equal exactly when same_dim() says so. Only dims ONNX left unknown (no dim, or its own
// placeholder "unk__N") are refined; what ONNX knows stays as it is.
#pragma once

#include "graph_index.h"
#include "refeval/ir.h"

namespace refeval::optimize {

// Fills `inference` (types and shape data from ONNX) with what the propagation knows better.
void refine_symbolic_shapes(const Model& model, Inference& inference);

// a - b when both are known (sizes or polynomial texts); nullopt otherwise. A negative
// difference is an unknown Dim.
std::optional<Dim> dim_difference(const Dim& a, const Dim& b, const Inference* inference = nullptr);
// Equal as polynomials ("seq + past" and "past + seq"; 3 and 3), a symbol ONNX named standing
// for the polynomial the propagation found for the same dim (Inference::aliases).
bool dims_equal(const Dim& a, const Dim& b, const Inference* inference = nullptr);
// The dim as a sum of symbols times integers plus a constant, after aliases: "past + seq" ->
// {past: 1, seq: 1}, "2*seq - 1" -> {seq: 2, "": -1}; nullopt when unknown or a product of symbols.
std::optional<std::map<std::string, int64_t>> linear_terms(const Dim& d, const Inference* inference = nullptr);

}  // namespace refeval::optimize

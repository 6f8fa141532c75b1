// The GELU family:
//   Gelu (ONNX 20; com.microsoft): 0.5 x (1 + erf(x / sqrt(2))), or with approximate="tanh"
//     (ONNX only) 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
//   BiasGelu(A, B) = Gelu(A + B);  FastGelu(X, bias?) = tanh form of X + bias
//   QuickGelu(X) = X sigmoid(alpha X), alpha default 1.702
#include <cmath>
#include <numbers>

#include "decompositions/decompositions.h"

namespace refeval::fusion {
namespace {

std::string erf_gelu(GraphWriter& w, const std::string& x, DType t) {
  const std::string e = w.op("Erf", {w.op("Div", {x, w.scalar(std::numbers::sqrt2, t)})});
  return w.op("Mul", {w.op("Mul", {x, w.scalar(0.5, t)}), w.op("Add", {e, w.scalar(1.0, t)})});
}

std::string tanh_gelu(GraphWriter& w, const std::string& x, DType t) {
  const std::string cube = w.op("Mul", {w.op("Mul", {x, x}), x});
  const std::string inner = w.op("Add", {x, w.op("Mul", {cube, w.scalar(0.044715, t)})});
  const double k = std::sqrt(2.0 / std::numbers::pi);
  const std::string th = w.op("Tanh", {w.op("Mul", {inner, w.scalar(k, t)})});
  return w.op("Mul", {w.op("Mul", {x, w.scalar(0.5, t)}), w.op("Add", {th, w.scalar(1.0, t)})});
}

// X + bias when the node has a bias input at `index`.
std::string with_bias(GraphWriter& w, size_t index) {
  return w.has(index) ? w.op("Add", {w.in(0), w.in(index)}) : w.in(0);
}

}  // namespace

void decompose_gelu(GraphWriter& w, int64_t) {
  std::string approximate = "none";
  if (const Attribute* a = w.node().find_attribute("approximate")) approximate = a->s;
  if (approximate != "none" && approximate != "tanh") w.unsupported("approximate must be 'none' or 'tanh'");
  w.output(0, approximate == "tanh" ? tanh_gelu(w, w.in(0), w.dtype(0)) : erf_gelu(w, w.in(0), w.dtype(0)));
}

void decompose_bias_gelu(GraphWriter& w, int64_t) { w.output(0, erf_gelu(w, with_bias(w, 1), w.dtype(0))); }

void decompose_fast_gelu(GraphWriter& w, int64_t) { w.output(0, tanh_gelu(w, with_bias(w, 1), w.dtype(0))); }

void decompose_quick_gelu(GraphWriter& w, int64_t) {
  const std::string x = w.in(0);
  const std::string scaled = w.op("Mul", {x, w.scalar(w.attr_float("alpha", 1.702f), w.dtype(0))});
  w.output(0, w.op("Mul", {x, w.op("Sigmoid", {scaled})}));
}

}  // namespace refeval::fusion

// The float64 oracle shared by `refeval accuracy` (tools/debug/accuracy.h), check-fusion and
// `optimize --verify`: a model (or graph, or function) with every float32/float16/bfloat16 tensor
// held in float64, run through the kernels' double paths, and the error figures of values
// against it. It lives in the fusion library so that check-fusion and the optimizer link it.
//
// Widening: initializers, Constant and ConstantOfShape tensors widened exactly, graph I/O and
// value_info types widened, Cast/EyeLike/Random* targets of those types retargeted to double, in
// bodies and model-local functions too. Float8/float4 stay as they are: they are quantized
// storage, not a compute precision.
#pragma once

#include <cstdint>
#include <limits>
#include <string>

#include "refeval/ir.h"
#include "refeval/value.h"

namespace refeval::accuracy {

// Error of values against a reference over every element compared.
// - sqnr_db as ONNX Runtime's qdq_loss_debug (compute_signal_to_quantization_noice_ratio):
//   20·log10(max(‖ref‖, ε) / max(‖model − ref‖, ε)), ε = float64's machine epsilon, so an
//   error-free value reads 20·log10(‖ref‖/ε) rather than +inf.
// - ulps: the largest error in units in the last place of the model's type at the reference value.
// - Elements where model and reference disagree about being finite (NaN against a number, Inf
//   against a finite value) are counted in `nonfinite` and left out of the other figures.
struct Error {
  double max_abs = 0, max_rel = 0, rms = 0;
  double sqnr_db = std::numeric_limits<double>::infinity();  // only when nothing was compared
  double ulps = 0;
  double rel_rms = 0;  // ‖model − ref‖ / ‖ref‖ (0 when both are 0)
  int64_t count = 0, nonfinite = 0;
};

// Gathers elements of one or several tensors (a node's error over all its outputs, the graph
// outputs' error over all outputs).
class ErrorAccumulator {
 public:
  // `model` is any floating tensor, `reference` the same shape in any floating type. The ulps use
  // `ulp_type`, by default `model`'s type. Shapes that differ are an error naming `what`.
  void add(const Tensor& model, const Tensor& reference, const std::string& what, DType ulp_type = DType::Undefined);
  Error result() const;

 private:
  template <class M, class R>
  void add_elements(const M* model, const R* reference, size_t n, DType ulp_type);
  void add_finite(double model, double reference, DType ulp_type);
  double max_abs_ = 0, max_rel_ = 0, ulps_ = 0, sum_d2_ = 0, sum_o2_ = 0;
  int64_t count_ = 0, nonfinite_ = 0;
};

// The error of one floating tensor against another.
Error error_of(const Tensor& model, const Tensor& reference, const std::string& what);

// The element types the oracle holds in float64.
bool is_widened(DType t);
bool is_float_tensor(const Value& v);
// A copy of `model` with every widened type held in float64 (see the header comment).
Model widen_model(const Model& model);
void widen_graph(Graph& g);
void widen_function(Function& f);
// Tensors (and sequence items) of a widened type converted to float64; other values unchanged.
Value widen_value(const Value& v);

}  // namespace refeval::accuracy

// GroupNormalization (ONNX 18, 21): X [N, C, ...] viewed as [N, G, rest]; each group normalised
// over its channels and positions: (x - mean) / sqrt(var + epsilon), then scale and bias, one
// per group at opset 18 and one per channel from opset 21 (where stash_type sets the compute type).
#include "decompositions/decompositions.h"
#include "decompositions/normalization_common.h"

namespace refeval::fusion {

void decompose_group_normalization(GraphWriter& w, int64_t opset) {
  using build::attr;
  const Tensor& x = w.sample(0);
  if (x.rank() < 2) w.unsupported("X must be [N, C, ...]");
  const int64_t groups = w.attr_int("num_groups", 0);
  if (groups <= 0 || x.dim(1) % groups != 0) w.unsupported("num_groups must divide the channel count");
  const DType dtype = x.dtype();
  const DType compute = opset >= 21 ? DType(w.attr_int("stash_type", int64_t(DType::Float))) : dtype;
  const std::string grouped = w.op("Reshape", {cast_if(w, w.in(0), dtype, compute), w.ints({x.dim(0), groups, -1})});
  const Normalized n = normalize(w, grouped, compute, {2}, w.attr_float("epsilon", 1e-5f), true);
  std::string y;
  if (opset >= 21) {
    // One scale and bias per channel: back to X's shape, then broadcast over [C, 1, 1, ...].
    std::vector<int64_t> per_channel{x.dim(1)};
    per_channel.resize(x.rank() - 1, 1);
    y = w.op("Reshape", {cast_if(w, n.normalized, compute, dtype), w.ints(x.shape())});
    y = w.op("Mul", {y, w.op("Reshape", {w.in(1), w.ints(per_channel)})});
    y = w.op("Add", {y, w.op("Reshape", {w.in(2), w.ints(per_channel)})});
  } else {
    // One scale and bias per group, applied while X is still [N, G, rest].
    y = w.op("Mul", {n.normalized, w.op("Reshape", {w.in(1), w.ints({groups, 1})})});
    y = w.op("Add", {y, w.op("Reshape", {w.in(2), w.ints({groups, 1})})});
    y = w.op("Reshape", {y, w.ints(x.shape())});
  }
  w.output(0, y);
}

}  // namespace refeval::fusion

// Tile: repeats the input repeats[d] times along each axis (version 1: `tiles` times along one
// `axis`, both inputs). Implemented as an expand over interleaved (repeat, dim) axes.
#include "tensor_common.h"

#include "refeval/registry.h"

namespace refeval::ops {
namespace {

Tensor tile(const Tensor& x, const std::vector<int64_t>& repeats) {
  const size_t rank = x.rank();
  if (repeats.size() != rank) fail_runtime(fmt::format("Tile: {} repeats for an input of rank {}", repeats.size(), rank));
  const std::vector<int64_t> xs = dense_strides(x.shape());
  Shape wide, out;
  std::vector<int64_t> st;
  for (size_t d = 0; d < rank; ++d) {
    if (repeats[d] < 0) fail_runtime(fmt::format("Tile: negative repeat {}", repeats[d]));
    wide.insert(wide.end(), {repeats[d], x.dim(d)});
    st.insert(st.end(), {0, xs[d]});
  }
  const int64_t total = shape_size(wide);  // throws if the product overflows
  for (size_t d = 0; d < rank; ++d) out.push_back(repeats[d] * x.dim(d));
  if (total == 0) return Tensor(x.dtype(), out);
  return strided_view_copy(x, 0, st, wide).reshaped(out);
}

class Tile : public OpRun {
 public:
  using Types = All;
  explicit Tile(const NodeContext& ctx) : v1_(ctx.since_version() < 6) {}
  Values run(const Values& in, RunContext&) override {
    const Tensor& x = input_tensor(in, 0);
    if (!v1_) return {tile(x, to_int64s(input_tensor(in, 1)))};
    const std::vector<int64_t> tiles = to_int64s(input_tensor(in, 1)), axis = to_int64s(input_tensor(in, 2));
    if (tiles.size() != 1 || axis.size() != 1) fail_runtime("Tile-1: tiles and axis must be scalars");
    std::vector<int64_t> repeats(x.rank(), 1);
    repeats[size_t(normalize_axis(axis[0], int64_t(x.rank())))] = tiles[0];
    return {tile(x, repeats)};
  }

 private:
  bool v1_;
};

}  // namespace

void register_tile(Registry& reg) {
  reg.add("", "Tile", {1, 6, 13}, make<Tile>);
}

}  // namespace refeval::ops

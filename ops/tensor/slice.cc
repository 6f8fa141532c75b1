// Slice: numpy-style basic slicing along some axes. Version 1 takes starts/ends/axes as
// attributes; from 10 they are inputs, with optional steps (negative ones walk backwards).
// Starts and ends are clamped as the spec says, so INT64_MAX / INT64_MIN mean "to the end".
#include "tensor_common.h"

#include "refeval/registry.h"

namespace refeval::ops {
namespace {

Tensor slice(const Tensor& x, const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
             const std::optional<std::vector<int64_t>>& axes_in, const std::optional<std::vector<int64_t>>& steps_in) {
  const int64_t rank = int64_t(x.rank());
  const size_t n = starts.size();
  if (ends.size() != n) fail_runtime("Slice: starts and ends have different lengths");
  if (axes_in && axes_in->size() != n) fail_runtime("Slice: axes and starts have different lengths");
  if (steps_in && steps_in->size() != n) fail_runtime("Slice: steps and starts have different lengths");
  Shape out = x.shape();
  const std::vector<int64_t> in_st = dense_strides(x.shape());
  std::vector<int64_t> st = in_st;
  int64_t offset = 0;
  std::vector<bool> seen(size_t(rank), false);
  for (size_t i = 0; i < n; ++i) {
    const int64_t axis = normalize_axis(axes_in ? (*axes_in)[i] : int64_t(i), rank, "Slice axis");
    if (seen[size_t(axis)]) fail_runtime(fmt::format("Slice: axis {} appears twice", axis));
    seen[size_t(axis)] = true;
    const int64_t step = steps_in ? (*steps_in)[i] : 1;
    if (step == 0) fail_runtime("Slice: step cannot be 0");
    const int64_t dim = x.dim(size_t(axis));
    int64_t start = starts[i], end = ends[i];
    if (start < 0) start += dim;
    if (end < 0) end += dim;
    int64_t count;
    if (step > 0) {
      start = std::clamp<int64_t>(start, 0, dim);
      end = std::clamp<int64_t>(end, 0, dim);
      count = end > start ? int64_t((uint64_t(end - start) + uint64_t(step) - 1) / uint64_t(step)) : 0;
    } else if (dim == 0) {
      count = 0;
    } else {
      // The spec clamps start into [0, dim - 1] (numpy would make a start before the
      // beginning an empty slice; the spec text and ONNX shape inference keep element 0).
      start = std::clamp<int64_t>(start, 0, dim - 1);
      end = std::clamp<int64_t>(end, -1, dim - 1);
      // In unsigned arithmetic, so that steps near INT64_MIN / INT64_MAX cannot overflow.
      const uint64_t span = uint64_t(start - end), by = uint64_t(0) - uint64_t(step);
      count = start > end ? int64_t((span + by - 1) / by) : 0;
    }
    out[size_t(axis)] = count;
    if (count > 0) offset += start * in_st[size_t(axis)];
    st[size_t(axis)] = count > 1 ? step * in_st[size_t(axis)] : 0;
  }
  if (shape_size(out) == 0) return Tensor(x.dtype(), out);
  return strided_view_copy(x, offset, st, out);
}

class Slice1 : public OpRun {
 public:
  using Types = All;
  explicit Slice1(const NodeContext& ctx)
      : starts_(ctx.required<std::vector<int64_t>>("starts")),
        ends_(ctx.required<std::vector<int64_t>>("ends")),
        axes_(ctx.optional_attr<std::vector<int64_t>>("axes")) {}
  Values run(const Values& in, RunContext&) override {
    return {slice(input_tensor(in, 0), starts_, ends_, axes_, std::nullopt)};
  }

 private:
  std::vector<int64_t> starts_, ends_;
  std::optional<std::vector<int64_t>> axes_;
};

class Slice10 : public OpRun {
 public:
  using Types = All;
  explicit Slice10(const NodeContext&) {}
  Values run(const Values& in, RunContext&) override {
    std::optional<std::vector<int64_t>> axes, steps;
    if (has_value(in, 3)) axes = to_int64s(input_tensor(in, 3));
    if (has_value(in, 4)) steps = to_int64s(input_tensor(in, 4));
    return {slice(input_tensor(in, 0), to_int64s(input_tensor(in, 1)), to_int64s(input_tensor(in, 2)), axes, steps)};
  }
};

}  // namespace

void register_slice(Registry& reg) {
  reg.add("", "Slice", {1}, make<Slice1>);
  reg.add("", "Slice", {10, 11, 13}, make<Slice10>);
}

}  // namespace refeval::ops

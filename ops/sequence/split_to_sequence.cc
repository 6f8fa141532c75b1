// SplitToSequence: cuts a tensor along `axis` into a sequence of tensors.
//   split omitted: pieces of length 1 (the axis removed when keepdims = 0)
//   split scalar s: pieces of length s, the last one shorter if the length is not a multiple of s
//   split 1-D:     pieces of the given lengths (0 allowed), which must add up to the axis length
#include "refeval/registry.h"
#include "sequence_common.h"

namespace refeval::ops {
namespace {

class SplitToSequence : public OpRun {
 public:
  using Types = All;  // values are moved or passed on, never computed on
  explicit SplitToSequence(const NodeContext& ctx)
      : axis_(ctx.attr<int64_t>("axis", 0)), keepdims_(ctx.attr<int64_t>("keepdims", 1) != 0) {}

  Values run(const Values& in, RunContext&) override {
    const Tensor& x = input_tensor(in, 0);
    if (x.rank() == 0) fail_runtime("cannot split a scalar");
    const size_t axis = size_t(normalize_axis(axis_, int64_t(x.rank())));
    const int64_t dim = x.dim(axis);
    std::vector<int64_t> lengths;
    bool squeeze = false;
    if (!has_value(in, 1)) {
      lengths.assign(size_t(dim), 1);
      squeeze = !keepdims_;
    } else {
      const Tensor& split = input_tensor(in, 1);
      std::vector<int64_t> values;
      if (split.dtype() == DType::Int64) values = split.to_vector<int64_t>();
      else if (split.dtype() == DType::Int32) for (int32_t v : split.to_vector<int32_t>()) values.push_back(v);
      else fail_runtime(fmt::format("split must be int32 or int64, got {}", dtype_short_name(split.dtype())));
      // The spec asks for positive lengths; the 1-D form accepts 0 too, as the ONNX test
      // test_sequence_model8 does (three empty pieces of an empty tensor).
      for (int64_t v : values)
        if (v < (split.rank() == 0 ? 1 : 0)) fail_runtime(fmt::format("split lengths must be positive, got {}", v));
      if (split.rank() == 0) {
        for (int64_t start = 0; start < dim; start += values[0]) lengths.push_back(std::min(values[0], dim - start));
      } else if (split.rank() == 1) {
        int64_t total = 0;
        for (int64_t v : values) total += v;
        if (total != dim) fail_runtime(fmt::format("split lengths add up to {} but axis {} has length {}", total, axis, dim));
        lengths = values;
      } else {
        fail_runtime(fmt::format("split must be a scalar or 1-D, got shape {}", shape_to_string(split.shape())));
      }
    }
    Sequence out{x.dtype(), {}};
    int64_t start = 0;
    for (int64_t len : lengths) {
      out.items.push_back(squeeze ? take_axis(x, axis, start) : slice_axis(x, axis, start, len));
      start += len;
    }
    return {std::move(out)};
  }

 private:
  int64_t axis_;
  bool keepdims_;
};

}  // namespace

void register_split_to_sequence(Registry& reg) { reg.add("", "SplitToSequence", {11, 24}, make<SplitToSequence>); }

}  // namespace refeval::ops

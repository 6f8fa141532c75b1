// Split: cuts a tensor into pieces along an axis. The sizes come from the `split` attribute
// (before 13) or input (from 13, and also an input in version 1); without them the axis is cut into
// equal parts, one per output, or (from 18) into `num_outputs` chunks of ceil(dim / n), the last
// one smaller.
#include "tensor_common.h"

#include "refeval/registry.h"

namespace refeval::ops {
namespace {

class Split : public OpRun {
 public:
  using Types = All;
  explicit Split(const NodeContext& ctx) : version_(ctx.since_version()), outputs_(int64_t(ctx.num_outputs())) {
    axis_ = ctx.attr<int64_t>("axis", 0);
    if (version_ < 13) split_attr_ = ctx.optional_attr<std::vector<int64_t>>("split");
    if (version_ >= 18) {
      num_outputs_ = ctx.optional_attr<int64_t>("num_outputs");
      if (num_outputs_ && *num_outputs_ < 1) ctx.fail("num_outputs must be positive");
      if (num_outputs_ && *num_outputs_ != outputs_) ctx.fail("num_outputs differs from the number of outputs");
      if (num_outputs_ && ctx.has_input(1)) ctx.fail("num_outputs and the split input are mutually exclusive");
    }
  }
  Values run(const Values& in, RunContext&) override {
    const Tensor& x = input_tensor(in, 0);
    const int64_t rank = int64_t(x.rank());
    const int64_t axis = normalize_axis(axis_, rank);
    const int64_t dim = x.dim(size_t(axis));
    std::vector<int64_t> sizes;
    if ((version_ >= 13 || version_ < 2) && has_value(in, 1)) sizes = to_int64s(input_tensor(in, 1));
    else if (split_attr_) sizes = *split_attr_;
    if (!sizes.empty()) {  // an empty split input counts as absent
      if (int64_t(sizes.size()) != outputs_)
        fail_runtime(fmt::format("split has {} entries for {} outputs", sizes.size(), outputs_));
      int64_t total = 0;
      for (int64_t s : sizes) {
        if (s < 0) fail_runtime("split sizes must be non-negative");
        if (__builtin_add_overflow(total, s, &total)) fail_runtime("split sizes overflow");
      }
      if (total != dim) fail_runtime(fmt::format("split sizes add up to {}, the axis has {}", total, dim));
    } else if (num_outputs_) {
      const int64_t n = *num_outputs_, chunk = (dim + n - 1) / n;
      if (chunk * (n - 1) > dim)
        fail_runtime(fmt::format("cannot split an axis of {} into {} chunks", dim, n));
      for (int64_t i = 0; i < n; ++i) sizes.push_back(std::min(chunk, dim - std::min(dim, chunk * i)));
    } else {
      if (version_ >= 18) fail_runtime("Split needs either the split input or the num_outputs attribute");
      if (dim % outputs_ != 0) fail_runtime(fmt::format("cannot split an axis of {} into {} equal parts", dim, outputs_));
      sizes.assign(size_t(outputs_), dim / outputs_);
    }
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= x.dim(size_t(d));
    for (int64_t d = axis + 1; d < rank; ++d) inner *= x.dim(size_t(d));
    Values out;
    int64_t start = 0;
    for (int64_t s : sizes) {
      Shape shape = x.shape();
      shape[size_t(axis)] = s;
      Tensor y(x.dtype(), shape);
      visit_by_width(x.dtype(), [&]<class W>() {
        const W* src = raw_as<W>(x);
        W* dst = raw_as<W>(y);
        for (int64_t o = 0; o < outer; ++o) copy_elems(src + (o * dim + start) * inner, dst + o * s * inner, s * inner);
      });
      out.push_back(y);
      start += s;
    }
    return out;
  }

 private:
  int version_;
  int64_t outputs_, axis_ = 0;
  std::optional<std::vector<int64_t>> split_attr_;
  std::optional<int64_t> num_outputs_;
};

}  // namespace

void register_split(Registry& reg) {
  reg.add("", "Split", {1, 2, 11, 13, 18}, make<Split>);
}

}  // namespace refeval::ops

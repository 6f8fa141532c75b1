// CenterCropPad: crops or zero-pads each chosen axis (all, or `axes`) to the requested size,
// keeping the centre: a crop starts at (dim - size) / 2, a pad puts (size - dim) / 2 before.
#include "tensor_common.h"

#include "refeval/registry.h"

namespace refeval::ops {
namespace {

class CenterCropPad : public OpRun {
 public:
  using Types = All;
  explicit CenterCropPad(const NodeContext& ctx) : axes_(ctx.optional_attr<std::vector<int64_t>>("axes")) {}
  Values run(const Values& in, RunContext&) override {
    const Tensor& x = input_tensor(in, 0);
    const std::vector<int64_t> sizes = to_int64s(input_tensor(in, 1));
    const int64_t rank = int64_t(x.rank());
    std::vector<int64_t> axes;
    if (axes_) {
      for (int64_t a : *axes_) axes.push_back(normalize_axis(a, rank, "CenterCropPad axis"));
    } else {
      for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
    }
    if (sizes.size() != axes.size()) fail_runtime(fmt::format("CenterCropPad: {} sizes for {} axes", sizes.size(), axes.size()));
    Shape out = x.shape(), box = x.shape();
    std::vector<int64_t> src_start(size_t(rank), 0), dst_start(size_t(rank), 0);
    for (size_t i = 0; i < axes.size(); ++i) {
      const size_t d = size_t(axes[i]);
      const int64_t dim = x.dim(d), s = sizes[i];
      if (s < 0) fail_runtime(fmt::format("CenterCropPad: negative size {}", s));
      out[d] = s;
      box[d] = std::min(dim, s);
      if (s < dim) src_start[d] = (dim - s) / 2;
      else dst_start[d] = (s - dim) / 2;
    }
    Tensor y(x.dtype(), out);
    visit_by_width(x.dtype(), [&]<class W>() {
      for_each_box_run(box, x.shape(), src_start, out, dst_start,
                       [&](int64_t so, int64_t dof, int64_t n) { copy_elems(raw_as<W>(x) + so, raw_as<W>(y) + dof, n); });
    });
    return {y};
  }

 private:
  std::optional<std::vector<int64_t>> axes_;
};

}  // namespace

void register_center_crop_pad(Registry& reg) {
  reg.add("", "CenterCropPad", {18}, make<CenterCropPad>);
}

}  // namespace refeval::ops

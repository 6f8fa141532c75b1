// Concat: joins tensors of one element type along an axis (negative from version 11).
#include "tensor_common.h"

#include "refeval/registry.h"

namespace refeval::ops {
namespace {

class Concat : public OpRun {
 public:
  using Types = All;
  explicit Concat(const NodeContext& ctx) {
    // Version 1 defaults the axis to 1; from version 4 it is required.
    axis_ = ctx.since_version() < 4 ? ctx.attr<int64_t>("axis", 1) : ctx.required<int64_t>("axis");
  }
  Values run(const Values& in, RunContext&) override {
    if (in.empty()) fail_runtime("Concat needs at least one input");
    const Tensor& first = input_tensor(in, 0);
    const int64_t rank = int64_t(first.rank());
    if (rank == 0) fail_runtime("Concat of scalars is not allowed");
    const int64_t axis = normalize_axis(axis_, rank);
    Shape out = first.shape();
    out[size_t(axis)] = 0;
    for (size_t k = 0; k < in.size(); ++k) {
      const Tensor& t = input_tensor(in, k);
      if (t.dtype() != first.dtype()) fail_runtime("Concat inputs must have one element type");
      if (int64_t(t.rank()) != rank) fail_runtime("Concat inputs must have one rank");
      for (int64_t d = 0; d < rank; ++d)
        if (d != axis && t.dim(size_t(d)) != first.dim(size_t(d)))
          fail_runtime(fmt::format("Concat: input {} has shape {}, incompatible with {}", k, shape_to_string(t.shape()),
                                   shape_to_string(first.shape())));
      out[size_t(axis)] += t.dim(size_t(axis));
    }
    Tensor y(first.dtype(), out);
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= out[size_t(d)];
    for (int64_t d = axis + 1; d < rank; ++d) inner *= out[size_t(d)];
    const int64_t out_row = out[size_t(axis)] * inner;
    visit_by_width(first.dtype(), [&]<class W>() {
      W* dst = raw_as<W>(y);
      int64_t col = 0;
      for (size_t k = 0; k < in.size(); ++k) {
        const Tensor& t = input_tensor(in, k);
        const W* src = raw_as<W>(t);
        const int64_t row = t.dim(size_t(axis)) * inner;
        for (int64_t o = 0; o < outer; ++o) copy_elems(src + o * row, dst + o * out_row + col, row);
        col += row;
      }
    });
    return {y};
  }

 private:
  int64_t axis_ = 0;
};

}  // namespace

void register_concat(Registry& reg) {
  reg.add("", "Concat", {1, 4, 11, 13}, make<Concat>);
}

}  // namespace refeval::ops

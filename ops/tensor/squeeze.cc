// Squeeze and Unsqueeze: remove or insert size-1 axes. The axes are an attribute before 13 and an
// optional (Squeeze) or required (Unsqueeze) input from 13. Outputs share the input's storage.
#include "tensor_common.h"

#include "refeval/registry.h"

namespace refeval::ops {
namespace {

class Squeeze : public OpRun {
 public:
  using Types = All;
  explicit Squeeze(const NodeContext& ctx) : from_input_(ctx.since_version() >= 13) {
    if (!from_input_) axes_ = ctx.optional_attr<std::vector<int64_t>>("axes");
  }
  Values run(const Values& in, RunContext&) override {
    const Tensor& x = input_tensor(in, 0);
    const int64_t rank = int64_t(x.rank());
    std::optional<std::vector<int64_t>> axes = axes_;
    if (from_input_ && has_value(in, 1)) axes = to_int64s(input_tensor(in, 1));
    std::vector<bool> drop(size_t(rank), false);
    if (axes) {
      for (int64_t a : *axes) {
        const int64_t d = normalize_axis(a, rank, "Squeeze axis");
        if (drop[size_t(d)]) fail_runtime(fmt::format("Squeeze: axis {} appears twice", a));
        if (x.dim(size_t(d)) != 1)
          fail_runtime(fmt::format("Squeeze: axis {} has size {}, not 1", a, x.dim(size_t(d))));
        drop[size_t(d)] = true;
      }
    } else {
      for (int64_t d = 0; d < rank; ++d) drop[size_t(d)] = x.dim(size_t(d)) == 1;
    }
    Shape out;
    for (int64_t d = 0; d < rank; ++d)
      if (!drop[size_t(d)]) out.push_back(x.dim(size_t(d)));
    return {x.reshaped(out)};
  }

 private:
  bool from_input_;
  std::optional<std::vector<int64_t>> axes_;
};

class Unsqueeze : public OpRun {
 public:
  using Types = All;
  explicit Unsqueeze(const NodeContext& ctx) : from_input_(ctx.since_version() >= 13) {
    if (!from_input_) axes_ = ctx.required<std::vector<int64_t>>("axes");
  }
  Values run(const Values& in, RunContext&) override {
    const Tensor& x = input_tensor(in, 0);
    const std::vector<int64_t> axes = from_input_ ? to_int64s(input_tensor(in, 1)) : axes_;
    const int64_t rank = int64_t(x.rank() + axes.size());
    std::vector<bool> insert(size_t(rank), false);
    for (int64_t a : axes) {
      const int64_t d = normalize_axis(a, rank, "Unsqueeze axis");
      if (insert[size_t(d)]) fail_runtime(fmt::format("Unsqueeze: axis {} appears twice", a));
      insert[size_t(d)] = true;
    }
    Shape out;
    size_t k = 0;
    for (int64_t d = 0; d < rank; ++d) out.push_back(insert[size_t(d)] ? 1 : x.dim(k++));
    return {x.reshaped(out)};
  }

 private:
  bool from_input_;
  std::vector<int64_t> axes_;
};

}  // namespace

void register_squeeze(Registry& reg) {
  reg.add("", "Squeeze", {1, 11, 13, 21, 23, 24, 25}, make<Squeeze>);
  reg.add("", "Unsqueeze", {1, 11, 13, 21, 23, 24, 25}, make<Unsqueeze>);
}

}  // namespace refeval::ops

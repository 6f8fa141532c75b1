// Transpose: permutes the axes; perm defaults to reversing them.
#include "tensor_common.h"

#include "refeval/registry.h"

namespace refeval::ops {
namespace {

class Transpose : public OpRun {
 public:
  using Types = All;
  explicit Transpose(const NodeContext& ctx) : perm_(ctx.optional_attr<std::vector<int64_t>>("perm")) {}
  Values run(const Values& in, RunContext&) override {
    const Tensor& x = input_tensor(in, 0);
    const int64_t rank = int64_t(x.rank());
    std::vector<int64_t> perm(size_t(rank), 0);
    if (perm_) {
      if (int64_t(perm_->size()) != rank)
        fail_runtime(fmt::format("perm has {} entries for an input of rank {}", perm_->size(), rank));
      std::vector<bool> seen(size_t(rank), false);
      for (size_t i = 0; i < perm.size(); ++i) {
        const int64_t p = normalize_axis((*perm_)[i], rank, "perm entry");
        if (seen[size_t(p)]) fail_runtime("perm is not a permutation: repeated axis " + std::to_string(p));
        seen[size_t(p)] = true;
        perm[i] = p;
      }
    } else {
      for (int64_t i = 0; i < rank; ++i) perm[size_t(i)] = rank - 1 - i;
    }
    return {transpose(x, perm)};
  }

 private:
  std::optional<std::vector<int64_t>> perm_;
};

}  // namespace

void register_transpose(Registry& reg) {
  reg.add("", "Transpose", {1, 13, 21, 23, 24, 25}, make<Transpose>);
}

}  // namespace refeval::ops

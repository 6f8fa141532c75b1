// ConcatFromSequence: joins the tensors of a sequence along `axis`, or stacks them along a new
// axis inserted at `axis` when new_axis = 1.
#include "refeval/registry.h"
#include "sequence_common.h"

namespace refeval::ops {
namespace {

class ConcatFromSequence : public OpRun {
 public:
  using Types = All;  // values are moved or passed on, never computed on
  explicit ConcatFromSequence(const NodeContext& ctx)
      : axis_(ctx.required<int64_t>("axis")), new_axis_(ctx.attr<int64_t>("new_axis", 0)) {
    if (new_axis_ != 0 && new_axis_ != 1) ctx.fail(fmt::format("new_axis must be 0 or 1, got {}", new_axis_));
  }

  Values run(const Values& in, RunContext&) override {
    const Sequence& s = input_sequence(in, 0);
    if (s.items.empty()) fail_runtime("cannot concatenate an empty sequence (its result shape is unknown)");
    std::vector<Tensor> parts;
    for (const Value& v : s.items) parts.push_back(v.tensor());
    const int64_t rank = int64_t(parts[0].rank());
    if (new_axis_) return {stack_axis(parts, size_t(normalize_axis(axis_, rank + 1)))};
    if (rank == 0) fail_runtime("cannot concatenate scalars without new_axis = 1");
    return {concat_axis(parts, size_t(normalize_axis(axis_, rank)))};
  }

 private:
  int64_t axis_, new_axis_;
};

}  // namespace

void register_concat_from_sequence(Registry& reg) { reg.add("", "ConcatFromSequence", {11}, make<ConcatFromSequence>); }

}  // namespace refeval::ops

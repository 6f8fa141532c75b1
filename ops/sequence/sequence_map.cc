// SequenceMap: runs `body` once per element of the input sequence. Additional inputs that are
// sequences (of the same length) are walked in step; tensors are passed unchanged to every
// iteration. Each body output becomes a sequence of the per-iteration values.
#include "refeval/registry.h"
#include "sequence_common.h"

namespace refeval::ops {
namespace {

class SequenceMap : public OpRun {
 public:
  using Types = All;  // values are moved or passed on, never computed on
  explicit SequenceMap(const NodeContext& ctx) : body_(ctx.subgraph("body")), declared_(body_output_types(ctx, "body")) {
    const size_t body_in = plan_input_names(*body_).size(), body_out = plan_output_names(*body_).size();
    if (body_in != ctx.num_inputs())
      ctx.fail(fmt::format("the body has {} inputs but the node has {}", body_in, ctx.num_inputs()));
    if (body_out != ctx.num_outputs())
      ctx.fail(fmt::format("the body has {} outputs but the node has {}", body_out, ctx.num_outputs()));
    outputs_ = body_out;
  }

  Values run(const Values& in, RunContext& ctx) override {
    const size_t n = input_sequence(in, 0).items.size();
    for (size_t j = 1; j < in.size(); ++j)
      if (in[j].is_sequence() && in[j].sequence().items.size() != n)
        fail_runtime(fmt::format("input {} is a sequence of {} elements, the input sequence has {}", j,
                                 in[j].sequence().items.size(), n));
    std::vector<Sequence> out(outputs_);
    for (size_t k = 0; k < out.size() && k < declared_.size(); ++k)
      if (declared_[k].kind == ValueType::Kind::Tensor) out[k].elem_dtype = declared_[k].dtype;  // kept if empty
    for (size_t i = 0; i < n; ++i) {
      Values body_in;
      for (const Value& v : in) body_in.push_back(v.is_sequence() ? v.sequence().items[i] : v);
      Values r = ctx.run_body(*body_, body_in, fmt::format("body iteration {}", i));
      for (size_t k = 0; k < out.size(); ++k) {
        if (r[k].is_tensor() && out[k].elem_dtype == DType::Undefined) out[k].elem_dtype = r[k].tensor().dtype();
        out[k].items.push_back(std::move(r[k]));
      }
    }
    return Values(out.begin(), out.end());
  }

 private:
  std::shared_ptr<const Plan> body_;
  std::vector<ValueType> declared_;
  size_t outputs_ = 0;
};

}  // namespace

void register_sequence_map(Registry& reg) { reg.add("", "SequenceMap", {17}, make<SequenceMap>); }

}  // namespace refeval::ops

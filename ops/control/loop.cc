// Loop: runs `body` while the trip count M and the condition allow, threading loop-carried values
// through the iterations and stacking per-iteration scan outputs along a new first axis.
//
//   M     cond   runs
//   ""    ""     forever (the body's condition output is ignored)
//   M     ""     M times (the body's condition output is ignored)
//   ""    c      while the condition holds
//   M     c      at most M times, while the condition holds
#include <optional>

#include "control_common.h"
#include "refeval/limits.h"
#include "refeval/registry.h"

namespace refeval::ops {
namespace {

class Loop : public OpRun {
 public:
  using Types = All;  // values are moved or passed on, never computed on
  explicit Loop(const NodeContext& ctx) : body_(ctx.subgraph("body")), declared_(body_output_types(ctx, "body")),
        declared_in_(body_input_types(ctx, "body")) {
    if (ctx.num_inputs() < 2) ctx.fail("Loop needs the inputs M and cond (either may be the empty name)");
    carried_ = ctx.num_inputs() - 2;
    const size_t body_in = plan_input_names(*body_).size(), body_out = plan_output_names(*body_).size();
    if (body_in != carried_ + 2)
      ctx.fail(fmt::format("the body has {} inputs, expected 2 + {} loop-carried values", body_in, carried_));
    if (body_out < carried_ + 1)
      ctx.fail(fmt::format("the body has {} outputs, expected the condition and {} loop-carried values at least", body_out, carried_));
    scans_ = body_out - 1 - carried_;
    outputs_ = ctx.num_outputs();
    if (outputs_ > carried_ + scans_)
      ctx.fail(fmt::format("the node has {} outputs but the body yields {} loop-carried values and {} scan outputs",
                           outputs_, carried_, scans_));
  }

  Values run(const Values& in, RunContext& ctx) override {
    std::optional<int64_t> trip_count;
    if (has_value(in, 0)) {
      const Tensor& m = input_tensor(in, 0);
      if (m.dtype() != DType::Int64 || m.size() != 1)
        fail_runtime(fmt::format("M must be an int64 tensor with one element, got {}:{}", dtype_short_name(m.dtype()),
                                 shape_to_string(m.shape())));
      trip_count = m.data<int64_t>()[0];
    }
    const bool has_cond = has_value(in, 1);
    bool cond = has_cond ? condition_value(input_tensor(in, 1), "the condition") : true;
    const uint64_t cap = loop_iteration_cap();
    if (cap != 0 && trip_count && uint64_t(*trip_count) > cap && *trip_count > 0 && cond)
      fail_iterations(fmt::format("the trip count M = {} exceeds the limit of {} iterations", *trip_count, cap));
    Values carried(in.begin() + 2, in.end());
    std::vector<std::vector<Tensor>> scans(scans_);
    for (int64_t i = 0; (!trip_count || i < *trip_count) && cond; ++i) {
      if (cap != 0 && uint64_t(i) == cap)
        fail_iterations(fmt::format("the loop is still running after {} iterations (the limit)", cap));
      Values body_in{Tensor::scalar<int64_t>(i), Tensor::scalar<bool>(cond)};
      for (size_t k = 0; k < carried_; ++k) body_in.push_back(conform_to(carried[k], declared_in_[2 + k]));
      Values out = ctx.run_body(*body_, body_in, fmt::format("body iteration {}", i));
      if (has_cond) cond = condition_value(out[0].tensor(), "the body's condition output");
      for (size_t k = 0; k < carried_; ++k) carried[k] = std::move(out[1 + k]);
      for (size_t k = 0; k < scans_; ++k) {
        const Value& v = out[1 + carried_ + k];
        if (!v.is_tensor()) fail_runtime(fmt::format("scan output {} must be a tensor, got a {}", k, v.kind_name()));
        scans[k].push_back(v.tensor());
      }
    }
    Values result = std::move(carried);
    for (size_t k = 0; k < scans_ && result.size() < outputs_; ++k) {
      const ValueType declared = 1 + carried_ + k < declared_.size() ? declared_[1 + carried_ + k] : ValueType{};
      result.push_back(scans[k].empty() ? empty_scan_output(declared, k, 0, "Loop") : stack_axis(scans[k], 0));
    }
    result.resize(outputs_);
    return result;
  }

 private:
  // A resource error: the engine adds the node's name and op type.
  [[noreturn]] static void fail_iterations(const std::string& what) {
    throw Error(ErrorKind::Resource, what + "; raise it with --max-loop-iterations (0: no limit)");
  }

  std::shared_ptr<const Plan> body_;
  std::vector<ValueType> declared_, declared_in_;
  size_t carried_ = 0, scans_ = 0, outputs_ = 0;
};

}  // namespace

void register_loop(Registry& reg) { reg.add("", "Loop", {1, 11, 13, 16, 19, 21, 23, 24, 25}, make<Loop>); }

}  // namespace refeval::ops

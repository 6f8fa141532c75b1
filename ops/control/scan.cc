// Scan (opset 9 and later): iterates `body` over slices of the scan inputs taken along their scan
// axes, threading state variables, and joins the per-iteration scan outputs along a new axis.
//
//   inputs:  N initial states, then M scan inputs (M = num_scan_inputs)
//   body:    (N states, M slices) -> (N states, K scan output elements)
//   outputs: N final states, then K scan outputs
// A direction of 1 walks a scan input backwards, or fills a scan output from its end.
#include "control_common.h"
#include "refeval/registry.h"

namespace refeval::ops {
namespace {

std::vector<int64_t> per_scan(const NodeContext& ctx, const char* name, size_t count, bool directions) {
  auto v = ctx.attr<std::vector<int64_t>>(name, {});
  if (v.empty()) return std::vector<int64_t>(count, 0);
  if (v.size() != count) ctx.fail(fmt::format("{} has {} entries, expected {}", name, v.size(), count));
  if (directions)
    for (int64_t d : v)
      if (d != 0 && d != 1) ctx.fail(fmt::format("{} must hold 0 (forward) or 1 (reverse), got {}", name, d));
  return v;
}

class Scan : public OpRun {
 public:
  using Types = All;  // values are moved or passed on, never computed on
  explicit Scan(const NodeContext& ctx) : body_(ctx.subgraph("body")), declared_(body_output_types(ctx, "body")) {
    const int64_t m = ctx.required<int64_t>("num_scan_inputs");
    if (m < 1 || size_t(m) > ctx.num_inputs())
      ctx.fail(fmt::format("num_scan_inputs is {} but the node has {} inputs", m, ctx.num_inputs()));
    scan_inputs_ = size_t(m);
    states_ = ctx.num_inputs() - scan_inputs_;
    const size_t body_in = plan_input_names(*body_).size(), body_out = plan_output_names(*body_).size();
    if (body_in != states_ + scan_inputs_)
      ctx.fail(fmt::format("the body has {} inputs, expected {} states + {} scan inputs", body_in, states_, scan_inputs_));
    if (body_out < states_) ctx.fail(fmt::format("the body has {} outputs, fewer than the {} states", body_out, states_));
    scan_outputs_ = body_out - states_;
    if (ctx.num_outputs() > states_ + scan_outputs_)
      ctx.fail(fmt::format("the node has {} outputs but the body yields {}", ctx.num_outputs(), body_out));
    outputs_ = ctx.num_outputs();
    in_axes_ = per_scan(ctx, "scan_input_axes", scan_inputs_, false);
    in_dirs_ = per_scan(ctx, "scan_input_directions", scan_inputs_, true);
    out_axes_ = per_scan(ctx, "scan_output_axes", scan_outputs_, false);
    out_dirs_ = per_scan(ctx, "scan_output_directions", scan_outputs_, true);
  }

  Values run(const Values& in, RunContext& ctx) override {
    Values states(in.begin(), in.begin() + std::ptrdiff_t(states_));
    std::vector<Tensor> xs;
    std::vector<size_t> axes;
    int64_t length = -1;
    for (size_t j = 0; j < scan_inputs_; ++j) {
      xs.push_back(input_tensor(in, states_ + j));
      axes.push_back(size_t(normalize_axis(in_axes_[j], int64_t(xs[j].rank()), "scan_input_axes entry")));
      const int64_t len = xs[j].dim(axes[j]);
      if (length >= 0 && len != length)
        fail_runtime(fmt::format("scan input {} has {} elements along its scan axis, scan input 0 has {}", j, len, length));
      length = len;
    }
    std::vector<std::vector<Tensor>> scans(scan_outputs_);
    for (int64_t t = 0; t < length; ++t) {
      Values body_in = states;
      for (size_t j = 0; j < scan_inputs_; ++j) body_in.push_back(take_axis(xs[j], axes[j], in_dirs_[j] ? length - 1 - t : t));
      Values out = ctx.run_body(*body_, body_in, fmt::format("body iteration {}", t));
      for (size_t k = 0; k < states_; ++k) states[k] = std::move(out[k]);
      for (size_t k = 0; k < scan_outputs_; ++k) scans[k].push_back(out[states_ + k].tensor());
    }
    Values result = std::move(states);
    for (size_t k = 0; k < scan_outputs_ && result.size() < outputs_; ++k) {
      auto& parts = scans[k];
      if (parts.empty()) {
        const ValueType declared = states_ + k < declared_.size() ? declared_[states_ + k] : ValueType{};
        result.push_back(empty_scan_output(declared, k, out_axes_[k], "Scan"));
        continue;
      }
      if (out_dirs_[k]) std::reverse(parts.begin(), parts.end());
      const int64_t axis = normalize_axis(out_axes_[k], int64_t(parts[0].rank()) + 1, "scan_output_axes entry");
      result.push_back(stack_axis(parts, size_t(axis)));
    }
    result.resize(outputs_);
    return result;
  }

 private:
  std::shared_ptr<const Plan> body_;
  std::vector<ValueType> declared_;
  size_t scan_inputs_ = 0, states_ = 0, scan_outputs_ = 0, outputs_ = 0;
  std::vector<int64_t> in_axes_, in_dirs_, out_axes_, out_dirs_;
};

}  // namespace

void register_scan(Registry& reg) { reg.add("", "Scan", {9, 11, 16, 19, 21, 23, 24, 25}, make<Scan>); }

}  // namespace refeval::ops

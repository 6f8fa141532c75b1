// Scan-8: the batched form. Every state and scan input carries a leading batch axis; scan inputs
// are [batch, sequence, ...]. Each batch entry is scanned on its own, over its first
// sequence_lens[b] elements (all of them when sequence_lens is omitted); scan outputs are
// [batch, max sequence, ...], in iteration order, zero-filled past a shorter sequence.
#include "control_common.h"
#include "refeval/registry.h"

namespace refeval::ops {
namespace {

class Scan8 : public OpRun {
 public:
  using Types = All;  // values are moved or passed on, never computed on
  explicit Scan8(const NodeContext& ctx) : body_(ctx.subgraph("body")), declared_(body_output_types(ctx, "body")) {
    const int64_t m = ctx.required<int64_t>("num_scan_inputs");
    if (m < 1 || size_t(m) + 1 > ctx.num_inputs())
      ctx.fail(fmt::format("num_scan_inputs is {} but the node has {} inputs after sequence_lens", m, ctx.num_inputs() - 1));
    scan_inputs_ = size_t(m);
    states_ = ctx.num_inputs() - 1 - scan_inputs_;
    const size_t body_in = plan_input_names(*body_).size(), body_out = plan_output_names(*body_).size();
    if (body_in != states_ + scan_inputs_)
      ctx.fail(fmt::format("the body has {} inputs, expected {} states + {} scan inputs", body_in, states_, scan_inputs_));
    if (body_out < states_) ctx.fail(fmt::format("the body has {} outputs, fewer than the {} states", body_out, states_));
    scan_outputs_ = body_out - states_;
    outputs_ = ctx.num_outputs();
    if (outputs_ > body_out) ctx.fail(fmt::format("the node has {} outputs but the body yields {}", outputs_, body_out));
    dirs_ = ctx.attr<std::vector<int64_t>>("directions", {});
    if (dirs_.empty()) dirs_.assign(scan_inputs_, 0);
    if (dirs_.size() != scan_inputs_) ctx.fail(fmt::format("directions has {} entries, expected {}", dirs_.size(), scan_inputs_));
    for (int64_t d : dirs_)
      if (d != 0 && d != 1) ctx.fail(fmt::format("directions must hold 0 (forward) or 1 (reverse), got {}", d));
  }

  Values run(const Values& in, RunContext& ctx) override {
    std::vector<Tensor> all;  // states, then scan inputs
    for (size_t j = 1; j < in.size(); ++j) all.push_back(input_tensor(in, j));
    const int64_t batch = all[0].rank() ? all[0].dim(0) : -1;
    for (size_t j = 0; j < all.size(); ++j)
      if (all[j].rank() < (j < states_ ? 1u : 2u) || all[j].dim(0) != batch)
        fail_runtime(fmt::format("input {} has shape {}; every input needs the batch axis of size {} (and scan inputs a "
                                 "sequence axis)", j + 1, shape_to_string(all[j].shape()), batch));
    const int64_t max_len = all[states_].dim(1);
    for (size_t j = states_; j < all.size(); ++j)
      if (all[j].dim(1) != max_len)
        fail_runtime(fmt::format("scan inputs have sequence lengths {} and {}", max_len, all[j].dim(1)));
    std::vector<int64_t> lens(size_t(batch), max_len);
    if (has_value(in, 0)) {
      const Tensor& sl = input_tensor(in, 0);
      if (sl.dtype() != DType::Int64 || sl.size() != batch)
        fail_runtime(fmt::format("sequence_lens must be int64 with {} entries", batch));
      lens = sl.to_vector<int64_t>();
      for (int64_t l : lens)
        if (l < 0 || l > max_len) fail_runtime(fmt::format("sequence_lens entry {} is outside [0, {}]", l, max_len));
    }
    std::vector<std::vector<Tensor>> states_by_batch(states_);
    std::vector<std::vector<std::vector<Tensor>>> scans(scan_outputs_, std::vector<std::vector<Tensor>>(size_t(batch)));
    for (int64_t b = 0; b < batch; ++b) {
      Values states;
      for (size_t k = 0; k < states_; ++k) states.push_back(take_axis(all[k], 0, b));
      for (int64_t t = 0; t < lens[size_t(b)]; ++t) {
        Values body_in = states;
        for (size_t j = 0; j < scan_inputs_; ++j) {
          const int64_t pos = dirs_[j] ? lens[size_t(b)] - 1 - t : t;
          body_in.push_back(take_axis(take_axis(all[states_ + j], 0, b), 0, pos));
        }
        Values out = ctx.run_body(*body_, body_in, fmt::format("body batch {} iteration {}", b, t));
        for (size_t k = 0; k < states_; ++k) states[k] = std::move(out[k]);
        for (size_t k = 0; k < scan_outputs_; ++k) scans[k][size_t(b)].push_back(out[states_ + k].tensor());
      }
      for (size_t k = 0; k < states_; ++k) states_by_batch[k].push_back(states[k].tensor());
    }
    Values result;
    for (size_t k = 0; k < states_; ++k) result.push_back(batch == 0 ? all[k] : stack_axis(states_by_batch[k], 0));
    for (size_t k = 0; k < scan_outputs_ && result.size() < outputs_; ++k) result.push_back(join(scans[k], batch, max_len, k));
    result.resize(outputs_);
    return result;
  }

 private:
  // [batch, max_len, element...], zero past each batch entry's own length.
  Tensor join(const std::vector<std::vector<Tensor>>& per_batch, int64_t batch, int64_t max_len, size_t k) const {
    const Tensor* sample = nullptr;
    for (const auto& v : per_batch)
      if (!v.empty()) { sample = &v[0]; break; }
    DType dtype;
    Shape elem;
    if (sample) {
      dtype = sample->dtype();
      elem = sample->shape();
    } else {
      const ValueType declared = states_ + k < declared_.size() ? declared_[states_ + k] : ValueType{};
      const Tensor empty = empty_scan_output(declared, k, 0, "Scan");
      dtype = empty.dtype();
      elem.assign(empty.shape().begin() + 1, empty.shape().end());
    }
    Shape shape{batch, max_len};
    shape.insert(shape.end(), elem.begin(), elem.end());
    Tensor out(dtype, shape);
    const int64_t n = shape_size(elem);
    for (int64_t b = 0; b < batch; ++b)
      for (size_t t = 0; t < per_batch[size_t(b)].size(); ++t) {
        const Tensor& e = per_batch[size_t(b)][t];
        if (e.dtype() != dtype || e.shape() != elem)
          fail_runtime(fmt::format("scan output {} changes from {}:{} to {}:{}", k, dtype_short_name(dtype), shape_to_string(elem),
                                   dtype_short_name(e.dtype()), shape_to_string(e.shape())));
        copy_elements(e, 0, out, (b * max_len + int64_t(t)) * n, n);
      }
    return out;
  }

  std::shared_ptr<const Plan> body_;
  std::vector<ValueType> declared_;
  size_t scan_inputs_ = 0, states_ = 0, scan_outputs_ = 0, outputs_ = 0;
  std::vector<int64_t> dirs_;
};

}  // namespace

void register_scan8(Registry& reg) { reg.add("", "Scan", {8}, make<Scan8>); }

}  // namespace refeval::ops

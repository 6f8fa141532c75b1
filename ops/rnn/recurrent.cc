// RNN, GRU and LSTM: one class each over the shared recurrence (rnn_impl.cc). Inputs X, W, R,
// B, sequence_lens, initial_h (, initial_c, P); outputs Y, Y_h (, Y_c). Layout 1 (batch first)
// exists from version 14; GRU's linear_before_reset from version 3. Constant W and R are packed
// when the node is made (ConstantWeights).
#include "refeval/registry.h"
#include "rnn_common.h"

namespace refeval::ops {
namespace {

template <CellKind K>
class Recurrent : public OpRun {
 public:
  using Types = Floats;
  explicit Recurrent(const NodeContext& ctx)
      : cfg_(read_recurrent_config(ctx, K)), weights_(ConstantWeights::make(ctx, cfg_)) {}
  Values run(const Values& in, RunContext&) override { return run_recurrent(cfg_, in, weights_.get()); }

 private:
  RecurrentConfig cfg_;
  std::unique_ptr<const ConstantWeights> weights_;
};

}  // namespace

void register_recurrent(Registry& reg) {
  reg.add("", "RNN", {1, 7, 14, 22}, make<Recurrent<CellKind::Rnn>>);
  reg.add("", "GRU", {1, 3, 7, 14, 22}, make<Recurrent<CellKind::Gru>>);
  reg.add("", "LSTM", {1, 7, 14, 22}, make<Recurrent<CellKind::Lstm>>);
}

}  // namespace refeval::ops

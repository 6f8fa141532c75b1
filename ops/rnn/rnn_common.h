// Helpers of the rnn family: the activation functions named by the `activations` attribute of
// RNN, GRU and LSTM, the attributes the three share, and the one recurrence driver they run on.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "../math/vector_math.h"

#include "refeval/op_run.h"

namespace refeval::ops {

// One activation of the `activations` list with its alpha and beta (spec defaults applied).
struct Activation {
  enum class Kind { Relu, Tanh, Sigmoid, Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign, Softplus };
  Kind kind = Kind::Tanh;
  double alpha = 0, beta = 0;

  // The activation over n values in place, one loop per kind (the kind is chosen once, never per
  // value). Tanh (float and double) and float Sigmoid go through the vector math library
  // (ops/math/vector_math.h), whose result for a value does not depend on where it sits.
  template <class C>
  void apply(C* x, int64_t n) const {
    const C a = C(alpha), b = C(beta);
    switch (kind) {
      case Kind::Relu:
        for (int64_t i = 0; i < n; ++i) x[i] = x[i] > C(0) ? x[i] : C(0);
        return;
      case Kind::Tanh: return tanh_of(x, n);
      case Kind::Sigmoid:
        if constexpr (std::is_same_v<C, float>) {
          for (int64_t i = 0; i < n; ++i) x[i] = -x[i];
          exp_floats(x, x, n);
          for (int64_t i = 0; i < n; ++i) x[i] = 1.0f / (1.0f + x[i]);
        } else {
          for (int64_t i = 0; i < n; ++i) x[i] = C(1) / (C(1) + std::exp(-x[i]));
        }
        return;
      case Kind::Affine:
        for (int64_t i = 0; i < n; ++i) x[i] = a * x[i] + b;
        return;
      case Kind::LeakyRelu:
        for (int64_t i = 0; i < n; ++i) x[i] = x[i] >= C(0) ? x[i] : a * x[i];
        return;
      case Kind::ThresholdedRelu:
        for (int64_t i = 0; i < n; ++i) x[i] = x[i] > a ? x[i] : C(0);
        return;
      case Kind::ScaledTanh:
        for (int64_t i = 0; i < n; ++i) x[i] = b * x[i];
        tanh_of(x, n);
        for (int64_t i = 0; i < n; ++i) x[i] = a * x[i];
        return;
      case Kind::HardSigmoid:
        for (int64_t i = 0; i < n; ++i) x[i] = std::max(C(0), std::min(C(1), a * x[i] + b));
        return;
      case Kind::Elu:
        for (int64_t i = 0; i < n; ++i) x[i] = x[i] >= C(0) ? x[i] : a * (std::exp(x[i]) - C(1));
        return;
      case Kind::Softsign:
        for (int64_t i = 0; i < n; ++i) x[i] = x[i] / (C(1) + std::abs(x[i]));
        return;
      case Kind::Softplus:  // log(1 + e^x), as x + log(1 + e^-x) for x > 0 where e^x would overflow
        for (int64_t i = 0; i < n; ++i) x[i] = x[i] > C(0) ? x[i] + std::log1p(std::exp(-x[i])) : std::log1p(std::exp(x[i]));
        return;
    }
  }

 private:
  template <class C>
  static void tanh_of(C* x, int64_t n) {
    if constexpr (std::is_same_v<C, float>) tanh_floats(x, x, n);
    else tanh_doubles(x, x, n);
  }
};

enum class CellKind { Rnn, Gru, Lstm };

// The attributes of one RNN / GRU / LSTM node, read and checked at plan time.
struct RecurrentConfig {
  CellKind cell = CellKind::Rnn;
  int64_t gates = 1;          // gate blocks in W and R: 1 (RNN), 3 (GRU: z r h), 4 (LSTM: i o f c)
  int64_t hidden_size = -1;   // -1: taken from R
  int num_directions = 1;
  bool reverse = false;       // direction "reverse" (bidirectional runs both)
  std::optional<double> clip;
  std::vector<Activation> activations;  // per direction: f (, g (, h)), directions one after the other
  bool linear_before_reset = false;     // GRU
  bool input_forget = false;            // LSTM
  int64_t layout = 0;
};

// A weight M (N x K) packed for the products out (rows x N) = h (rows x K) M^T
// (recurrent_product.cc): R for the product of every step, W for the input projection of every
// step at once. Each element's value depends on K and its inputs only.
template <class C>
class PackedRecurrent {
 public:
  PackedRecurrent(const C* M, int64_t N, int64_t K);
  void multiply(int64_t rows, const C* h, C* out) const;

 private:
  int64_t N_, K_, panels_ = 0;
  Tensor data_;  // a tensor's buffer: reused from run to run (see Tensor), where a vector's pages fault in anew
};

// One direction's weights packed: W (every gate) for X W^T, R for the step's product (every gate;
// GRU: z and r, its h gate apart in r_h, since (r . H_{t-1}) R_h^T waits for r).
template <class C>
struct DirectionWeights {
  PackedRecurrent<C> w, r;
  std::optional<PackedRecurrent<C>> r_h;
};

// W (D x GH x I) and R (D x GH x H) of every direction packed.
template <class C>
std::vector<DirectionWeights<C>> pack_directions(const RecurrentConfig& cfg, const C* W, const C* R, int64_t D,
                                                 int64_t I, int64_t H);

// W and R packed once, when the node is made, if both are initializers of float or double (a
// session's constants: ONNX Runtime packs them at load too); run_recurrent then uses these panels
// while it is given those very tensors. It holds the tensors, so their memory cannot go to
// another tensor while the panels are keyed by its address.
class ConstantWeights {
 public:
  static std::unique_ptr<const ConstantWeights> make(const NodeContext& ctx, const RecurrentConfig& cfg);
  // The panels of W and R when they are these tensors in compute type C, else null.
  template <class C>
  const std::vector<DirectionWeights<C>>* get(const Tensor& w, const Tensor& r) const;

 private:
  Tensor w_, r_;
  std::vector<DirectionWeights<float>> floats_;
  std::vector<DirectionWeights<double>> doubles_;
};

// Reads every attribute of the node for its since-version (1, 3 (GRU), 7, 14, 22).
RecurrentConfig read_recurrent_config(const NodeContext& ctx, CellKind cell);

// Runs the recurrence: inputs X, W, R, B, sequence_lens, initial_h (, initial_c, P for LSTM);
// returns Y, Y_h (, Y_c). `constant`: W and R packed when the node was made (or null).
Values run_recurrent(const RecurrentConfig& cfg, const Values& in, const ConstantWeights* constant);

}  // namespace refeval::ops

// The recurrence shared by RNN, GRU and LSTM. The input projection of every time step is one
// GEMM per direction (Eigen, through the linalg family); the recurrent projection is one GEMM
// per step. Sequences shorter than seq_length (sequence_lens) stop at their own end: their Y
// rows past it stay zero and their last state is the one after their own last step.
#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "../linalg/linalg_common.h"
#include "refeval/compute_vector.h"
#include "refeval/dispatch.h"
#include "rnn_common.h"

namespace refeval::ops {
namespace {

Activation make_activation(const NodeContext& ctx, const std::string& name, const std::vector<float>& alphas,
                           const std::vector<float>& betas, size_t& ai, size_t& bi) {
  std::string n = name;
  for (char& ch : n) ch = char(std::tolower(static_cast<unsigned char>(ch)));
  using K = Activation::Kind;
  struct Entry { const char* name; K kind; int params; double alpha, beta; };
  static const Entry table[] = {
      {"relu", K::Relu, 0, 0, 0},           {"tanh", K::Tanh, 0, 0, 0},
      {"sigmoid", K::Sigmoid, 0, 0, 0},     {"affine", K::Affine, 2, 1.0, 0.0},
      {"leakyrelu", K::LeakyRelu, 1, 0.01, 0}, {"thresholdedrelu", K::ThresholdedRelu, 1, 1.0, 0},
      {"scaledtanh", K::ScaledTanh, 2, 1.0, 1.0}, {"hardsigmoid", K::HardSigmoid, 2, 0.2, 0.5},
      {"elu", K::Elu, 1, 1.0, 0},            {"softsign", K::Softsign, 0, 0, 0},
      {"softplus", K::Softplus, 0, 0, 0},
  };
  for (const Entry& e : table) {
    if (n != e.name) continue;
    Activation a{e.kind, e.alpha, e.beta};
    if (e.params >= 1 && ai < alphas.size()) a.alpha = alphas[ai++];
    if (e.params >= 2 && bi < betas.size()) a.beta = betas[bi++];
    return a;
  }
  ctx.fail(fmt::format("unknown activation function '{}'", name));
}

void check_shape(const Tensor& t, const Shape& want, const char* name) {
  if (t.shape() != want)
    fail_runtime(fmt::format("{} has shape {}, expected {}", name, shape_to_string(t.shape()), shape_to_string(want)));
}

// Swaps the first two axes of a [a, b, rest] array (layout 1 <-> layout 0).
template <class C>
std::vector<C> swap01(const std::vector<C>& v, int64_t a, int64_t b, int64_t rest) {
  std::vector<C> out(v.size());
  for (int64_t i = 0; i < a; ++i)
    for (int64_t j = 0; j < b; ++j)
      std::copy_n(v.begin() + (i * b + j) * rest, rest, out.begin() + (j * a + i) * rest);
  return out;
}

template <class C>
Values run_typed(const RecurrentConfig& cfg, const Values& in, DType dtype) {
  const bool lstm = cfg.cell == CellKind::Lstm, gru = cfg.cell == CellKind::Gru;
  const Tensor& x = input_tensor(in, 0);
  const Tensor& w = input_tensor(in, 1);
  const Tensor& r = input_tensor(in, 2);
  if (x.rank() != 3) fail_runtime(fmt::format("X must have rank 3, got shape {}", shape_to_string(x.shape())));
  if (w.rank() != 3 || r.rank() != 3) fail_runtime("W and R must have rank 3");
  const int64_t D = cfg.num_directions, G = cfg.gates;
  const int64_t S = cfg.layout == 0 ? x.dim(0) : x.dim(1), B = cfg.layout == 0 ? x.dim(1) : x.dim(0);
  const int64_t I = x.dim(2);
  const int64_t H = cfg.hidden_size >= 0 ? cfg.hidden_size : r.dim(2);
  const int64_t GH = G * H;
  check_shape(w, {D, GH, I}, "W");
  check_shape(r, {D, GH, H}, "R");
  for (size_t i = 1; i < in.size(); ++i)
    if (has_value(in, i) && input_tensor(in, i).dtype() != x.dtype() && i != 4)
      fail_runtime("X, W, R, B, initial states and P must have the same element type");

  std::vector<C> X = to_compute<C>(x), W = to_compute<C>(w), R = to_compute<C>(r);
  if (cfg.layout == 1) X = swap01(X, B, S, I);
  std::vector<C> Bias(size_t(D * 2 * GH), C(0));
  if (has_value(in, 3)) { check_shape(input_tensor(in, 3), {D, 2 * GH}, "B"); Bias = to_compute<C>(input_tensor(in, 3)); }
  std::vector<int64_t> lens(size_t(B), S);
  if (has_value(in, 4)) {
    const Tensor& sl = input_tensor(in, 4);
    check_shape(sl, {B}, "sequence_lens");
    if (sl.dtype() != DType::Int32) fail_runtime("sequence_lens must be int32");
    for (int64_t b = 0; b < B; ++b) {
      lens[size_t(b)] = sl.data<int32_t>()[b];
      if (lens[size_t(b)] < 0 || lens[size_t(b)] > S)
        fail_runtime(fmt::format("sequence_lens[{}] = {} is outside [0, {}]", b, lens[size_t(b)], S));
    }
  }
  const Shape state_shape = cfg.layout == 0 ? Shape{D, B, H} : Shape{B, D, H};
  auto read_state = [&](size_t i, const char* name) {
    std::vector<C> v(size_t(D * B * H), C(0));
    if (!has_value(in, i)) return v;
    check_shape(input_tensor(in, i), state_shape, name);
    v = to_compute<C>(input_tensor(in, i));
    return cfg.layout == 1 ? swap01(v, B, D, H) : v;
  };
  std::vector<C> H0 = read_state(5, "initial_h"), C0 = lstm ? read_state(6, "initial_c") : std::vector<C>{};
  std::vector<C> P(size_t(D * 3 * H), C(0));
  if (lstm && has_value(in, 7)) { check_shape(input_tensor(in, 7), {D, 3 * H}, "P"); P = to_compute<C>(input_tensor(in, 7)); }

  std::vector<C> Y(size_t(S * D * B * H), C(0)), Yh(size_t(D * B * H)), Yc(lstm ? size_t(D * B * H) : 0);
  const size_t nact = lstm ? 3 : gru ? 2 : 1;
  auto clip = [&](C v) { return cfg.clip ? std::clamp(v, C(-*cfg.clip), C(*cfg.clip)) : v; };
  std::vector<C> xw(size_t(S * B * GH)), hr(size_t(B * GH)), rh(size_t(B * H)), rhr(size_t(B * H));
  std::vector<C> gate(lstm ? size_t(4 * H) : 0);  // one batch row's i, f, c, o gates during a step
  for (int64_t d = 0; d < D; ++d) {
    const bool rev = D == 2 ? d == 1 : cfg.reverse;
    const C* Wd = W.data() + d * GH * I;
    const C* Rd = R.data() + d * GH * H;
    const C* Wb = Bias.data() + d * 2 * GH;
    const C* Rb = Wb + GH;
    const C* Pd = P.data() + d * 3 * H;
    const Activation& f = cfg.activations[size_t(d) * nact];
    const Activation& g = cfg.activations[size_t(d) * nact + (nact > 1 ? 1 : 0)];
    const Activation& h_act = cfg.activations[size_t(d) * nact + (nact > 2 ? 2 : 0)];
    gemm(false, true, S * B, GH, I, X.data(), Wd, xw.data(), false);
    std::vector<C> h(H0.begin() + d * B * H, H0.begin() + (d + 1) * B * H);
    std::vector<C> c = lstm ? std::vector<C>(C0.begin() + d * B * H, C0.begin() + (d + 1) * B * H) : std::vector<C>{};
    for (int64_t step = 0; step < S; ++step) {
      gemm(false, true, B, GH, H, h.data(), Rd, hr.data(), false);
      auto time_of = [&](int64_t b) { return rev ? lens[size_t(b)] - 1 - step : step; };
      if (gru && !cfg.linear_before_reset) {  // (r . H_{t-1}) R_h^T needs r of every batch first
        for (int64_t b = 0; b < B; ++b) {
          if (step >= lens[size_t(b)]) { std::fill_n(rh.begin() + b * H, H, C(0)); continue; }
          const C* xr = xw.data() + (time_of(b) * B + b) * GH;
          for (int64_t j = 0; j < H; ++j) {
            const C rt = f(clip(xr[H + j] + hr[size_t(b * GH + H + j)] + Wb[H + j] + Rb[H + j]));
            rh[size_t(b * H + j)] = rt * h[size_t(b * H + j)];
          }
        }
        gemm(false, true, B, H, H, rh.data(), Rd + 2 * H * H, rhr.data(), false);
      }
      for (int64_t b = 0; b < B; ++b) {
        if (step >= lens[size_t(b)]) continue;
        const int64_t t = time_of(b);
        const C* xg = xw.data() + (t * B + b) * GH;
        const C* hg = hr.data() + b * GH;
        C* hb = h.data() + b * H;
        if (lstm) {  // gate by gate over the H units, each activation applied to a whole gate at once
          C* cb = c.data() + b * H;
          C *gi = gate.data(), *gf = gi + H, *gc = gf + H, *go = gc + H;
          auto pre = [&](int64_t k, int64_t j) { return xg[k * H + j] + hg[k * H + j] + Wb[k * H + j] + Rb[k * H + j]; };
          for (int64_t j = 0; j < H; ++j) {
            gi[j] = clip(pre(0, j) + Pd[j] * cb[j]);
            gf[j] = clip(pre(2, j) + Pd[2 * H + j] * cb[j]);
            gc[j] = clip(pre(3, j));
          }
          f.apply(gi, H);
          if (cfg.input_forget) for (int64_t j = 0; j < H; ++j) gf[j] = C(1) - gi[j];
          else f.apply(gf, H);
          g.apply(gc, H);
          for (int64_t j = 0; j < H; ++j) {
            cb[j] = gf[j] * cb[j] + gi[j] * gc[j];
            go[j] = clip(pre(1, j) + Pd[H + j] * cb[j]);
            gc[j] = clip(cb[j]);
          }
          f.apply(go, H);
          h_act.apply(gc, H);
          for (int64_t j = 0; j < H; ++j) hb[j] = go[j] * gc[j];
          std::copy_n(hb, H, Y.begin() + ((t * D + d) * B + b) * H);
          continue;
        }
        for (int64_t j = 0; j < H; ++j) {
          if (cfg.cell == CellKind::Rnn) {
            hb[j] = f(clip(xg[j] + hg[j] + Wb[j] + Rb[j]));
          } else if (gru) {
            const C z = f(clip(xg[j] + hg[j] + Wb[j] + Rb[j]));
            C pre;
            if (cfg.linear_before_reset) {
              const C rt = f(clip(xg[H + j] + hg[H + j] + Wb[H + j] + Rb[H + j]));
              pre = xg[2 * H + j] + rt * (hg[2 * H + j] + Rb[2 * H + j]) + Wb[2 * H + j];
            } else {
              pre = xg[2 * H + j] + rhr[size_t(b * H + j)] + Rb[2 * H + j] + Wb[2 * H + j];
            }
            const C ht = g(clip(pre));
            hb[j] = (C(1) - z) * ht + z * hb[j];
          }
        }
        std::copy_n(hb, H, Y.begin() + ((t * D + d) * B + b) * H);
      }
    }
    std::copy(h.begin(), h.end(), Yh.begin() + d * B * H);
    if (lstm) std::copy(c.begin(), c.end(), Yc.begin() + d * B * H);
  }
  Values out;
  if (cfg.layout == 0) {
    Tensor ty(dtype, {S, D, B, H});
    write_compute(ty, Y);
    out.push_back(ty);
  } else {  // [S, D, B, H] -> [B, S, D, H]
    std::vector<C> y1(Y.size());
    for (int64_t s = 0; s < S; ++s)
      for (int64_t d = 0; d < D; ++d)
        for (int64_t b = 0; b < B; ++b)
          std::copy_n(Y.begin() + ((s * D + d) * B + b) * H, H, y1.begin() + ((b * S + s) * D + d) * H);
    Tensor ty(dtype, {B, S, D, H});
    write_compute(ty, y1);
    out.push_back(ty);
  }
  auto state_out = [&](const std::vector<C>& v) {
    Tensor t(dtype, state_shape);
    write_compute(t, cfg.layout == 1 ? swap01(v, D, B, H) : v);
    return t;
  };
  out.push_back(state_out(Yh));
  if (lstm) out.push_back(state_out(Yc));
  return out;
}

}  // namespace

RecurrentConfig read_recurrent_config(const NodeContext& ctx, CellKind cell) {
  RecurrentConfig cfg;
  cfg.cell = cell;
  const int v = ctx.since_version();
  cfg.gates = cell == CellKind::Rnn ? 1 : cell == CellKind::Gru ? 3 : 4;
  cfg.hidden_size = ctx.attr<int64_t>("hidden_size", -1);
  if (ctx.has_attr("hidden_size") && cfg.hidden_size <= 0) ctx.fail("hidden_size must be positive");
  const std::string dir = ctx.attr<std::string>("direction", "forward");
  if (dir == "bidirectional") cfg.num_directions = 2;
  else if (dir == "reverse") cfg.reverse = true;
  else if (dir != "forward") ctx.fail(fmt::format("direction must be forward, reverse or bidirectional, not '{}'", dir));
  if (auto c = ctx.optional_attr<float>("clip")) {
    if (*c < 0) ctx.fail("clip must be non-negative");
    cfg.clip = double(*c);
  }
  if (v < 7) ctx.attr<int64_t>("output_sequence", 0);  // Y is produced whenever the node names it
  if (v >= 14) {
    cfg.layout = ctx.attr<int64_t>("layout", 0);
    if (cfg.layout != 0 && cfg.layout != 1) ctx.fail("layout must be 0 or 1");
  }
  if (cell == CellKind::Gru && v >= 3) cfg.linear_before_reset = ctx.attr<int64_t>("linear_before_reset", 0) != 0;
  if (cell == CellKind::Lstm) cfg.input_forget = ctx.attr<int64_t>("input_forget", 0) != 0;
  std::vector<std::string> defaults;
  if (cell == CellKind::Rnn) defaults = {"Tanh"};
  else if (cell == CellKind::Gru) defaults = {"Sigmoid", "Tanh"};
  else defaults = {"Sigmoid", "Tanh", "Tanh"};
  std::vector<std::string> names = ctx.attr<std::vector<std::string>>("activations", {});
  const std::vector<float> alphas = ctx.attr<std::vector<float>>("activation_alpha", {});
  const std::vector<float> betas = ctx.attr<std::vector<float>>("activation_beta", {});
  const size_t want = defaults.size() * size_t(cfg.num_directions);
  if (names.empty()) {
    for (int d = 0; d < cfg.num_directions; ++d) names.insert(names.end(), defaults.begin(), defaults.end());
  } else if (names.size() != want) {
    ctx.fail(fmt::format("activations has {} names, expected {}", names.size(), want));
  }
  size_t ai = 0, bi = 0;
  for (const std::string& n : names) cfg.activations.push_back(make_activation(ctx, n, alphas, betas, ai, bi));
  return cfg;
}

Values run_recurrent(const RecurrentConfig& cfg, const Values& in) {
  const DType t = input_tensor(in, 0).dtype();
  if (t == DType::Double) return run_typed<double>(cfg, in, t);
  return visit<Floats>(t, [&]<class T>() { return run_typed<float>(cfg, in, t); });
}

}  // namespace refeval::ops

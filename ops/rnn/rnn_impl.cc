// The recurrence shared by RNN, GRU and LSTM, direction by direction:
//  - the input projection of every time step, X W^T, is one product on W packed (PackedRecurrent,
//    recurrent_product.cc), with the biases that only add to it folded in once;
//  - each step, the recurrent projection of every batch row, H_{t-1} R^T, is one product on R
//    packed the same way (GRU: one for z and r, then one for its h gate, which needs r first
//    unless linear_before_reset);
//  - W and R are packed once when the node is made if they are initializers (ConstantWeights),
//    else once per run;
//  - each activation runs over a whole gate of every batch row (Activation::apply: one loop per
//    kind, Tanh and float Sigmoid on the vector math library).
// Sequences shorter than seq_length (sequence_lens) stop at their own end: their Y rows past it
// stay zero and their last state is the one after their own last step; reverse starts each row
// at its own last element.
#include <algorithm>
#include <cctype>

#include <fmt/format.h>

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

// A tensor's values as C: its own storage when it already holds C, else converted into `store`.
template <class C>
const C* compute_view(const Tensor& t, std::vector<C>& store) {
  if (t.dtype() == dtype_of<C>) return t.data<C>();
  store = to_compute<C>(t);
  return store.data();
}

template <class C>
void clip_values(C* p, int64_t n, const std::optional<double>& clip) {
  if (!clip) return;
  const C c = C(*clip);
  for (int64_t i = 0; i < n; ++i) p[i] = std::clamp(p[i], -c, c);
}

template <class C>
Values run_typed(const RecurrentConfig& cfg, const Values& in, DType dtype, const ConstantWeights* constant) {
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

  std::vector<C> x_store, w_store, r_store, b_store, h0_store, c0_store, p_store;
  const C* X = compute_view(x, x_store);
  const std::vector<DirectionWeights<C>>* packs = constant ? constant->get<C>(w, r) : nullptr;
  std::vector<DirectionWeights<C>> own;
  if (!packs) {
    own = pack_directions(cfg, compute_view(w, w_store), compute_view(r, r_store), D, I, H);
    packs = &own;
  }
  const C* Bias = nullptr;
  if (has_value(in, 3)) { check_shape(input_tensor(in, 3), {D, 2 * GH}, "B"); Bias = compute_view(input_tensor(in, 3), b_store); }
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
  auto read_state = [&](size_t i, const char* name, std::vector<C>& store) -> const C* {
    if (!has_value(in, i)) return nullptr;
    check_shape(input_tensor(in, i), state_shape, name);
    return compute_view(input_tensor(in, i), store);
  };
  const C* H0 = read_state(5, "initial_h", h0_store);
  const C* C0 = lstm ? read_state(6, "initial_c", c0_store) : nullptr;
  const C* P = nullptr;
  if (lstm && has_value(in, 7)) { check_shape(input_tensor(in, 7), {D, 3 * H}, "P"); P = compute_view(input_tensor(in, 7), p_store); }

  // The outputs are written in place in either layout; through C vectors for float16 / bfloat16.
  Tensor ty(dtype, cfg.layout == 0 ? Shape{S, D, B, H} : Shape{B, S, D, H});
  Tensor th(dtype, state_shape), tc = lstm ? Tensor(dtype, state_shape) : Tensor();
  std::vector<C> y_store, h_store, c_store;
  auto out_view = [&](Tensor& t, std::vector<C>& store) -> C* {
    if (t.dtype() == dtype_of<C>) return t.data<C>();
    store.assign(size_t(t.size()), C(0));
    return store.data();
  };
  C* Y = out_view(ty, y_store);
  C* Yh = out_view(th, h_store);
  C* Yc = lstm ? out_view(tc, c_store) : nullptr;
  auto y_at = [&](int64_t t, int64_t d, int64_t b) { return cfg.layout == 0 ? ((t * D + d) * B + b) * H : ((b * S + t) * D + d) * H; };
  auto state_at = [&](int64_t d, int64_t b) { return cfg.layout == 0 ? (d * B + b) * H : (b * D + d) * H; };
  auto x_row = [&](int64_t t, int64_t b) { return cfg.layout == 0 ? t * B + b : b * S + t; };

  // Columns of the step's recurrent product: every gate, but only z and r for GRU, whose h gate
  // (linear_before_reset 0) multiplies R_h by r . H_{t-1} and so waits for r.
  const int64_t N = gru ? 2 * H : GH;
  const size_t nact = lstm ? 3 : gru ? 2 : 1;
  // Work arrays in tensors, whose large buffers are reused from run to run (a vector of a few
  // MB faults its pages in anew on every run).
  auto work = [](int64_t n, Tensor& holder) {
    holder = Tensor(dtype_of<C>, {n});
    return holder.data<C>();
  };
  Tensor xw_t, hr_t, h_t, c_t, hh_t, rh_t, bias_t, gates_t;
  C* xw = work(S * B * GH, xw_t);
  C* hr = work(B * N, hr_t);
  C* h = work(B * H, h_t);
  C* c = work(lstm ? B * H : 0, c_t);
  C* hh = work(gru ? B * H : 0, hh_t);
  C* rh = work(gru ? B * H : 0, rh_t);
  C* bias = work(GH, bias_t);
  C* gates = work(lstm ? 4 * B * H : 0, gates_t);  // LSTM's i, f, c, o gates of every row, gate after gate
  for (int64_t d = 0; d < D; ++d) {
    const bool rev = D == 2 ? d == 1 : cfg.reverse;
    // The step's products: every gate (GRU: z and r; its h gate apart, see N).
    const PackedRecurrent<C>& rec = (*packs)[size_t(d)].r;
    const std::optional<PackedRecurrent<C>>& rec_h = (*packs)[size_t(d)].r_h;
    const C* Rbh = gru && cfg.linear_before_reset && Bias ? Bias + d * 2 * GH + GH + 2 * H : nullptr;
    const C* Pd = P ? P + d * 3 * H : nullptr;
    const Activation& f = cfg.activations[size_t(d) * nact];
    const Activation& g = cfg.activations[size_t(d) * nact + (nact > 1 ? 1 : 0)];
    const Activation& h_act = cfg.activations[size_t(d) * nact + (nact > 2 ? 2 : 0)];

    // X W^T for every step, plus the biases that only add to it: Wb + Rb, except GRU's Rb_h
    // under linear_before_reset, which r multiplies.
    (*packs)[size_t(d)].w.multiply(S * B, X, xw);
    if (Bias) {
      const C* Wb = Bias + d * 2 * GH;
      for (int64_t k = 0; k < GH; ++k) bias[k] = Rbh && k >= 2 * H ? Wb[k] : Wb[k] + Wb[GH + k];
      for (int64_t row = 0; row < S * B; ++row) {
        C* p = xw + row * GH;
        for (int64_t k = 0; k < GH; ++k) p[k] += bias[k];
      }
    }
    for (int64_t b = 0; b < B; ++b) {
      std::fill_n(h + b * H, H, C(0));
      if (H0) std::copy_n(H0 + state_at(d, b), H, h + b * H);
      if (lstm) {
        std::fill_n(c + b * H, H, C(0));
        if (C0) std::copy_n(C0 + state_at(d, b), H, c + b * H);
      }
    }

    for (int64_t step = 0; step < S; ++step) {
      // Row b's time step and its X W^T row; rows past their own length do not step (their
      // gates below are computed from stale values and dropped).
      auto active = [&](int64_t b) { return step < lens[size_t(b)]; };
      auto time_of = [&](int64_t b) { return rev ? lens[size_t(b)] - 1 - step : step; };
      auto xw_of = [&](int64_t b) { return xw + x_row(time_of(b), b) * GH; };
      rec.multiply(B, h, hr);
      if (!lstm)
        for (int64_t b = 0; b < B; ++b) {
          if (!active(b)) continue;
          const C* xr = xw_of(b);
          C* p = hr + b * N;
          for (int64_t k = 0; k < N; ++k) p[k] += xr[k];
        }

      if (cfg.cell == CellKind::Rnn) {
        clip_values(hr, B * H, cfg.clip);
        f.apply(hr, B * H);
        for (int64_t b = 0; b < B; ++b) {
          if (!active(b)) continue;
          std::copy_n(hr + b * H, H, h + b * H);
          std::copy_n(hr + b * H, H, Y + y_at(time_of(b), d, b));
        }
        continue;
      }

      if (gru) {
        // hr holds z and r of each row (z then r); hh gets the h gate's pre-activation.
        if (cfg.linear_before_reset) rec_h->multiply(B, h, hh);
        clip_values(hr, B * 2 * H, cfg.clip);
        f.apply(hr, B * 2 * H);
        if (cfg.linear_before_reset) {  // h~ = g(X W_h^T + Wb_h + r . (H_{t-1} R_h^T + Rb_h))
          for (int64_t b = 0; b < B; ++b) {
            if (!active(b)) continue;
            const C* xr = xw_of(b) + 2 * H;
            const C* rt = hr + b * 2 * H + H;
            C* p = hh + b * H;
            for (int64_t j = 0; j < H; ++j) p[j] = xr[j] + rt[j] * (p[j] + (Rbh ? Rbh[j] : C(0)));
          }
        } else {  // h~ = g(X W_h^T + Wb_h + Rb_h + (r . H_{t-1}) R_h^T)
          for (int64_t b = 0; b < B; ++b) {
            const C* rt = hr + b * 2 * H + H;
            for (int64_t j = 0; j < H; ++j) rh[b * H + j] = rt[j] * h[b * H + j];
          }
          rec_h->multiply(B, rh, hh);
          for (int64_t b = 0; b < B; ++b) {
            if (!active(b)) continue;
            const C* xr = xw_of(b) + 2 * H;
            C* p = hh + b * H;
            for (int64_t j = 0; j < H; ++j) p[j] += xr[j];
          }
        }
        clip_values(hh, B * H, cfg.clip);
        g.apply(hh, B * H);
        for (int64_t b = 0; b < B; ++b) {
          if (!active(b)) continue;
          const C* z = hr + b * 2 * H;
          const C* ht = hh + b * H;
          C* hb = h + b * H;
          for (int64_t j = 0; j < H; ++j) hb[j] = (C(1) - z[j]) * ht[j] + z[j] * hb[j];
          std::copy_n(hb, H, Y + y_at(time_of(b), d, b));
        }
        continue;
      }

      // LSTM: the pre-activations of W's gate order i, o, f, c go to `gates` as i, f, c, o, each
      // gate one block of B x H, so that every activation runs over a whole gate of every row.
      const int64_t BH = B * H;
      C *gi = gates, *gf = gi + BH, *gc = gf + BH, *go = gc + BH;
      static constexpr int64_t kSource[4] = {0, 2, 3, 1};  // W's gate of i, f, c, o
      for (int64_t b = 0; b < B; ++b) {
        const C* xr = active(b) ? xw_of(b) : nullptr;
        for (int64_t k = 0; k < 4; ++k) {
          const C* src = hr + b * GH + kSource[k] * H;
          C* dst = gates + k * BH + b * H;
          if (xr) for (int64_t j = 0; j < H; ++j) dst[j] = src[j] + xr[kSource[k] * H + j];
          else std::copy_n(src, H, dst);
        }
      }
      if (Pd)
        for (int64_t b = 0; b < B; ++b)
          for (int64_t j = 0; j < H; ++j) {
            gi[b * H + j] += Pd[j] * c[b * H + j];
            gf[b * H + j] += Pd[2 * H + j] * c[b * H + j];
          }
      clip_values(gi, 3 * BH, cfg.clip);
      if (cfg.input_forget) {  // f = 1 - i
        f.apply(gi, BH);
        for (int64_t i = 0; i < BH; ++i) gf[i] = C(1) - gi[i];
      } else {
        f.apply(gi, 2 * BH);
      }
      g.apply(gc, BH);
      // C_t = f . C_{t-1} + i . c~ (kept in gc for the rows that step); o sees C_t through Po.
      for (int64_t b = 0; b < B; ++b) {
        if (!active(b)) continue;
        C* cb = c + b * H;
        const int64_t o = b * H;
        for (int64_t j = 0; j < H; ++j) {
          cb[j] = gf[o + j] * cb[j] + gi[o + j] * gc[o + j];
          if (Pd) go[o + j] += Pd[H + j] * cb[j];
          gc[o + j] = cb[j];
        }
      }
      clip_values(go, BH, cfg.clip);
      f.apply(go, BH);
      clip_values(gc, BH, cfg.clip);
      h_act.apply(gc, BH);
      for (int64_t b = 0; b < B; ++b) {
        if (!active(b)) continue;
        C* hb = h + b * H;
        const int64_t o = b * H;
        for (int64_t j = 0; j < H; ++j) hb[j] = go[o + j] * gc[o + j];
        std::copy_n(hb, H, Y + y_at(time_of(b), d, b));
      }
    }
    for (int64_t b = 0; b < B; ++b) {
      std::copy_n(h + b * H, H, Yh + state_at(d, b));
      if (lstm) std::copy_n(c + b * H, H, Yc + state_at(d, b));
    }
  }
  if (!y_store.empty()) write_compute(ty, y_store);
  if (!h_store.empty()) write_compute(th, h_store);
  if (!c_store.empty()) write_compute(tc, c_store);
  Values out{ty, th};
  if (lstm) out.push_back(tc);
  return out;
}

}  // namespace

template <class C>
std::vector<DirectionWeights<C>> pack_directions(const RecurrentConfig& cfg, const C* W, const C* R, int64_t D,
                                                 int64_t I, int64_t H) {
  const int64_t GH = cfg.gates * H;
  const bool gru = cfg.cell == CellKind::Gru;
  std::vector<DirectionWeights<C>> out;
  for (int64_t d = 0; d < D; ++d) {
    const C* Rd = R + d * GH * H;
    out.push_back({PackedRecurrent<C>(W + d * GH * I, GH, I), PackedRecurrent<C>(Rd, gru ? 2 * H : GH, H),
                   gru ? std::optional<PackedRecurrent<C>>(std::in_place, Rd + 2 * H * H, H, H) : std::nullopt});
  }
  return out;
}

std::unique_ptr<const ConstantWeights> ConstantWeights::make(const NodeContext& ctx, const RecurrentConfig& cfg) {
  auto constant = [&](size_t i) -> const Tensor* {
    const Initializer* init = ctx.constant_input(i);
    return init ? &init->value : nullptr;
  };
  const Tensor *w = constant(1), *r = constant(2);
  if (!w || !r || w->dtype() != r->dtype() || w->rank() != 3 || r->rank() != 3) return nullptr;
  const int64_t D = cfg.num_directions, H = cfg.hidden_size >= 0 ? cfg.hidden_size : r->dim(2), I = w->dim(2);
  // A mismatch is left to the run, which reports it.
  if (w->shape() != Shape{D, cfg.gates * H, I} || r->shape() != Shape{D, cfg.gates * H, H}) return nullptr;
  auto out = std::make_unique<ConstantWeights>();
  out->w_ = *w;
  out->r_ = *r;
  if (w->dtype() == DType::Float) out->floats_ = pack_directions(cfg, w->data<float>(), r->data<float>(), D, I, H);
  else if (w->dtype() == DType::Double) out->doubles_ = pack_directions(cfg, w->data<double>(), r->data<double>(), D, I, H);
  else return nullptr;
  return out;
}

template <class C>
const std::vector<DirectionWeights<C>>* ConstantWeights::get(const Tensor& w, const Tensor& r) const {
  const auto& packs = [&]() -> const std::vector<DirectionWeights<C>>& {
    if constexpr (std::is_same_v<C, float>) return floats_;
    else return doubles_;
  }();
  const bool same = w.raw_data() == w_.raw_data() && w.shape() == w_.shape() && w.dtype() == w_.dtype() &&
                    r.raw_data() == r_.raw_data() && r.shape() == r_.shape() && r.dtype() == r_.dtype();
  return same && !packs.empty() ? &packs : nullptr;
}

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

Values run_recurrent(const RecurrentConfig& cfg, const Values& in, const ConstantWeights* constant) {
  const DType t = input_tensor(in, 0).dtype();
  if (t == DType::Double) return run_typed<double>(cfg, in, t, constant);
  return visit<Floats>(t, [&]<class T>() { return run_typed<float>(cfg, in, t, constant); });
}

}  // namespace refeval::ops

// RNN, GRU and LSTM against an oracle written here from the ONNX formulas: plain loops in double,
// one batch row and one time step at a time (nothing of the kernel's whole-batch GEMMs, folded
// biases or gate buffers), on random cases of every option combination: direction, layout,
// sequence_lens with shorter (and empty) rows, initial states, biases, clip, GRU's
// linear_before_reset, LSTM's peepholes and input_forget, every activation function with its
// alpha and beta, float and double. Then the results at --threads 1 and 2 are compared bit for bit.
#include <cmath>
#include <cstring>
#include <iomanip>
#include <optional>
#include <random>

#include "refeval/threads.h"
#include "test_util.h"

using namespace refeval;
using namespace refeval::testing;
using build::attr;
using build::node;

namespace {

struct ActSpec {
  std::string name;
  int params;  // how many of alpha, beta the function takes (and consumes from the lists)
};
const ActSpec kActivations[] = {{"Relu", 0},      {"Tanh", 0},      {"Sigmoid", 0},         {"Affine", 2},
                                {"LeakyRelu", 1}, {"ThresholdedRelu", 1}, {"ScaledTanh", 2}, {"HardSigmoid", 2},
                                {"Elu", 1},       {"Softsign", 0},  {"Softplus", 0}};

struct Act {
  std::string name;
  double alpha = 0, beta = 0;
  double operator()(double x) const {
    if (name == "Relu") return std::max(x, 0.0);
    if (name == "Tanh") return std::tanh(x);
    if (name == "Sigmoid") return 1 / (1 + std::exp(-x));
    if (name == "Affine") return alpha * x + beta;
    if (name == "LeakyRelu") return x >= 0 ? x : alpha * x;
    if (name == "ThresholdedRelu") return x > alpha ? x : 0;
    if (name == "ScaledTanh") return alpha * std::tanh(beta * x);
    if (name == "HardSigmoid") return std::max(0.0, std::min(1.0, alpha * x + beta));
    if (name == "Elu") return x >= 0 ? x : alpha * (std::exp(x) - 1);
    if (name == "Softsign") return x / (1 + std::abs(x));
    if (name == "Softplus") return std::log(1 + std::exp(x));
    FAIL("unknown activation " << name);
    return 0;
  }
};

struct Case {
  std::string op;  // RNN, GRU, LSTM
  std::string direction;
  int64_t layout = 0;
  bool dbl = false, bias = false, lens = false, initial = false, lbr = false, peephole = false, input_forget = false;
  std::optional<double> clip;
  int64_t S = 1, B = 1, I = 1, H = 1;
};

// Every array in the canonical layout 0: X [S, B, I], states [D, B, H], Y [S, D, B, H].
struct Problem {
  Case c;
  int64_t D = 1, G = 1;
  std::vector<Act> acts;  // f (, g (, h)) of each direction
  std::vector<float> alphas, betas;
  std::vector<double> X, W, R, Bias, P, H0, C0;
  std::vector<int32_t> lens;
};

struct Result {
  std::vector<double> Y, Yh, Yc;
};

// The spec's recurrence, row by row.
Result oracle(const Problem& p) {
  const Case& c = p.c;
  const int64_t S = c.S, B = c.B, I = c.I, H = c.H, D = p.D, GH = p.G * H;
  const size_t nact = c.op == "LSTM" ? 3 : c.op == "GRU" ? 2 : 1;
  Result r;
  r.Y.assign(size_t(S * D * B * H), 0.0);
  r.Yh.assign(size_t(D * B * H), 0.0);
  r.Yc.assign(size_t(D * B * H), 0.0);
  auto clip = [&](double v) { return c.clip ? std::clamp(v, -*c.clip, *c.clip) : v; };
  for (int64_t d = 0; d < D; ++d) {
    const bool rev = c.direction == "reverse" || (D == 2 && d == 1);
    const Act& f = p.acts[size_t(d) * nact];
    const Act& g = p.acts[size_t(d) * nact + (nact > 1 ? 1 : 0)];
    const Act& hf = p.acts[size_t(d) * nact + (nact > 2 ? 2 : 0)];
    // x . W_k^T + Wb_k and h . R_k^T + Rb_k for gate k, unit j.
    auto xw = [&](const double* x, int64_t k, int64_t j) {
      double s = c.bias ? p.Bias[size_t(d * 2 * GH + k * H + j)] : 0;
      for (int64_t i = 0; i < I; ++i) s += x[i] * p.W[size_t((d * GH + k * H + j) * I + i)];
      return s;
    };
    auto hr = [&](const std::vector<double>& h, int64_t k, int64_t j) {
      double s = c.bias ? p.Bias[size_t(d * 2 * GH + GH + k * H + j)] : 0;
      for (int64_t i = 0; i < H; ++i) s += h[size_t(i)] * p.R[size_t((d * GH + k * H + j) * H + i)];
      return s;
    };
    for (int64_t b = 0; b < B; ++b) {
      std::vector<double> h(size_t(H), 0.0), cs(size_t(H), 0.0);
      if (c.initial)
        for (int64_t j = 0; j < H; ++j) {
          h[size_t(j)] = p.H0[size_t((d * B + b) * H + j)];
          if (c.op == "LSTM") cs[size_t(j)] = p.C0[size_t((d * B + b) * H + j)];
        }
      const int64_t len = c.lens ? p.lens[size_t(b)] : S;
      for (int64_t step = 0; step < len; ++step) {
        const int64_t t = rev ? len - 1 - step : step;
        const double* x = p.X.data() + (t * B + b) * I;
        std::vector<double> next(static_cast<size_t>(H));
        if (c.op == "RNN") {
          for (int64_t j = 0; j < H; ++j) next[size_t(j)] = f(clip(xw(x, 0, j) + hr(h, 0, j)));
        } else if (c.op == "GRU") {
          std::vector<double> z(static_cast<size_t>(H)), rg(static_cast<size_t>(H)), rh(static_cast<size_t>(H));
          for (int64_t j = 0; j < H; ++j) {
            z[size_t(j)] = f(clip(xw(x, 0, j) + hr(h, 0, j)));
            rg[size_t(j)] = f(clip(xw(x, 1, j) + hr(h, 1, j)));
            rh[size_t(j)] = rg[size_t(j)] * h[size_t(j)];
          }
          for (int64_t j = 0; j < H; ++j) {
            // linear_before_reset: r . (h R_h^T + Rb_h); else (r . h) R_h^T + Rb_h.
            const double pre = c.lbr ? xw(x, 2, j) + rg[size_t(j)] * hr(h, 2, j) : xw(x, 2, j) + hr(rh, 2, j);
            next[size_t(j)] = (1 - z[size_t(j)]) * g(clip(pre)) + z[size_t(j)] * h[size_t(j)];
          }
        } else {  // gates i, o, f, c in W; P is i, o, f
          auto peep = [&](int64_t k, int64_t j, double cell) { return c.peephole ? p.P[size_t(d * 3 * H + k * H + j)] * cell : 0.0; };
          for (int64_t j = 0; j < H; ++j) {
            const double i_g = f(clip(xw(x, 0, j) + hr(h, 0, j) + peep(0, j, cs[size_t(j)])));
            const double f_g = c.input_forget ? 1 - i_g : f(clip(xw(x, 2, j) + hr(h, 2, j) + peep(2, j, cs[size_t(j)])));
            const double c_g = g(clip(xw(x, 3, j) + hr(h, 3, j)));
            const double cell = f_g * cs[size_t(j)] + i_g * c_g;
            const double o_g = f(clip(xw(x, 1, j) + hr(h, 1, j) + peep(1, j, cell)));
            next[size_t(j)] = o_g * hf(clip(cell));
            cs[size_t(j)] = cell;
          }
        }
        h = next;
        for (int64_t j = 0; j < H; ++j) r.Y[size_t(((t * D + d) * B + b) * H + j)] = h[size_t(j)];
      }
      for (int64_t j = 0; j < H; ++j) {
        r.Yh[size_t((d * B + b) * H + j)] = h[size_t(j)];
        r.Yc[size_t((d * B + b) * H + j)] = cs[size_t(j)];
      }
    }
  }
  return r;
}

Problem make_problem(const Case& c, std::mt19937& rng) {
  Problem p;
  p.c = c;
  p.D = c.direction == "bidirectional" ? 2 : 1;
  p.G = c.op == "LSTM" ? 4 : c.op == "GRU" ? 3 : 1;
  std::uniform_real_distribution<double> u(-1, 1);
  auto fill = [&](int64_t n, double scale) {
    std::vector<double> v(static_cast<size_t>(n));
    for (double& x : v) x = scale * u(rng);
    return v;
  };
  const int64_t GH = p.G * c.H;
  p.X = fill(c.S * c.B * c.I, 1.5);
  p.W = fill(p.D * GH * c.I, 0.8);
  p.R = fill(p.D * GH * c.H, 0.8);
  p.Bias = fill(p.D * 2 * GH, 0.5);
  p.P = fill(p.D * 3 * c.H, 0.5);
  p.H0 = fill(p.D * c.B * c.H, 1.0);
  p.C0 = fill(p.D * c.B * c.H, 1.0);
  std::uniform_int_distribution<int32_t> len(0, int32_t(c.S));
  for (int64_t b = 0; b < c.B; ++b) p.lens.push_back(b == 0 ? int32_t(c.S) : len(rng));  // one row is full length
  const size_t nact = c.op == "LSTM" ? 3 : c.op == "GRU" ? 2 : 1;
  std::uniform_int_distribution<size_t> pick(0, std::size(kActivations) - 1);
  std::uniform_real_distribution<double> alpha(0.3, 1.2), beta(-0.5, 0.5);
  for (size_t k = 0; k < nact * size_t(p.D); ++k) {
    const ActSpec& a = kActivations[pick(rng)];
    Act act{a.name};
    if (a.params >= 1) {
      p.alphas.push_back(float(alpha(rng)));
      act.alpha = p.alphas.back();
    }
    if (a.params >= 2) {
      p.betas.push_back(float(beta(rng)));
      act.beta = p.betas.back();
    }
    p.acts.push_back(act);
  }
  return p;
}

// Swaps the first two axes of a [a, b, rest] array: layout 0 <-> 1 for X and the states.
std::vector<double> swap01(const std::vector<double>& v, int64_t a, int64_t b, int64_t rest) {
  std::vector<double> out(v.size());
  for (int64_t i = 0; i < a; ++i)
    for (int64_t j = 0; j < b; ++j)
      for (int64_t k = 0; k < rest; ++k) out[size_t((j * a + i) * rest + k)] = v[size_t((i * b + j) * rest + k)];
  return out;
}

// The node run with every input fed, or (constant_weights) with W and R as initializers of its
// graph, which the node packs when it is made (ConstantWeights in ops/rnn/rnn_common.h).
Values run_problem(const Problem& p, bool constant_weights = false) {
  const Case& c = p.c;
  const bool lstm = c.op == "LSTM";
  const int64_t GH = p.G * c.H;
  auto t = [&](Shape shape, const std::vector<double>& v) {
    if (c.dbl) return Tensor::from_vector<double>(std::move(shape), v);
    return Tensor::from_vector<float>(std::move(shape), std::vector<float>(v.begin(), v.end()));
  };
  std::vector<std::string> names;
  for (const Act& a : p.acts) names.push_back(a.name);
  std::vector<Attribute> attrs = {attr("hidden_size", c.H), attr("direction", c.direction), attr("layout", c.layout),
                                  attr("activations", names)};
  if (!p.alphas.empty()) attrs.push_back(attr("activation_alpha", p.alphas));
  if (!p.betas.empty()) attrs.push_back(attr("activation_beta", p.betas));
  if (c.clip) attrs.push_back(attr("clip", float(*c.clip)));
  if (c.op == "GRU") attrs.push_back(attr("linear_before_reset", int64_t(c.lbr)));
  if (lstm) attrs.push_back(attr("input_forget", int64_t(c.input_forget)));
  Values in(8);
  in[0] = c.layout == 0 ? t({c.S, c.B, c.I}, p.X) : t({c.B, c.S, c.I}, swap01(p.X, c.S, c.B, c.I));
  in[1] = t({p.D, GH, c.I}, p.W);
  in[2] = t({p.D, GH, c.H}, p.R);
  if (c.bias) in[3] = t({p.D, 2 * GH}, p.Bias);
  if (c.lens) in[4] = Tensor::from_vector<int32_t>({c.B}, p.lens);
  auto state = [&](const std::vector<double>& v) {
    return c.layout == 0 ? t({p.D, c.B, c.H}, v) : t({c.B, p.D, c.H}, swap01(v, p.D, c.B, c.H));
  };
  if (c.initial) in[5] = state(p.H0);
  if (c.initial && lstm) in[6] = state(p.C0);
  if (c.peephole) in[7] = t({p.D, 3 * c.H}, p.P);
  std::vector<std::string> inputs = {"X", "W", "R", "B", "seq", "h0"};
  if (lstm) inputs.insert(inputs.end(), {"c0", "P"});
  std::vector<std::string> outputs = {"Y", "Y_h"};
  if (lstm) outputs.push_back("Y_c");
  Node n = node(c.op, inputs, outputs, attrs, "cell");
  for (size_t i = 0; i < n.inputs.size(); ++i)
    if (in[i].is_absent()) n.inputs[i] = "";
  if (!constant_weights) return run_node(n, in);
  const DType type = c.dbl ? DType::Double : DType::Float;
  std::vector<ValueInfo> graph_inputs, graph_outputs;
  std::map<std::string, Value> feeds;
  for (size_t i = 0; i < n.inputs.size(); ++i)
    if (i != 1 && i != 2 && !n.inputs[i].empty()) {
      graph_inputs.push_back(build::tensor_info_unknown_rank(n.inputs[i], in[i].tensor().dtype()));
      feeds[n.inputs[i]] = in[i];
    }
  for (const std::string& o : outputs) graph_outputs.push_back(build::tensor_info_unknown_rank(o, type));
  const Graph g = build::graph("g", {n}, graph_inputs, graph_outputs, {{"W", in[1].tensor()}, {"R", in[2].tensor()}});
  return ReferenceEvaluator::from_graph(g, {{"", kLatestOnnxOpset}}).run({}, feeds);
}

std::vector<double> as_doubles(const Tensor& t) {
  if (t.dtype() == DType::Double) return t.to_vector<double>();
  const std::vector<float> f = t.to_vector<float>();
  return {f.begin(), f.end()};
}

// Y back to [S, D, B, H] (layout 1 gives [B, S, D, H]) and a state to [D, B, H].
std::vector<double> canonical_y(const Case& c, int64_t D, const Tensor& y) {
  const std::vector<double> v = as_doubles(y);
  if (c.layout == 0) return v;
  std::vector<double> out(v.size());
  for (int64_t b = 0; b < c.B; ++b)
    for (int64_t t = 0; t < c.S; ++t)
      for (int64_t d = 0; d < D; ++d)
        for (int64_t j = 0; j < c.H; ++j) out[size_t(((t * D + d) * c.B + b) * c.H + j)] = v[size_t(((b * c.S + t) * D + d) * c.H + j)];
  return out;
}
std::vector<double> canonical_state(const Case& c, int64_t D, const Tensor& s) {
  std::vector<double> v = as_doubles(s);
  return c.layout == 0 ? v : swap01(v, c.B, D, c.H);
}

void check_close(const std::vector<double>& got, const std::vector<double>& want, double tol, const std::string& what) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    const double err = std::abs(got[i] - want[i]), bound = tol * (1 + std::abs(want[i]));
    if (!(err <= bound)) {
      FAIL_CHECK(what << "[" << i << "] = " << std::setprecision(17) << got[i] << ", oracle " << want[i]);
      return;
    }
  }
}

std::string describe(const Problem& p) {
  const Case& c = p.c;
  std::string s = c.op + " " + c.direction + " layout " + std::to_string(c.layout) + (c.dbl ? " double" : " float") +
                  " S" + std::to_string(c.S) + " B" + std::to_string(c.B) + " I" + std::to_string(c.I) + " H" +
                  std::to_string(c.H) + (c.bias ? " bias" : "") + (c.lens ? " lens" : "") + (c.initial ? " initial" : "") +
                  (c.clip ? " clip" : "") + (c.lbr ? " lbr" : "") + (c.peephole ? " peephole" : "") +
                  (c.input_forget ? " input_forget" : "") + " acts";
  for (const Act& a : p.acts) s += " " + a.name;
  return s;
}

bool bounded(const Result& r) {
  for (const std::vector<double>* v : {&r.Y, &r.Yh, &r.Yc})
    for (double x : *v)
      if (!(std::abs(x) < 1e6)) return false;
  return true;
}

void check_against_oracle(const Problem& p) {
  INFO(describe(p));
  const Values out = run_problem(p);
  const Result want = oracle(p);
  const double tol = p.c.dbl ? 1e-11 : 2e-5;
  check_close(canonical_y(p.c, p.D, out[0].tensor()), want.Y, tol, "Y");
  check_close(canonical_state(p.c, p.D, out[1].tensor()), want.Yh, tol, "Y_h");
  if (p.c.op == "LSTM") check_close(canonical_state(p.c, p.D, out[2].tensor()), want.Yc, tol, "Y_c");
}

}  // namespace

TEST_CASE("RNN, GRU and LSTM match the double oracle on every option combination") {
  std::mt19937 rng(20261204);
  std::uniform_int_distribution<int64_t> seq(1, 5), batch(1, 7), input(1, 6), hidden(1, 9);
  int cases = 0;
  for (const char* op : {"RNN", "GRU", "LSTM"})
    for (const char* direction : {"forward", "reverse", "bidirectional"})
      for (int64_t layout : {0, 1})
        for (bool dbl : {false, true})
          for (int options = 0; options < 16; ++options)  // bias, lens, initial, clip
            for (int variant = 0; variant < (std::string(op) == "LSTM" ? 4 : std::string(op) == "GRU" ? 2 : 1); ++variant) {
              Case c;
              c.op = op, c.direction = direction, c.layout = layout, c.dbl = dbl;
              c.bias = options & 1;
              c.lens = options & 2;
              c.initial = options & 4;
              if (options & 8) c.clip = double(0.7f);  // the attribute is a float
              c.lbr = c.op == "GRU" && (variant & 1);
              c.peephole = c.op == "LSTM" && (variant & 1);
              c.input_forget = c.op == "LSTM" && (variant & 2);
              c.S = seq(rng), c.B = batch(rng), c.I = input(rng), c.H = hidden(rng);
              // Unbounded activations (Softplus, Elu, Affine...) on LSTM's gates can compound
              // over the steps; such draws are redrawn, so that float stays comparable to double.
              Problem p = make_problem(c, rng);
              while (!bounded(oracle(p))) p = make_problem(c, rng);
              check_against_oracle(p);
              ++cases;
            }
  CHECK(cases == 3 * 2 * 2 * 16 * (1 + 2 + 4));
}

TEST_CASE("recurrent projections of a wide hidden state and a large batch match the oracle") {
  // H = 301: R's rows fill many panels of the packed product, the last one in part; batches of
  // 1, 3 and 6 rows fill tiles of 4 rows in full and in part.
  std::mt19937 rng(7);
  for (const char* op : {"RNN", "GRU", "LSTM"})
    for (int64_t B : {1, 3, 6}) {
      Case c;
      c.op = op, c.direction = "bidirectional";
      c.bias = c.lens = c.initial = true;
      c.lbr = c.op == "GRU" && B == 3;
      c.peephole = c.op == "LSTM";
      c.S = 3, c.B = B, c.I = 5, c.H = 301;
      Problem p = make_problem(c, rng);
      for (size_t k = 0; k < p.acts.size(); ++k) p.acts[k] = Act{k % 2 ? "Tanh" : "Sigmoid"};
      p.alphas.clear(), p.betas.clear();
      for (double& w : p.R) w *= 0.1;  // keeps the 300-term sums where the gates are not saturated
      check_against_oracle(p);
    }
}

TEST_CASE("recurrent outputs are bit-identical on 1 and 2 threads") {
  // Sizes at which the input GEMM, the step's product (over R's panels) and the gate activations
  // (batch 64) are split between threads.
  std::mt19937 rng(11);
  for (const char* op : {"RNN", "GRU", "LSTM"})
    for (bool dbl : {false, true})
      for (int64_t B : {4, 64}) {
        Case c;
        c.op = op, c.direction = "bidirectional", c.layout = 1, c.dbl = dbl;
        c.bias = c.lens = c.initial = true;
        c.peephole = c.op == "LSTM";
        c.S = 3, c.B = B, c.I = 48, c.H = 256;
        const Problem p = make_problem(c, rng);
        INFO(describe(p));
        set_thread_count(1);
        const Values one = run_problem(p);
        set_thread_count(2);
        const Values two = run_problem(p);
        set_thread_count(1);
        for (size_t i = 0; i < one.size(); ++i) {
          const Tensor &a = one[i].tensor(), &b = two[i].tensor();
          REQUIRE(a.shape() == b.shape());
          CHECK(std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0);
        }
      }
}

TEST_CASE("recurrent cells with W and R as initializers (packed when the node is made) give the bits of the fed ones") {
  // Every cell, direction and linear_before_reset, float and double; against the oracle too, so
  // that panels of the wrong direction or gate would show.
  std::mt19937 rng(23);
  int cases = 0;
  for (const char* op : {"RNN", "GRU", "LSTM"})
    for (const char* direction : {"forward", "reverse", "bidirectional"})
      for (bool dbl : {false, true}) {
        Case c;
        c.op = op, c.direction = direction, c.dbl = dbl;
        c.bias = c.lens = c.initial = true;
        c.lbr = c.op == "GRU" && dbl;
        c.S = 4, c.B = 3, c.I = 30, c.H = 27;
        Problem p = make_problem(c, rng);
        // Sigmoid and Tanh: unbounded activations over 30-term sums leave float beyond 2e-5 of double.
        for (size_t k = 0; k < p.acts.size(); ++k) p.acts[k] = Act{k % 2 ? "Tanh" : "Sigmoid"};
        p.alphas.clear(), p.betas.clear();
        INFO(describe(p));
        const Values fed = run_problem(p), constant = run_problem(p, true);
        REQUIRE(fed.size() == constant.size());
        for (size_t i = 0; i < fed.size(); ++i) {
          const Tensor &a = fed[i].tensor(), &b = constant[i].tensor();
          REQUIRE(a.shape() == b.shape());
          CHECK(std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0);
        }
        const Result want = oracle(p);
        check_close(canonical_y(p.c, p.D, constant[0].tensor()), want.Y, dbl ? 1e-11 : 2e-5, "Y");
        ++cases;
      }
  CHECK(cases == 18);
}

// The rotary-embedding pass on hand-built Llama-style RoPE (q and k of 2 heads of 8, dynamic batch
// and sequence, position ids of two batches at different offsets) in the forms exporters write,
// and the near misses it must leave alone, each with its --explain reason. Every result is checked
// against the original with the evaluator.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "optimize_test_util.h"
#include "shape_inference.h"

using namespace refeval;
using namespace refeval::build;
using refeval::testing::count_ops;

namespace {

constexpr int64_t N = 2, H = 8, D = N * H, kRows = 32, kPartial = 4;

// How computed frequencies f (B, S, r/2) are written, f[b, s, i] = float(p[b, s]) * inv_freq[i].
enum class Freqs {
  MatMulT,        // transformers >= 4.38: Transpose(inv (B, r/2, 1) @ float(p[:, None, :]), 0 2 1)
  Mul,            // Phi-3: float(p[..., None]) * inv (r/2)
  MulInvFirst,    // inv (1, 1, r/2) * Unsqueeze(float(p), -1)
  OuterMatMul,    // float(p[..., None]) (B, S, 1) @ inv (1, r/2): torch.outer's export, no Transpose
  Einsum,         // einsum("bs,d->bsd", float(p), inv)
  EinsumT,        // Transpose(einsum("bs , d -> bds", ...), 0 2 1)
  EinsumEllipsis, // einsum("...,d->...d", float(p), inv)
};

struct Form {
  bool computed = false;       // cos/sin = Cos/Sin(Concat(f, f)), f from positions and inv_freq
  Freqs freqs = Freqs::MatMulT;
  bool partial = false;        // only the first kPartial of H columns rotate (GPT-NeoX / Phi-2)
  bool partial_split = false;  // the partial parts cut by one Split
  bool split = false;          // halves by Split (split sizes input; num_outputs at opset 18)
  bool shape_bounds = false;   // slice bounds from Shape -> Gather -> Div 2 (folded first)
  bool cos_first = false;      // cos * x and sin * rotate_half(x)
  bool add_swapped = false;    // rotate_half(x) * sin + x * cos
  bool sliced_table = false;   // Gather(Slice(T, 0:S + 20), positions)
  bool bsnh = false;           // x (B, S, N, h), cos unsqueezed at axis 2
  bool squeezed_table = false; // T (1, 1, max_pos, h) sliced on axis 2, squeezed twice, then gathered
  bool scaled = false;         // cos and sin times attention_scaling 0.75 (computed form)
  int opset = 17;
  // near misses
  bool sign_on_first = false;  // Concat(x2, -x1)
  bool no_neg = false;         // Concat(x2, x1)
  bool neg_first_half = false; // Concat(-x1, x2)
  bool uneven_table = false;   // the cos table's halves differ
  bool range_positions = false;// positions from Range, computed in the graph
  bool shifted_positions = false;  // f = (float(p) + 1) * inv_freq
  bool partial_swapped = false;    // Concat(q[..., r:], rotated): not the partial rotation
  int64_t rot() const { return partial ? kPartial : H; }
};

// inv_freq of a rotation over r columns: r/2 values.
std::vector<float> inv_freq(int64_t r = H) {
  std::vector<float> inv(size_t(r / 2));
  for (int64_t i = 0; i < r / 2; ++i) inv[size_t(i)] = float(1.0 / std::pow(10000.0, double(2 * i) / double(r)));
  return inv;
}

// cat(freqs, freqs) tables of kRows positions, r columns.
Tensor table(bool cosine, bool uneven, int64_t r) {
  const std::vector<float> inv = inv_freq(r);
  std::vector<float> v(size_t(kRows * r));
  for (int64_t p = 0; p < kRows; ++p)
    for (int64_t i = 0; i < r; ++i) {
      const float angle = float(p) * inv[size_t(i % (r / 2))];
      v[size_t(p * r + i)] = cosine ? std::cos(angle) : std::sin(angle);
    }
  if (uneven) v[size_t(3 * r + r - 1)] += 0.25f;
  return Tensor::from_vector<float>({kRows, r}, v);
}

Tensor ints(std::vector<int64_t> v) { return Tensor::from_vector<int64_t>({int64_t(v.size())}, v); }

class RopeBuilder {
 public:
  explicit RopeBuilder(Form f) : f_(f) {}

  Model build() {
    init("head_shape", ints({0, 0, N, H}));
    const std::string pos = positions();
    const std::string cos = trig(pos, true), sin = trig(pos, false);
    for (const std::string q : {"q", "k"}) {
      add("Reshape", {q + "_in", "head_shape"}, {q + "_heads"});
      std::string x = q + "_heads";
      if (!f_.bsnh) add("Transpose", {x}, {q + "_t"}, {attr("perm", std::vector<int64_t>{0, 2, 1, 3})}), x = q + "_t";
      if (!f_.partial) {
        rope(q, x, cos, sin, q + "_out");
        continue;
      }
      // q[..., :r] rotated, q[..., r:] passed through
      if (f_.partial_split) {
        init(q + "_parts", ints({kPartial, H - kPartial}));
        add("Split", {x, q + "_parts"}, {q + "_head", q + "_pass"}, {attr("axis", int64_t(-1))});
      } else {
        init(q + "_p0", ints({0})), init(q + "_pr", ints({kPartial})), init(q + "_pend", ints({std::numeric_limits<int64_t>::max()}));
        init(q + "_paxis", ints({3}));
        add("Slice", {x, q + "_p0", q + "_pr", q + "_paxis"}, {q + "_head"});
        add("Slice", {x, q + "_pr", q + "_pend", q + "_paxis"}, {q + "_pass"});
      }
      rope(q, q + "_head", cos, sin, q + "_rotated");
      add("Concat", f_.partial_swapped ? std::vector<std::string>{q + "_pass", q + "_rotated"} : std::vector<std::string>{q + "_rotated", q + "_pass"},
          {q + "_out"}, {attr("axis", int64_t(-1))});
    }
    const std::vector<DimSpec> out = f_.bsnh ? std::vector<DimSpec>{"batch", "seq", N, H} : std::vector<DimSpec>{"batch", N, "seq", H};
    return model(graph("rope", nodes_,
                       {tensor_info("q_in", DType::Float, {"batch", "seq", D}), tensor_info("k_in", DType::Float, {"batch", "seq", D}),
                        tensor_info("position_ids", DType::Int64, {"batch", "seq"})},
                       {tensor_info("q_out", DType::Float, out), tensor_info("k_out", DType::Float, out)}, inits_),
                 {{"", f_.opset}});
  }

 private:
  void add(const std::string& op, std::vector<std::string> in, std::vector<std::string> out, std::vector<Attribute> a = {}) {
    const std::string name = "/" + out[0] + "/" + op;  // before the move: the order of the arguments is unspecified
    nodes_.push_back(node(op, std::move(in), std::move(out), std::move(a), name));
  }
  void init(const std::string& name, Tensor t) { inits_.push_back({name, std::move(t)}); }

  std::string positions() {
    if (!f_.range_positions) return "position_ids";
    // arange(S) broadcast to (B, S): not the model's position ids input.
    init("zero", Tensor::scalar<int64_t>(0)), init("one", Tensor::scalar<int64_t>(1)), init("i1", ints({1}));
    add("Shape", {"position_ids"}, {"pshape"});
    add("Gather", {"pshape", "one"}, {"plen"}, {attr("axis", int64_t(0))});
    add("Range", {"zero", "plen", "one"}, {"arange"});
    add("Unsqueeze", {"arange", "zero_axis"}, {"arange_row"});
    init("zero_axis", ints({0}));
    add("Expand", {"arange_row", "pshape"}, {"range_pos"});
    return "range_pos";
  }

  std::string unsqueeze(const std::string& v, int64_t axis) {
    init(v + "_axes", ints({axis}));
    add("Unsqueeze", {v, v + "_axes"}, {v + "_u"});
    return v + "_u";
  }

  std::string trig(const std::string& pos, bool cosine) {
    const std::string c = cosine ? "cos" : "sin";
    const int64_t axis = f_.bsnh ? 2 : 1;
    if (f_.computed) {
      if (cosine) frequencies(pos);
      add(cosine ? "Cos" : "Sin", {"emb"}, {c + "_raw"});
      init(c + "_scaling", Tensor::scalar<float>(f_.scaled ? 0.75f : 1.0f));
      add("Mul", {c + "_raw", c + "_scaling"}, {c + "_scaled"});
      add("Cast", {c + "_scaled"}, {c + "_cast"}, {attr("to", int64_t(DType::Float))});
      return unsqueeze(c + "_cast", axis);
    }
    init(c + "_cached", table(cosine, cosine && f_.uneven_table, f_.rot()));
    std::string data = c + "_cached";
    if (f_.squeezed_table) {  // transformers 4.3x: cos_cached[:, :, :seq_len, ...].squeeze(1).squeeze(0)
      inits_.back().value = inits_.back().value.reshaped({1, 1, kRows, f_.rot()});
      init(c + "_s0", ints({0})), init(c + "_end", ints({20})), init(c + "_ax2", ints({2})), init(c + "_q1", ints({1})), init(c + "_q0", ints({0}));
      add("Slice", {data, c + "_s0", c + "_end", c + "_ax2"}, {c + "_rows4"});
      add("Squeeze", {c + "_rows4", c + "_q1"}, {c + "_sq1"});
      add("Squeeze", {c + "_sq1", c + "_q0"}, {c + "_sq0"});
      data = c + "_sq0";
    }
    if (f_.sliced_table) {
      if (cosine) {
        init("one_idx", Tensor::scalar<int64_t>(1)), init("twenty", ints({20})), init("row0", ints({0})), init("axis0", ints({0}));
        add("Shape", {pos}, {"tshape"});
        add("Gather", {"tshape", "one_idx"}, {"tlen"}, {attr("axis", int64_t(0))});
        add("Unsqueeze", {"tlen", "axis0"}, {"tlen1"});
        add("Add", {"tlen1", "twenty"}, {"tend"});
      }
      add("Slice", {data, "row0", "tend", "axis0"}, {c + "_rows"});
      data = c + "_rows";
    }
    add("Gather", {data, pos}, {c + "_g"}, {attr("axis", int64_t(0))});
    return unsqueeze(c + "_g", axis);
  }

  // emb = Concat(f, f) with f (B, S, r/2) computed from the positions in the form f_.freqs.
  void frequencies(const std::string& pos) {
    const int64_t half = f_.rot() / 2;
    const std::vector<float> inv = inv_freq(f_.rot());
    const auto cast = [&](const std::string& v) {
      add("Cast", {v}, {v + "_f"}, {attr("to", int64_t(DType::Float))});
      return v + "_f";
    };
    std::string f = "freqs";
    switch (f_.freqs) {
      case Freqs::MatMulT: {  // inv_freq[None, :, None].expand(B, -1, 1) @ position_ids[:, None, :].float()
        init("inv_freq", Tensor::from_vector<float>({1, half, 1}, inv));
        init("start0", ints({0})), init("end1", ints({1})), init("inv_tail", ints({half, 1}));
        add("Shape", {pos}, {"pos_shape"});
        add("Slice", {"pos_shape", "start0", "end1"}, {"pos_batch"});
        add("Concat", {"pos_batch", "inv_tail"}, {"inv_shape"}, {attr("axis", int64_t(0))});
        add("Expand", {"inv_freq", "inv_shape"}, {"inv_expanded"});
        add("MatMul", {"inv_expanded", cast(unsqueeze(pos, 1))}, {"freqs_t"});
        add("Transpose", {"freqs_t"}, {"freqs"}, {attr("perm", std::vector<int64_t>{0, 2, 1})});
        break;
      }
      case Freqs::Mul: {
        init("inv_freq", Tensor::from_vector<float>({half}, inv));
        const std::string p = f_.shifted_positions ? "pos_shifted" : cast(unsqueeze(pos, -1));
        if (f_.shifted_positions) {
          init("one_f", Tensor::scalar<float>(1.0f));
          add("Add", {cast(unsqueeze(pos, -1)), "one_f"}, {"pos_shifted"});
        }
        add("Mul", {p, "inv_freq"}, {"freqs"});
        break;
      }
      case Freqs::MulInvFirst:
        init("inv_freq", Tensor::from_vector<float>({1, 1, half}, inv));
        add("Mul", {"inv_freq", unsqueeze(cast(pos), 2)}, {"freqs"});
        break;
      case Freqs::OuterMatMul:
        init("inv_freq", Tensor::from_vector<float>({1, half}, inv));
        add("MatMul", {cast(unsqueeze(pos, -1)), "inv_freq"}, {"freqs"});
        break;
      case Freqs::Einsum:
      case Freqs::EinsumT:
      case Freqs::EinsumEllipsis: {
        init("inv_freq", Tensor::from_vector<float>({half}, inv));
        const char* eq = f_.freqs == Freqs::Einsum ? "bs,d->bsd" : f_.freqs == Freqs::EinsumT ? "bs , d -> bds" : "...,d->...d";
        if (f_.freqs == Freqs::EinsumT) f = "freqs_t";
        add("Einsum", {cast(pos), "inv_freq"}, {f}, {attr("equation", std::string(eq))});
        if (f_.freqs == Freqs::EinsumT) add("Transpose", {"freqs_t"}, {"freqs"}, {attr("perm", std::vector<int64_t>{0, 2, 1})});
        break;
      }
    }
    add("Concat", {"freqs", "freqs"}, {"emb"}, {attr("axis", int64_t(-1))});
  }

  // y = x * cos + rotate_half(x) * sin for q or k, rotating r = f_.rot() columns.
  void rope(const std::string& q, const std::string& x, const std::string& cos, const std::string& sin, const std::string& y) {
    const int64_t R = f_.rot();
    std::string x1 = q + "_x1", x2 = q + "_x2";
    if (f_.split) {
      if (f_.opset >= 18) {
        add("Split", {x}, {x1, x2}, {attr("axis", int64_t(-1)), attr("num_outputs", int64_t(2))});
      } else {
        init(q + "_sizes", ints({R / 2, R / 2}));
        add("Split", {x, q + "_sizes"}, {x1, x2}, {attr("axis", int64_t(-1))});
      }
    } else if (f_.shape_bounds) {
      init(q + "_three", Tensor::scalar<int64_t>(3)), init(q + "_two", Tensor::scalar<int64_t>(2)), init(q + "_ax0", ints({0}));
      init(q + "_zero", ints({0})), init(q + "_big", ints({std::numeric_limits<int64_t>::max()})), init(q + "_axes", ints({3}));
      add("Shape", {x}, {q + "_shape"});
      add("Gather", {q + "_shape", q + "_three"}, {q + "_h"}, {attr("axis", int64_t(0))});
      add("Div", {q + "_h", q + "_two"}, {q + "_half"});
      add("Unsqueeze", {q + "_half", q + "_ax0"}, {q + "_half1"});
      add("Slice", {x, q + "_zero", q + "_half1", q + "_axes"}, {x1});
      add("Slice", {x, q + "_half1", q + "_big", q + "_axes"}, {x2});
    } else {
      init(q + "_s0", ints({0})), init(q + "_e0", ints({R / 2})), init(q + "_s1", ints({R / 2}));
      init(q + "_e1", ints({std::numeric_limits<int64_t>::max()})), init(q + "_last", ints({-1}));
      add("Slice", {x, q + "_s0", q + "_e0", q + "_last"}, {x1});
      add("Slice", {x, q + "_s1", q + "_e1", q + "_last"}, {x2});
    }
    std::vector<std::string> halves;
    if (f_.no_neg) {
      halves = {x2, x1};
    } else if (f_.sign_on_first) {
      add("Neg", {x1}, {q + "_neg"});
      halves = {x2, q + "_neg"};
    } else if (f_.neg_first_half) {
      add("Neg", {x1}, {q + "_neg"});
      halves = {q + "_neg", x2};
    } else {
      add("Neg", {x2}, {q + "_neg"});
      halves = {q + "_neg", x1};
    }
    add("Concat", halves, {q + "_rot"}, {attr("axis", int64_t(-1))});
    add("Mul", f_.cos_first ? std::vector<std::string>{cos, x} : std::vector<std::string>{x, cos}, {q + "_xc"});
    add("Mul", f_.cos_first ? std::vector<std::string>{sin, q + "_rot"} : std::vector<std::string>{q + "_rot", sin}, {q + "_rs"});
    add("Add", f_.add_swapped ? std::vector<std::string>{q + "_rs", q + "_xc"} : std::vector<std::string>{q + "_xc", q + "_rs"}, {y});
  }

  Form f_;
  std::vector<Node> nodes_;
  std::vector<Initializer> inits_;
};

// Batch 2, sequence 5: positions 3..7 and 11..15 (or from `first` on, for the computed caches).
std::map<std::string, Value> feeds(int64_t first0 = 3, int64_t first1 = 11) {
  std::vector<float> q(2 * 5 * D), k(2 * 5 * D);
  for (size_t i = 0; i < q.size(); ++i) q[i] = float((i * 37) % 41) / 10.0f - 2.0f, k[i] = float((i * 13) % 29) / 7.0f - 2.0f;
  std::vector<int64_t> pos;
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t s = 0; s < 5; ++s) pos.push_back((b ? first1 : first0) + s);
  return {{"q_in", Tensor::from_vector<float>({2, 5, D}, q)},
          {"k_in", Tensor::from_vector<float>({2, 5, D}, k)},
          {"position_ids", Tensor::from_vector<int64_t>({2, 5}, pos)}};
}

// Runs the pass (after shape and constant folding when asked) and dead-code removal, as the
// optimizer does, without depending on its pass list.
Model rotary(Model m, bool fold = false, optimize::Explain* explain = nullptr) {
  optimize::Inference inference;
  optimize::PassContext ctx{Registry::builtin(), &inference, explain};
  std::vector<optimize::Pass> passes;
  if (fold) passes = {optimize::shape_folding_pass(), optimize::constant_folding_pass()};
  passes.push_back(optimize::rotary_embedding_pass());
  passes.push_back(optimize::dead_code_pass());
  for (const optimize::Pass& p : passes) {
    inference = optimize::infer(m);
    p.run(m, ctx);
  }
  m.opsets["com.microsoft"] = 1;
  return m;
}

void check_equivalent(const Model& original, const Model& fused, const std::map<std::string, Value>& in = feeds()) {
  fusion::CheckOptions check;
  check.repeat = 1;
  check.tolerance.atol = 1e-5;
  const fusion::FusionReport r = optimize::verify(original, fused, Registry::builtin(), in, check);
  CHECK_MESSAGE(r.equivalent(), "the fused model differs from the original");
}

const Node& only_node(const Model& m, const std::string& op) {
  const auto it = std::find_if(m.graph.nodes.begin(), m.graph.nodes.end(), [&](const Node& n) { return n.op_type == op; });
  REQUIRE(it != m.graph.nodes.end());
  return *it;
}

int rotary_caches(const Model& m) {
  int n = 0;
  for (const Initializer& i : m.graph.initializers) n += i.name.rfind("rotary_", 0) == 0 && i.name.find("cache") != std::string::npos;
  return n;
}

// The model unfused, with the --explain line for the pass containing `reason`.
void check_refused(const Form& f, const std::string& reason) {
  const Model m = RopeBuilder(f).build();
  optimize::Explain explain;
  const Model out = rotary(m, false, &explain);
  CHECK(count_ops(out, "RotaryEmbedding") == 0);
  check_equivalent(m, out);
  const std::string lines = testing::not_fused_lines(explain);
  CHECK_MESSAGE(lines.find("not fused: rotary-embedding at") != std::string::npos, lines);
  CHECK_MESSAGE(lines.find(reason) != std::string::npos, lines);
}

}  // namespace

TEST_CASE("rotary fusion: Llama's gathered cos/sin and sliced halves become two RotaryEmbedding sharing one cache pair") {
  const Model m = RopeBuilder({}).build();
  const Model out = rotary(m);
  CHECK(count_ops(out, "RotaryEmbedding") == 2);
  CHECK(count_ops(out, "Neg") == 0);
  CHECK(count_ops(out, "Gather") == 0);  // the cos/sin chains died with their readers
  CHECK(rotary_caches(out) == 2);
  const Node& r = only_node(out, "RotaryEmbedding");
  CHECK(r.domain == "com.microsoft");
  REQUIRE(r.inputs.size() == 4);
  CHECK(r.inputs[0] == "q_t");
  CHECK(r.inputs[1] == "position_ids");
  CHECK(r.find_attribute("interleaved")->i == 0);
  CHECK(r.find_attribute("num_heads")->i == N);
  const Initializer* cos = out.graph.find_initializer(r.inputs[2]);
  REQUIRE(cos != nullptr);
  CHECK(cos->value.shape() == Shape{kRows, H / 2});
  // The cache is the table's first half: row 5 holds cos(5 * inv_freq).
  CHECK(cos->value.data<float>()[5 * H / 2 + 1] == doctest::Approx(std::cos(5.0 * inv_freq()[1])));
  check_equivalent(m, out);
}

TEST_CASE("rotary fusion: every exporter form fuses q and k and stays equivalent") {
  struct Case {
    const char* name;
    Form form;
    bool fold = false;
  };
  const std::vector<Case> cases = {
      {"Split with sizes", {.split = true}},
      {"Split num_outputs (opset 18)", {.split = true, .opset = 18}},
      {"cos * x, sin * rotate_half", {.cos_first = true}},
      {"Add operands swapped", {.add_swapped = true}},
      {"table sliced to the sequence", {.sliced_table = true}},
      {"table (1, 1, max_pos, h) sliced and squeezed", {.squeezed_table = true}},
      {"slice bounds from Shape / 2 after folding", {.shape_bounds = true}, true},
      {"x (B, S, N, h)", {.bsnh = true}},
      {"cos/sin computed from inv_freq", {.computed = true}},
      {"computed, scaled, Split, cos first", {.computed = true, .split = true, .cos_first = true, .scaled = true}},
      {"computed, x (B, S, N, h)", {.computed = true, .add_swapped = true, .bsnh = true}},
  };
  for (const Case& c : cases) {
    const std::string name = c.name;
    CAPTURE(name);
    const Model m = RopeBuilder(c.form).build();
    optimize::Explain explain;
    const Model out = rotary(m, c.fold, &explain);
    for (const std::string& line : explain.not_fused) MESSAGE(line);
    CHECK(count_ops(out, "RotaryEmbedding") == 2);
    CHECK(count_ops(out, "Neg") == 0);
    CHECK(count_ops(out, "Cos") == 0);
    CHECK(rotary_caches(out) == 2);
    if (c.form.bsnh) CHECK(count_ops(out, "Reshape") == 2 + 4);  // the heads' two, and two around each fused node
    check_equivalent(m, out);
    if (c.form.computed) check_equivalent(m, out, feeds(1000, 4090));  // far positions, the last rows of the caches
  }
}

TEST_CASE("rotary fusion: computed caches cover positions below 4096; a later position fails naming it") {
  const Model out = rotary(RopeBuilder({.computed = true}).build());
  const Node& r = only_node(out, "RotaryEmbedding");
  CHECK(out.graph.find_initializer(r.inputs[2])->value.shape() == Shape{4096, H / 2});
  ReferenceEvaluator ev(out, {&Registry::builtin()});
  CHECK_THROWS_WITH_AS(ev.run({"q_out"}, feeds(3, 4094)), doctest::Contains("position 4096 is outside the cos/sin caches' 4096 rows"), Error);
}

TEST_CASE("rotary fusion: look-alikes and refused sources stay unfused, with the reason under --explain") {
  check_refused({.sign_on_first = true}, "rotate-half has the sign on the first half");
  check_refused({.split = true, .sign_on_first = true}, "rotate-half has the sign on the first half");
  check_refused({.no_neg = true}, "the halves are swapped without a Neg");
  check_refused({.split = true, .no_neg = true}, "the halves are swapped without a Neg");
  check_refused({.neg_first_half = true}, "the Concat reads -x[0:4] and x[4:8]; rotate_half is Concat(-x[4:8], x[0:4])");
  check_refused({.uneven_table = true}, "the cos table 'cos_cached' has different halves (row 3, column 3): not cat(freqs, freqs)");
}

TEST_CASE("rotary fusion: positions computed in the graph (arange of the sequence, broadcast) fuse as given ones do") {
  for (const Form& f : {Form{.range_positions = true}, Form{.computed = true, .range_positions = true}}) {
    const Model m = RopeBuilder(f).build();
    const Model out = rotary(m);
    CHECK(count_ops(out, "RotaryEmbedding") == 2);
    CHECK(only_node(out, "RotaryEmbedding").inputs[1] == "range_pos");
    check_equivalent(m, out);
  }
}

TEST_CASE("rotary fusion: an intermediate read elsewhere keeps that one unfused; cos and sin swapped still fuse (any tables)") {
  // The rotate_half result of q is also a graph output.
  Model m = RopeBuilder({}).build();
  m.graph.outputs.push_back(tensor_info("q_rot", DType::Float, {"batch", N, "seq", H}));
  optimize::Explain explain;
  Model out = rotary(m, false, &explain);
  CHECK(count_ops(out, "RotaryEmbedding") == 1);  // k still fuses
  check_equivalent(m, out);
  REQUIRE(explain.not_fused.size() == 1);
  CHECK(explain.not_fused[0].find("'q_rot'") != std::string::npos);
  // x * sin + rotate_half(x) * cos is RotaryEmbedding with the tables exchanged.
  for (const bool computed : {false, true}) {
    m = RopeBuilder({.computed = computed}).build();
    for (Node& n : m.graph.nodes)
      if (n.outputs[0].ends_with("_xc") || n.outputs[0].ends_with("_rs"))  // the products, not the scaling
        for (std::string& in : n.inputs) in = in.rfind("cos", 0) == 0 ? "sin" + in.substr(3) : in.rfind("sin", 0) == 0 ? "cos" + in.substr(3) : in;
    out = rotary(m);
    CHECK(count_ops(out, "RotaryEmbedding") == 2);
    check_equivalent(m, out);
  }
}

TEST_CASE("rotary fusion: frequencies as any outer product of the positions and inv_freq fuse (Mul, MatMul, Einsum; transposed or not)") {
  struct Case {
    const char* name;
    Freqs freqs;
  };
  const std::vector<Case> cases = {
      {"Transpose(inv_freq @ positions)", Freqs::MatMulT},  {"positions[..., None] * inv_freq (Phi-3)", Freqs::Mul},
      {"inv_freq * positions, cast first", Freqs::MulInvFirst}, {"positions[..., None] @ inv_freq[None] (torch.outer)", Freqs::OuterMatMul},
      {"einsum bs,d->bsd", Freqs::Einsum},                   {"Transpose(einsum bs,d->bds)", Freqs::EinsumT},
      {"einsum ...,d->...d", Freqs::EinsumEllipsis},
  };
  for (const Case& c : cases)
    for (const bool bsnh : {false, true}) {
      const std::string name = c.name;
      CAPTURE(name);
      CAPTURE(bsnh);
      const Model m = RopeBuilder({.computed = true, .freqs = c.freqs, .bsnh = bsnh}).build();
      optimize::Explain explain;
      const Model out = rotary(m, false, &explain);
      for (const std::string& line : explain.not_fused) MESSAGE(line);
      CHECK(count_ops(out, "RotaryEmbedding") == 2);
      CHECK(count_ops(out, "Cos") + count_ops(out, "Sin") + count_ops(out, "Einsum") + count_ops(out, "MatMul") == 0);
      CHECK(rotary_caches(out) == 2);
      const Node& r = only_node(out, "RotaryEmbedding");
      const Tensor& cos = out.graph.find_initializer(r.inputs[2])->value;
      CHECK(cos.shape() == Shape{4096, H / 2});
      CHECK(cos.data<float>()[5 * H / 2 + 1] == std::cos(float(5) * inv_freq()[1]));
      check_equivalent(m, out);                         // batch 2, positions 3..7 and 11..15
      check_equivalent(m, out, feeds(1000, 4090));      // far positions, the caches' last rows
      check_equivalent(m, out, feeds(7, 0));            // the second row from 0
    }
}

TEST_CASE("rotary fusion: frequencies that are not the position ids times inv_freq stay, naming the frequencies' Concat") {
  // (float(p) + 1) * inv_freq: RotaryEmbedding would read p.
  check_refused({.computed = true, .freqs = Freqs::Mul, .shifted_positions = true},
                "the frequencies f ('freqs') of Concat(f, f) '/emb/Concat' (from Mul '/freqs/Mul') are not position ids times a constant inv_freq");
  check_refused({.computed = true, .freqs = Freqs::Mul, .shifted_positions = true},
                "'/freqs/Mul' (Mul) does not multiply the position ids cast to float by a constant inv_freq");
}

TEST_CASE("rotary fusion: a partial rotation (rotary_dim < head size) becomes one RotaryEmbedding with rotary_embedding_dim") {
  struct Case {
    const char* name;
    Form form;
  };
  const std::vector<Case> cases = {
      {"gathered tables, Slices", {.partial = true}},
      {"gathered tables, Split", {.partial = true, .partial_split = true}},
      {"computed Phi-3 style, rotate-half by Split", {.computed = true, .freqs = Freqs::Mul, .partial = true, .split = true}},
      {"computed, x (B, S, N, h)", {.computed = true, .freqs = Freqs::Einsum, .partial = true, .bsnh = true}},
      {"gathered, x (B, S, N, h), Split", {.partial = true, .partial_split = true, .bsnh = true}},
  };
  for (const Case& c : cases) {
    const std::string name = c.name;
    CAPTURE(name);
    const Model m = RopeBuilder(c.form).build();
    optimize::Explain explain;
    const Model out = rotary(m, false, &explain);
    for (const std::string& line : explain.not_fused) MESSAGE(line);
    CHECK(count_ops(out, "RotaryEmbedding") == 2);
    CHECK(count_ops(out, "Concat") + count_ops(out, "Slice") + count_ops(out, "Split") + count_ops(out, "Neg") == 0);
    if (c.form.bsnh) CHECK(count_ops(out, "Reshape") == 2 + 4);
    const Node& r = only_node(out, "RotaryEmbedding");
    CHECK(r.find_attribute("rotary_embedding_dim")->i == kPartial);
    CHECK(r.find_attribute("num_heads")->i == N);
    CHECK(r.inputs[0] == (c.form.bsnh ? "q_out_flat" : "q_t"));
    CHECK(out.graph.find_initializer(r.inputs[2])->value.dim(1) == kPartial / 2);
    check_equivalent(m, out);
    check_equivalent(m, out, feeds(20, 0));
  }
}

TEST_CASE("rotary fusion: the passed-through part before the rotated one is not a partial rotation") {
  const Model m = RopeBuilder({.partial = true, .partial_swapped = true}).build();
  const Model out = rotary(m);
  CHECK(count_ops(out, "RotaryEmbedding") == 2);  // the rotated parts still fuse, on their own
  CHECK(count_ops(out, "Concat") == 2);
  CHECK(only_node(out, "RotaryEmbedding").find_attribute("rotary_embedding_dim") == nullptr);
  check_equivalent(m, out);
}

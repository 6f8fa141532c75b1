// com.microsoft EmbedLayerNormalization (v1): BERT's embedding layer fused with its LayerNorm.
//   inputs: input_ids (B,S), segment_ids? (B,S), word_embedding (V,H), position_embedding (P,H),
//           segment_embedding? (G,H), gamma (H), beta (H), mask? (B,S), position_ids? (B,S) or (1,S)
//   e[b,s] = word[input_ids[b,s]] + position[position_ids[b,s] or s] (+ segment[segment_ids[b,s]])
//   output = LayerNorm over H of e, * gamma + beta          (epsilon defaults to 1e-12)
//   mask_index (B) int32 = number of ones in each mask row (0 without a mask, as ORT's CPU kernel)
//   embedding_sum = e
// Ids are int32; an id outside its table is an error naming the input, row and value.
#include "contrib_common.h"
#include "refeval/registry.h"

namespace refeval::ops::contrib {
namespace {

class EmbedLayerNormalization : public OpRun {
 public:
  using Types = TypeList<float, float16>;
  explicit EmbedLayerNormalization(const NodeContext& ctx) : epsilon_(ctx.attr<float>("epsilon", 1e-12f)) {
    ctx.ignore("mask_index_type");  // only steers ORT's shape inference of output 1
    if (epsilon_ < 0) ctx.fail(fmt::format("epsilon {} is negative", epsilon_));
  }

  Values run(const Values& in, RunContext&) override {
    const Tensor& ids = input_tensor(in, 0);
    const Tensor& word = input_tensor(in, 2);
    const Tensor& pos = input_tensor(in, 3);
    require_types<Types>(word.dtype());
    require_dtype(ids, DType::Int32, "input_ids");
    require_rank(ids, 2, 2, "input_ids");
    require_rank(word, 2, 2, "word_embedding");
    const int64_t B = ids.dim(0), S = ids.dim(1), H = word.dim(1);
    const Shape bs = {B, S};
    std::vector<double> e(size_t(B * S * H), 0.0);
    add_rows(e, table(pos, "position_embedding", H, word.dtype()), position_ids(in, B, S), "position_ids", H);
    add_rows(e, table(word, "word_embedding", H, word.dtype()), ids_of(ids, bs, "input_ids"), "input_ids", H);
    if (has_value(in, 1)) {
      if (!has_value(in, 4)) fail_runtime("segment_ids needs segment_embedding (input 4)");
      add_rows(e, table(input_tensor(in, 4), "segment_embedding", H, word.dtype()), ids_of(input_tensor(in, 1), bs, "segment_ids"),
               "segment_ids", H);
    }
    const std::vector<double> gamma = vector_input(in, 5, H, word.dtype(), "gamma");
    const std::vector<double> beta = vector_input(in, 6, H, word.dtype(), "beta");
    if (gamma.empty() || beta.empty()) fail_runtime("gamma and beta are required");
    std::vector<double> y;
    normalize_rows(e, H, double(epsilon_), false, gamma, beta, y, nullptr, nullptr);

    Tensor mask_index(DType::Int32, {B});
    if (has_value(in, 7)) {
      const std::vector<int64_t> mask = ids_of(input_tensor(in, 7), bs, "mask");
      for (int64_t b = 0; b < B; ++b)
        for (int64_t s = 0; s < S; ++s) mask_index.data<int32_t>()[b] += mask[size_t(b * S + s)] == 1 ? 1 : 0;
    }
    return {from_doubles(word.dtype(), {B, S, H}, y), mask_index, from_doubles(word.dtype(), {B, S, H}, e)};
  }

 private:
  static const Tensor& table(const Tensor& t, const char* name, int64_t H, DType dtype) {
    require_dtype(t, dtype, name);
    require_rank(t, 2, 2, name);
    if (t.dim(1) != H) fail_runtime(fmt::format("{} has shape {}, expected {} columns (the hidden size)", name, shape_to_string(t.shape()), H));
    return t;
  }
  static std::vector<int64_t> ids_of(const Tensor& t, const Shape& want, const char* name) {
    require_dtype(t, DType::Int32, name);
    require_shape(t, want, name);
    return to_int64s(t, name);
  }
  // position_ids (B,S) or (1,S), or 0..S-1 for every row when absent.
  static std::vector<int64_t> position_ids(const Values& in, int64_t B, int64_t S) {
    std::vector<int64_t> p(size_t(B * S));
    if (!has_value(in, 8)) {
      for (size_t i = 0; i < p.size(); ++i) p[i] = int64_t(i) % S;
      return p;
    }
    const Tensor& t = input_tensor(in, 8);
    const std::vector<int64_t> v = ids_of(t, t.shape() == Shape{1, S} ? Shape{1, S} : Shape{B, S}, "position_ids");
    for (size_t i = 0; i < p.size(); ++i) p[i] = v[i % v.size()];
    return p;
  }
  // e[row] += table[ids[row]] for each (b, s) row, widening only the rows in use (a word table
  // holds tens of thousands; widening it all took 200 ms a call for BERT's).
  static void add_rows(std::vector<double>& e, const Tensor& table, const std::vector<int64_t>& ids, const char* name, int64_t H) {
    const int64_t count = table.dim(0);
    visit<Floats>(table.dtype(), [&]<class T>() {
      const T* rows = table.data<T>();
      for (size_t r = 0; r < ids.size(); ++r) {
        if (ids[r] < 0 || ids[r] >= count)
          fail_runtime(fmt::format("{} element {} is {}, outside the table's {} rows", name, r, ids[r], count));
        for (int64_t h = 0; h < H; ++h) e[r * size_t(H) + size_t(h)] += double(compute_t<T>(rows[ids[r] * H + h]));
      }
    });
  }
  float epsilon_;
};

}  // namespace

void register_embed_layer_normalization(Registry& reg) {
  reg.add("com.microsoft", "EmbedLayerNormalization", {1}, make<EmbedLayerNormalization>);
}

}  // namespace refeval::ops::contrib

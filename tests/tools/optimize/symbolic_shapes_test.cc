// Symbolic shapes where ONNX's inference gives up (symbolic_shapes.h): the shapes a torch export
// computes at run time, known as polynomials over the model's dims.
#include <doctest/doctest.h>

#include "graph_index.h"
#include "optimize_test_util.h"
#include "shape_inference.h"
#include "symbolic_shapes.h"
#include "refeval/builder.h"

using namespace refeval;
using namespace refeval::build;
using refeval::optimize::dim_difference;
using refeval::optimize::dims_equal;
using refeval::testing::dims_text;

namespace {

Initializer ints(const std::string& name, std::vector<int64_t> v) { return {name, Tensor::from_vector<int64_t>({int64_t(v.size())}, v)}; }
Initializer scalar_int(const std::string& name, int64_t v) { return {name, Tensor::scalar<int64_t>(v)}; }


}  // namespace

TEST_CASE("symbolic shapes: a causal buffer sliced [k - q : k, :k] with a past is (1, 1, seq, past + seq)") {
  // k = Concat(past (B, 4, past, 8), new (B, 4, seq, 8)) on axis 2; q_len, k_len from Shape; the
  // bool buffer (1, 1, 64, 64) sliced rows [k_len - q_len, k_len) and columns [0, k_len); then
  // Where over the scores (B, 4, seq, k_len): ONNX 1.12 knows none of these dims.
  std::vector<Node> nodes = {
      node("Concat", {"past", "new"}, {"k"}, {attr("axis", int64_t(2))}),
      node("Shape", {"q"}, {"q_shape"}),
      node("Gather", {"q_shape", "two"}, {"q_len"}, {attr("axis", int64_t(0))}),
      node("Shape", {"k"}, {"k_shape"}),
      node("Gather", {"k_shape", "two"}, {"k_len"}, {attr("axis", int64_t(0))}),
      node("Sub", {"k_len", "q_len"}, {"start"}),
      node("Unsqueeze", {"start", "zero_axis"}, {"start1"}),
      node("Unsqueeze", {"k_len", "zero_axis"}, {"end1"}),
      node("Slice", {"buffer", "start1", "end1", "axis2"}, {"rows"}),
      node("Slice", {"rows", "zero1", "end1", "axis3"}, {"block"}),
      node("Transpose", {"k"}, {"kt"}, {attr("perm", std::vector<int64_t>{0, 1, 3, 2})}),
      node("MatMul", {"q", "kt"}, {"scores"}),
      node("Where", {"block", "scores", "filler"}, {"masked"}),
      node("Softmax", {"masked"}, {"p"}, {attr("axis", int64_t(-1))}),
  };
  Tensor buffer(DType::Bool, {1, 1, 64, 64});
  Model m = model(graph("g", nodes,
                        {tensor_info("past", DType::Float, {"batch", 4, "past", 8}), tensor_info("new", DType::Float, {"batch", 4, "seq", 8}),
                         tensor_info("q", DType::Float, {"batch", 4, "seq", 8})},
                        {tensor_info("p", DType::Float, {"batch", 4, "seq", "total"})},
                        {{"buffer", buffer}, scalar_int("two", 2), ints("zero_axis", {0}), ints("zero1", {0}), ints("axis2", {2}),
                         ints("axis3", {3}), {"filler", Tensor::scalar<float>(-1e9f)}}));
  const optimize::Inference inf = optimize::infer(m);
  CHECK(dims_text(inf, "k") == "batch,4,past + seq,8");
  CHECK(dims_text(inf, "block") == "1,1,seq,past + seq");
  CHECK(dims_text(inf, "scores") == "batch,4,seq,past + seq");
  CHECK(dims_text(inf, "masked") == "batch,4,seq,past + seq");
  // The slice bounds as shape data: start = k_len - q_len.
  REQUIRE(inf.shape_data.count("start"));
  CHECK(inf.shape_data.at("start")[0].param == "past");
  // The graph output's declared `total` names the same length: an alias of the polynomial.
  CHECK(dims_equal(Dim{-1, "total"}, Dim{-1, "past + seq"}, &inf));
  CHECK(dims_equal(*dim_difference(Dim{-1, "total"}, Dim{-1, "past"}, &inf), Dim{-1, "seq"}, &inf));
}

TEST_CASE("symbolic shapes: Range of a length, torch's expand() shape arithmetic, and a Reshape to -1") {
  // positions = Range(0, seq) (ONNX: an unknown length); x + embedding(positions) keeps `seq`;
  // Expand to Where(Equal(shape, -1), 1, shape) as torch writes expand(batch, -1, -1);
  // Reshape (B, S, 12) -> (-1, 12) gives batch*seq.
  std::vector<Node> nodes = {
      node("Shape", {"ids"}, {"ids_shape"}),
      node("Gather", {"ids_shape", "one"}, {"seq_len"}, {attr("axis", int64_t(0))}),
      node("Range", {"zero", "seq_len", "one"}, {"positions"}),
      node("Gather", {"table", "positions"}, {"pos_emb"}, {attr("axis", int64_t(0))}),
      node("Add", {"x", "pos_emb"}, {"h"}),
      node("Shape", {"h"}, {"h_shape"}),
      node("Equal", {"h_shape", "minus_ones"}, {"is_minus_one"}),
      node("Where", {"is_minus_one", "ones", "h_shape"}, {"target"}),
      node("Expand", {"h", "target"}, {"expanded"}),
      node("Reshape", {"expanded", "flat"}, {"rows"}),
  };
  std::vector<float> table(size_t(32 * 12), 0.5f);
  Model m = model(graph("g", nodes, {tensor_info("ids", DType::Int64, {"batch", "seq"}), tensor_info("x", DType::Float, {"batch", "seq", 12})},
                        {tensor_info("rows", DType::Float, {"n", 12})},
                        {scalar_int("one", 1), scalar_int("zero", 0), {"table", Tensor::from_vector<float>({32, 12}, table)},
                         ints("minus_ones", {-1, -1, -1}), ints("ones", {1, 1, 1}), ints("flat", {-1, 12})}));
  const optimize::Inference inf = optimize::infer(m);
  CHECK(dims_text(inf, "positions") == "seq");
  CHECK(dims_text(inf, "h") == "batch,seq,12");
  CHECK(dims_text(inf, "expanded") == "batch,seq,12");
  // The output declares (n, 12): ONNX's name stays, an alias of the polynomial found.
  CHECK(dims_text(inf, "rows") == "n,12");
  CHECK(dims_equal(Dim{-1, "n"}, Dim{-1, "batch*seq"}, &inf));
}

TEST_CASE("symbolic shapes: polynomial dims compare and subtract as polynomials") {
  CHECK(dims_equal(Dim{-1, "seq + past"}, Dim{-1, "past + seq"}));
  CHECK(dims_equal(Dim{3, ""}, Dim{3, ""}));
  CHECK_FALSE(dims_equal(Dim{-1, "seq"}, Dim{-1, "past"}));
  CHECK_FALSE(dims_equal(Dim{}, Dim{}));  // unknown is never equal
  CHECK(dim_difference(Dim{-1, "past + seq"}, Dim{-1, "past"})->param == "seq");
  CHECK(dim_difference(Dim{8, ""}, Dim{3, ""})->value == 5);
  // Optimum names dims with expressions; they parse as polynomials too.
  CHECK(dims_equal(Dim{-1, "past_sequence_length + 1"}, Dim{-1, "1 + past_sequence_length"}));
  CHECK(dims_equal(*dim_difference(Dim{-1, "2*seq - 1"}, Dim{-1, "seq"}), Dim{-1, "seq - 1"}));
}

// Values survive a round trip through their protobuf and .npy forms; bad files give clear errors.
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "refeval/evaluator.h"
#include "refeval/file_backed.h"
#include "refeval/isa.h"
#include "refeval/model_io.h"
#include "test_util.h"

using namespace refeval;
using refeval::testing::tensor;
namespace fs = std::filesystem;

namespace {
fs::path temp_dir() {
  fs::path p = fs::temp_directory_path() / ("refeval_test_" + std::to_string(::getpid()));
  fs::create_directories(p);
  return p;
}
void write_bytes(const fs::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary);
  out << bytes;
}
ValueType tensor_type() { return ValueType::tensor(DType::Float, {}); }
}  // namespace

TEST_CASE("tensors of every kind of element round-trip through TensorProto files") {
  const fs::path dir = temp_dir();
  Tensor i4(DType::Int4, {3});
  i4.data<int4>()[0] = int4::wrap(-8);
  i4.data<int4>()[1] = int4::wrap(7);
  i4.data<int4>()[2] = int4::wrap(-1);
  const Tensor cases[] = {
      tensor<float>({2, 2}, {1.5f, -2, 0, 3}),
      tensor<int64_t>({}, {42}),
      tensor<bool>({3}, {true, false, true}),
      tensor<std::string>({2}, {"héllo", ""}),
      tensor<float16>({1}, {float16(0.5f)}),
      Tensor(DType::Double, {0, 4}),
      i4,  // packed two per byte on disk, one per byte in memory
  };
  for (const Tensor& t : cases) {
    CAPTURE(dtype_short_name(t.dtype()));
    const std::string file = (dir / "t.pb").string();
    write_value_pb(file, "t", t);
    testing::check_equal(read_tensor_pb(file), t, {0, 0});
  }
}

TEST_CASE("sequences and optionals round-trip, chosen by the declared type") {
  const fs::path dir = temp_dir();
  Sequence s;
  s.items = {tensor<float>({2}, {1, 2}), tensor<float>({1}, {3})};
  write_value_pb((dir / "s.pb").string(), "s", s);
  ValueType seq;
  seq.kind = ValueType::Kind::Sequence;
  seq.elem = std::make_shared<ValueType>(tensor_type());
  testing::check_equal(read_value_pb((dir / "s.pb").string(), &seq), s);

  ValueType opt;
  opt.kind = ValueType::Kind::Optional;
  opt.elem = std::make_shared<ValueType>(tensor_type());
  write_value_pb((dir / "o.pb").string(), "o", Optional{});
  CHECK_FALSE(read_value_pb((dir / "o.pb").string(), &opt).optional().has_value());
}

TEST_CASE(".npy files round-trip, and Fortran order and big-endian data are read correctly") {
  const fs::path dir = temp_dir();
  const Tensor t = tensor<int32_t>({2, 3}, {1, 2, 3, 4, 5, 6});
  write_npy((dir / "t.npy").string(), t);
  testing::check_equal(read_npy((dir / "t.npy").string()), t);
  const Tensor s = tensor<std::string>({2}, {"ab", "c"});
  write_npy((dir / "s.npy").string(), s);
  testing::check_equal(read_npy((dir / "s.npy").string()), s);

  // A 2x3 big-endian int16 array stored in Fortran order (columns first).
  std::string header = "{'descr': '>i2', 'fortran_order': True, 'shape': (2, 3), }";
  header.append(128 - 10 - header.size() - 1, ' ');
  header += '\n';
  std::string bytes = std::string("\x93NUMPY\x01\x00", 8) + char(header.size()) + char(0) + header;
  for (int v : {1, 4, 2, 5, 3, 6}) bytes += std::string{char(0), char(v)};
  testing::check_equal(parse_npy(bytes, "f.npy"), tensor<int16_t>({2, 3}, {1, 2, 3, 4, 5, 6}));
}

TEST_CASE("corrupt or truncated inputs give errors that name the file") {
  const fs::path dir = temp_dir();
  write_bytes(dir / "junk.onnx", std::string("\xff\xff\xff\xff garbage", 13));
  CHECK_THROWS_WITH_AS(load_model((dir / "junk.onnx").string()), doctest::Contains("junk.onnx"), Error);
  const std::string model = read_file_bytes(std::string(REFEVAL_SHARED_DIR) + "/docs/verbose-golden/linreg.onnx");
  write_bytes(dir / "cut.onnx", model.substr(0, model.size() / 2));
  CHECK_THROWS_AS(load_model((dir / "cut.onnx").string()), Error);
  CHECK_THROWS_WITH_AS(parse_npy("\x93NUMPY", "x.npy"), doctest::Contains("x.npy"), Error);
  CHECK_THROWS_WITH_AS(parse_model(std::string(), ".", "empty"), doctest::Contains("empty"), Error);
}

TEST_CASE("a TensorProto whose data does not match its shape is refused") {
  const fs::path dir = temp_dir();
  write_value_pb((dir / "t.pb").string(), "t", tensor<float>({4}, {1, 2, 3, 4}));
  std::string bytes = read_file_bytes((dir / "t.pb").string());
  // dims is field 1 (varint): change the only dim from 4 to 5.
  const size_t pos = bytes.find(std::string{'\x08', '\x04'});
  REQUIRE(pos != std::string::npos);
  bytes[pos + 1] = '\x05';
  write_bytes(dir / "bad.pb", bytes);
  CHECK_THROWS_WITH_AS(read_tensor_pb((dir / "bad.pb").string()), doctest::Contains("raw_data has 16 bytes"), Error);
}

TEST_CASE("external data is read relative to the model and may not leave its folder") {
  const std::string dir = std::string(REFEVAL_SOURCE_DIR) + "/tests/data/external/";
  const Model m = load_model(dir + "model.onnx");
  testing::check_equal(m.graph.initializers.at(0).value, tensor<float>({2, 3}, {0, 1, 2, 3, 4, 5}));
  CHECK_THROWS_WITH_AS(load_model(dir + "escape.onnx"), doctest::Contains("leaves the model's folder"), Error);
}

TEST_CASE("model_io: an empty complex tensor from typed fields decodes to zero elements") {
  // Found by fuzzing: complex64 with dims [0] and no float_data copied from a null pointer
  // (undefined behaviour, reported by UBSan). The file is the fuzzer's input, kept as a regression.
  const std::string file = std::string(REFEVAL_SOURCE_DIR) + "/tests/fuzz/regressions/tensor/empty_complex_typed_field";
  ValueType t;
  t.kind = ValueType::Kind::Tensor;
  const Value v = read_value_pb(file, &t);
  REQUIRE(v.is_tensor());
  CHECK(v.tensor().dtype() == DType::Complex64);
  CHECK(v.tensor().size() == 0);
}

TEST_CASE("a large weight in external data is a view of its file, and leaves memory once its MatMul has packed it") {
  const std::string dir = std::string(REFEVAL_SOURCE_DIR) + "/tests/data/external/";
  const Model m = load_model(dir + "matmul.onnx");
  const Tensor& w = m.graph.initializers.at(0).value;
  CHECK(file_backed(w.raw_data(), w.nbytes()));
  CHECK(w.data<float>()[3 * 128 + 1] == float(2.0 / 1000));  // W[k, n] = (k - n) / 1000
  ReferenceEvaluator ev(m);  // packs W as the session is made (on CPUs with the packed kernels)
  if (active_isa() != Isa::Generic) CHECK(resident_bytes(w.raw_data(), w.nbytes()) < w.nbytes() / 2);
  std::vector<float> x(128);
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(i % 7) - 3;
  const Tensor y = ev.run({}, {{"X", tensor<float>({1, 128}, x)}})[0].tensor();
  for (int64_t n = 0; n < 128; ++n) {
    double want = 0, magnitude = 0;
    for (int64_t k = 0; k < 128; ++k) {
      const double term = double(x[size_t(k)]) * double(float(double(k - n) / 1000));
      want += term, magnitude += std::abs(term);
    }
    CHECK(std::abs(double(y.data<float>()[n]) - want) <= 128 * 0x1p-24 * magnitude);  // K float roundings
  }
}

TEST_CASE("a weight in external data that a folded Transpose reads leaves memory after the fold") {
  // A tied LM head reads the embedding table through Transpose(E): the MatMul packs from E itself
  // (this small one makes E^T once) and E's pages go back to the file (545 MB of Qwen2-0.5B's
  // peak RSS).
  const std::string dir = std::string(REFEVAL_SOURCE_DIR) + "/tests/data/external/";
  const Model m = load_model(dir + "transpose_matmul.onnx");
  const Tensor& w = m.graph.initializers.at(0).value;
  REQUIRE(file_backed(w.raw_data(), w.nbytes()));
  ReferenceEvaluator ev(m);
  std::vector<float> x(128);
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(i % 5) - 2;
  const Tensor y = ev.run({}, {{"X", tensor<float>({1, 128}, x)}})[0].tensor();
  CHECK(resident_bytes(w.raw_data(), w.nbytes()) < w.nbytes() / 2);
  for (int64_t n = 0; n < 128; ++n) {  // y[n] = sum_k x[k] W[n, k], W[n, k] = (n - k) / 1000
    double want = 0, magnitude = 0;
    for (int64_t k = 0; k < 128; ++k) {
      const double term = double(x[size_t(k)]) * double(float(double(n - k) / 1000));
      want += term, magnitude += std::abs(term);
    }
    CHECK(std::abs(double(y.data<float>()[n]) - want) <= 128 * 0x1p-24 * magnitude);
  }
  // A second run replays the fold and gives the same bits.
  const Tensor again = ev.run({}, {{"X", tensor<float>({1, 128}, x)}})[0].tensor();
  CHECK(std::memcmp(again.raw_data(), y.raw_data(), y.nbytes()) == 0);
}

TEST_CASE("a model with many weight bytes is saved with external data that loads as views and reads back equal") {
  // Above the threshold (64 MiB by default; 1 byte here) tensors of 1 KB or more go to OUT.data at
  // 64-byte aligned offsets, as ONNX Runtime writes large models; smaller ones stay inline.
  std::vector<float> big(20000), small = {1, 2, 3};
  for (size_t i = 0; i < big.size(); ++i) big[i] = float(i) / 7.0f;
  const std::vector<Initializer> inits = {{"small", tensor<float>({3}, small)}, {"big", tensor<float>({200, 100}, big)},
                                          {"big2", tensor<float>({100, 200}, big)}};
  Graph g = build::graph("g", {build::node("MatMul", {"big", "big2"}, {"y"}), build::node("Add", {"x", "small"}, {"z"})},
                         {build::tensor_info("x", DType::Float, {3})},
                         {build::tensor_info("y", DType::Float, {200, 200}), build::tensor_info("z", DType::Float, {3})}, inits);
  const fs::path dir = temp_dir();
  const std::string path = (dir / "external.onnx").string();
  save_model(build::model(g), path, 1);
  REQUIRE(fs::exists(path + ".data"));
  // two tensors of 80000 bytes, the second starting at the next multiple of 64
  CHECK(fs::file_size(path + ".data") == 80000 + 80000 + (80000 % 64 ? 64 - 80000 % 64 : 0));
  const Model m = load_model(path);
  for (const Initializer& i : inits) {
    const Initializer* back = m.graph.find_initializer(i.name);
    REQUIRE(back);
    testing::check_equal(back->value, i.value);
    CHECK(file_backed(back->value.raw_data(), back->value.nbytes()) == (i.name != "small"));
  }
  save_model(build::model(g), (dir / "inline.onnx").string());  // 120 KB of weights: one file
  CHECK_FALSE(fs::exists(dir / "inline.onnx.data"));
  fs::remove_all(dir);
}

namespace {
// Protobuf's wire format by hand, for files protobuf's own writers would not produce.
std::string varint(uint64_t v) {
  std::string out;
  while (v >= 0x80) out.push_back(char(uint8_t(v) | 0x80)), v >>= 7;
  out.push_back(char(v));
  return out;
}
std::string field(uint32_t number, const std::string& payload) { return varint(uint64_t(number) << 3 | 2) + varint(payload.size()) + payload; }
std::string number(uint32_t field_number, uint64_t v) { return varint(uint64_t(field_number) << 3) + varint(v); }
std::string float_bytes(const std::vector<float>& v) { return std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4); }
// TensorProto: dims (1), data_type (2) float, name (8), then each raw_data (9) in order.
std::string tensor_proto(const std::string& name, int64_t n, const std::vector<std::string>& raw_data) {
  std::string t = number(1, uint64_t(n)) + number(2, 1) + field(8, name);
  for (const std::string& r : raw_data) t += field(9, r);
  return t;
}
std::vector<float> ramp(size_t n, float scale) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = float(i % 1000) * scale;
  return v;
}
}  // namespace

TEST_CASE("a large model file is parsed without its weights' bytes: views where aligned, copies elsewhere, as protobuf reads it") {
  // Initializers of a graph that only lists them, written by hand: the first large and at an
  // offset that is a multiple of 4 or not (its name's length moves it), one with two raw_data
  // fields of which protobuf keeps the last (large: read from the file; small: the proto's own),
  // one small. load_model (files of 1 MB and more take the path that leaves weights in the file)
  // must give what parse_model (protobuf itself) gives.
  const size_t big = 300000;  // 1.2 MB
  const std::vector<float> a = ramp(big, 0.5f), b = ramp(big, 0.25f), c = ramp(64, 2.0f), d = ramp(big / 2, 4.0f);
  for (const std::string& first_name : {std::string("w"), std::string("wx"), std::string("wxy"), std::string("wxyz")}) {
    CAPTURE(first_name);
    std::string graph = field(2, "g");
    graph += field(5, tensor_proto(first_name, int64_t(big), {float_bytes(a)}));
    graph += field(5, tensor_proto("last_large", int64_t(big), {float_bytes(c), float_bytes(b)}));
    graph += field(5, tensor_proto("last_small", 64, {float_bytes(d), float_bytes(c)}));
    graph += field(5, tensor_proto("small", 64, {float_bytes(c)}));
    const std::string model = number(1, 8) + field(8, number(2, 17)) + field(7, graph);
    const fs::path dir = temp_dir();
    const std::string path = (dir / "hand.onnx").string();
    write_bytes(path, model);
    const Model from_file = load_model(path), parsed = parse_model(model, dir.string(), "hand");
    REQUIRE(from_file.graph.initializers.size() == 4);
    for (size_t i = 0; i < 4; ++i) {
      const Tensor &x = from_file.graph.initializers[i].value, &y = parsed.graph.initializers[i].value;
      CAPTURE(from_file.graph.initializers[i].name);
      REQUIRE(x.shape() == y.shape());
      CHECK(std::memcmp(x.raw_data(), y.raw_data(), x.nbytes()) == 0);
    }
    CHECK(from_file.graph.initializers[1].value.data<float>()[999] == b[999]);  // the last raw_data
    CHECK(from_file.graph.initializers[2].value.size() == 64);
    // Where the first tensor's bytes lie decides whether it can be viewed as floats.
    const Tensor& first = from_file.graph.initializers[0].value;
    const auto offset = model.find(float_bytes(a).substr(0, 64));
    CHECK(file_backed(first.raw_data(), first.nbytes()) == (offset % 4 == 0));
    fs::remove_all(dir);
  }
}

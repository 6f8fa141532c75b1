// libFuzzer target: a fuzzed single-node model, run on inputs decoded from the same bytes.
// The first bytes pick an operator from the registry, an opset and attribute values; the rest
// become input tensors. Every operator must answer with outputs or a refeval::Error.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "refeval/builder.h"
#include "refeval/evaluator.h"

namespace {

struct Reader {
  const uint8_t* p;
  size_t n;
  uint8_t byte() { if (!n) return 0; --n; return *p++; }
  int64_t small_int() { return int64_t(int8_t(byte())); }
};

refeval::Tensor read_tensor(Reader& r) {
  using refeval::DType;
  static const DType types[] = {DType::Float, DType::Int64, DType::Int32, DType::Bool, DType::Double,
                                DType::Float16, DType::UInt8, DType::Int8, DType::String};
  const DType t = types[r.byte() % (sizeof(types) / sizeof(types[0]))];
  const int rank = r.byte() % 4;
  refeval::Shape shape;
  for (int i = 0; i < rank; ++i) shape.push_back(r.byte() % 5);
  refeval::Tensor x(t, shape);
  if (t == DType::String) {
    for (int64_t i = 0; i < x.size(); ++i) x.data<std::string>()[i] = std::string(1, char('a' + r.byte() % 26));
  } else if (t == DType::Bool) {
    for (int64_t i = 0; i < x.size(); ++i) x.data<bool>()[i] = r.byte() & 1;
  } else {
    auto* bytes = static_cast<uint8_t*>(x.raw_data());
    for (size_t i = 0; i < x.nbytes(); ++i) bytes[i] = r.byte();
  }
  return x;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Inputs are at most 4x4x4, so 1 MiB is plenty; a larger cap lets a fuzzed size input (a
  // window length, a ConstantOfShape shape) ask for millions of elements: legitimate, but seconds
  // of work per input under the sanitizers, which libFuzzer reports as a timeout.
  refeval::set_memory_cap(1 << 20);
  static const auto ops = refeval::Registry::builtin().list();
  if (ops.empty() || size < 4) return 0;
  Reader r{data, size};
  const refeval::OpRegistration* op = ops[(size_t(r.byte()) << 8 | r.byte()) % ops.size()];
  const int n_inputs = r.byte() % 4, n_outputs = 1 + r.byte() % 3;
  std::vector<std::string> inputs, outputs;
  for (int i = 0; i < n_inputs; ++i) inputs.push_back(std::string(1, 'x').append(std::to_string(i)));
  for (int i = 0; i < n_outputs; ++i) outputs.push_back(std::string(1, 'y').append(std::to_string(i)));
  std::vector<refeval::Attribute> attrs;
  static const char* names[] = {"axis", "axes", "keepdims", "alpha", "to", "perm", "mode", "k"};
  const int n_attrs = r.byte() % 3;
  for (int i = 0; i < n_attrs; ++i) {
    const std::string name = names[r.byte() % 8];
    switch (r.byte() % 3) {
      case 0: attrs.push_back(refeval::build::attr(name, r.small_int())); break;
      case 1: attrs.push_back(refeval::build::attr(name, std::vector<int64_t>{r.small_int(), r.small_int()})); break;
      default: attrs.push_back(refeval::build::attr(name, float(r.small_int()) / 4)); break;
    }
  }
  const refeval::Node node = refeval::build::node(op->op_type, inputs, outputs, attrs, "fuzzed", op->domain);
  const int64_t opset = op->any_version ? 1 : op->since_version + r.byte() % 3;
  try {
    auto ev = refeval::ReferenceEvaluator::from_node(node, {{op->domain, opset}, {"", std::max<int64_t>(opset, 1)}});
    std::map<std::string, refeval::Value> feeds;
    for (const auto& name : inputs) feeds[name] = read_tensor(r);
    ev.run({}, feeds);
  } catch (const refeval::Error&) {
  }
  return 0;
}

// Model and value files: parsing with protobuf's size limits lifted, IR-version and structure
// checks, and the message kind of a value file chosen from the declared type.
#include "refeval/model_io.h"

#include <climits>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>

#include "load/proto_convert.h"

namespace refeval {
namespace {

namespace fs = std::filesystem;
constexpr int64_t kMinIrVersion = 3, kMaxIrVersion = 13;

// Parses one message from a file descriptor without protobuf's default size limit.
template <class Msg>
bool parse_fd(int fd, Msg& msg) {
  google::protobuf::io::FileInputStream raw(fd);
  google::protobuf::io::CodedInputStream coded(&raw);
  coded.SetTotalBytesLimit(INT_MAX);
  coded.SetRecursionLimit(1000);
  return msg.ParseFromCodedStream(&coded) && coded.ConsumedEntireMessage();
}

template <class Msg>
bool parse_bytes(const std::string& bytes, Msg& msg) {
  google::protobuf::io::CodedInputStream coded(reinterpret_cast<const uint8_t*>(bytes.data()), int(bytes.size()));
  coded.SetTotalBytesLimit(INT_MAX);
  coded.SetRecursionLimit(1000);
  return msg.ParseFromCodedStream(&coded) && coded.ConsumedEntireMessage();
}

Model finish_model(onnx::ModelProto& p, const std::string& base_dir, const std::string& name) {
  if (!p.has_ir_version() && !p.has_graph())
    fail_model(fmt::format("{}: not an ONNX model (no ir_version and no graph)", name));
  if (!p.has_graph()) fail_model(fmt::format("{}: the model has no graph", name));
  if (p.ir_version() < kMinIrVersion || p.ir_version() > kMaxIrVersion)
    fail_model(fmt::format("{}: IR version {} is not supported (refeval reads IR {} to {})", name, p.ir_version(),
                           kMinIrVersion, kMaxIrVersion));
  try {
    Model m = proto::to_model(p, base_dir);
    m.path = name;
    return m;
  } catch (const Error& e) {
    fail_model(fmt::format("{}: {}", name, e.what()));
  }
}

bool has_extension(const std::string& path, const char* ext) {
  return fs::path(path).extension() == ext;
}

}  // namespace

std::string read_file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail_input(fmt::format("cannot open '{}'", path));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Model load_model(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) fail_model(fmt::format("{}: is a folder, not a model file", path));
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) fail_model(fmt::format("{}: cannot open the model file", path));
  onnx::ModelProto p;
  const bool ok = parse_fd(fd, p);
  ::close(fd);
  if (!ok) fail_model(fmt::format("{}: not a valid ONNX model (the protobuf does not parse; truncated or corrupt file?)", path));
  return finish_model(p, fs::path(path).parent_path().string(), path);
}

Model parse_model(const std::string& bytes, const std::string& base_dir, const std::string& display_name) {
  onnx::ModelProto p;
  if (!parse_bytes(bytes, p))
    fail_model(fmt::format("{}: not a valid ONNX model (the protobuf does not parse; truncated or corrupt?)", display_name));
  return finish_model(p, base_dir, display_name);
}

std::string serialize_model(const Model& model) {
  onnx::ModelProto p;
  proto::from_model(model, &p);
  std::string out;
  if (!p.SerializeToString(&out)) fail_model("cannot serialize the model (larger than 2 GB?)");
  return out;
}

void save_model(const Model& model, const std::string& path) {
  const std::string bytes = serialize_model(model);
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  if (!out) fail_input(fmt::format("cannot write '{}'", path));
}

Tensor read_tensor_pb(const std::string& path) {
  const std::string bytes = read_file_bytes(path);
  onnx::TensorProto p;
  if (!parse_bytes(bytes, p)) fail_input(fmt::format("{}: not a valid TensorProto", path));
  try {
    return proto::to_tensor(p, fs::path(path).parent_path().string(), p.name().empty() ? path : p.name());
  } catch (const Error& e) {
    fail_input(fmt::format("{}: {}", path, e.what()));
  }
}

Value read_value_pb(const std::string& path, const ValueType* declared) {
  using Kind = ValueType::Kind;
  const Kind kind = declared ? declared->kind : Kind::Tensor;
  if (kind == Kind::Tensor || kind == Kind::Unknown || kind == Kind::SparseTensor) return read_tensor_pb(path);
  const std::string bytes = read_file_bytes(path);
  try {
    if (kind == Kind::Sequence) {
      onnx::SequenceProto p;
      if (!parse_bytes(bytes, p)) fail_input("not a valid SequenceProto");
      return proto::to_value(p, path);
    }
    if (kind == Kind::Optional) {
      onnx::OptionalProto p;
      if (!parse_bytes(bytes, p)) fail_input("not a valid OptionalProto");
      Value v = proto::to_value(p, path);
      if (declared->elem) {
        Optional o = v.optional();
        o.type = declared->elem;
        return o;
      }
      return v;
    }
    onnx::MapProto p;
    if (!parse_bytes(bytes, p)) fail_input("not a valid MapProto");
    return proto::to_value(p, path);
  } catch (const Error& e) {
    fail_input(fmt::format("{}: {}", path, e.what()));
  }
}

void write_value_pb(const std::string& path, const std::string& name, const Value& v) {
  std::string bytes;
  if (v.is_tensor()) {
    onnx::TensorProto p;
    proto::from_tensor(v.tensor(), &p);
    p.set_name(name);
    bytes = p.SerializeAsString();
  } else if (v.is_sequence()) {
    onnx::SequenceProto p;
    proto::from_value(v, &p);
    p.set_name(name);
    bytes = p.SerializeAsString();
  } else if (v.is_optional()) {
    onnx::OptionalProto p;
    proto::from_value(v, &p);
    p.set_name(name);
    bytes = p.SerializeAsString();
  } else if (v.is_map()) {
    onnx::MapProto p;
    proto::from_value(v, &p);
    p.set_name(name);
    bytes = p.SerializeAsString();
  } else {
    fail_runtime(fmt::format("value '{}' is absent and cannot be written", name));
  }
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  if (!out) fail_input(fmt::format("cannot write '{}'", path));
}

Value read_value_file(const std::string& path, const ValueType* declared) {
  if (has_extension(path, ".npy")) return read_npy(path);
  return read_value_pb(path, declared);
}

}  // namespace refeval

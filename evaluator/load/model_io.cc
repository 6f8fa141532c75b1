// Model and value files: parsing with protobuf's size limits lifted, IR-version and structure
// checks, and the message kind of a value file chosen from the declared type.
#include "refeval/model_io.h"

#include <climits>
#include <optional>
#include <vector>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <fcntl.h>
#include <malloc.h>
#include <unistd.h>

#include <fmt/format.h>

#include "load/proto_convert.h"
#include "load/wire_strip.h"

namespace refeval {
namespace {

namespace fs = std::filesystem;
constexpr int64_t kMinIrVersion = 3, kMaxIrVersion = 13;
constexpr uintmax_t kViewFileBytes = 1 << 20;  // smaller models are copied whole
constexpr size_t kStripBytes = 4096;           // initializers this large are read from the file

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

Model finish_model(onnx::ModelProto& p, const std::string& base_dir, const std::string& name,
                   const std::vector<std::optional<proto::FileRange>>* raw_data = nullptr) {
  if (!p.has_ir_version() && !p.has_graph())
    fail_model(fmt::format("{}: not an ONNX model (no ir_version and no graph)", name));
  if (!p.has_graph()) fail_model(fmt::format("{}: the model has no graph", name));
  if (p.ir_version() < kMinIrVersion || p.ir_version() > kMaxIrVersion)
    fail_model(fmt::format("{}: IR version {} is not supported (refeval reads IR {} to {})", name, p.ir_version(),
                           kMinIrVersion, kMaxIrVersion));
  try {
    Model m = proto::to_model(p, base_dir, raw_data);
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
  // A large file is mapped and parsed without its weights' bytes, which protobuf would copy: they
  // become views of the file (refeval/file_backed.h) or are copied from it one at a time.
  std::vector<std::optional<proto::FileRange>> raw_data;
  bool ok = false, parsed = false;
  if (fs::file_size(path, ec) >= kViewFileBytes && !ec) {
    const std::shared_ptr<MappedFile> file = MappedFile::open(path);
    if (std::optional<wire::Stripped> s = wire::strip_initializer_bytes(file->data(), file->size(), kStripBytes)) {
      ok = parse_bytes(s->model, p), parsed = true;
      for (const std::optional<wire::ByteRange>& r : s->raw_data)
        raw_data.push_back(r ? std::optional(proto::FileRange{file, r->offset, r->length}) : std::nullopt);
    }
    // The walk faulted in the pages around every field it read (the kernel maps neighbours too):
    // 87 MB of a 180 MB decoder. They come back from the file where a tensor is read.
    release_file_pages(file->data(), file->size());
  }
  if (!parsed) ok = parse_fd(fd, p);
  ::close(fd);
  if (!ok) fail_model(fmt::format("{}: not a valid ONNX model (the protobuf does not parse; truncated or corrupt file?)", path));
  Model m = finish_model(p, fs::path(path).parent_path().string(), path, raw_data.empty() ? nullptr : &raw_data);
  // The parsed copies of the weights are freed by now; give their pages back to the OS (glibc
  // keeps freed heap memory otherwise, and the packed weights would sit beside it).
  p.Clear();
  malloc_trim(0);
  return m;
}

Model parse_model(const std::string& bytes, const std::string& base_dir, const std::string& display_name) {
  onnx::ModelProto p;
  if (!parse_bytes(bytes, p))
    fail_model(fmt::format("{}: not a valid ONNX model (the protobuf does not parse; truncated or corrupt?)", display_name));
  return finish_model(p, base_dir, display_name);
}

namespace {
std::string serialized(const onnx::ModelProto& p) {
  std::string out;
  if (!p.SerializeToString(&out)) fail_model("cannot serialize the model (larger than 2 GB?)");
  return out;
}
}  // namespace

std::string serialize_model(const Model& model) {
  onnx::ModelProto p;
  proto::from_model(model, &p);
  return serialized(p);
}

void save_model(const Model& model, const std::string& path, uint64_t external_above) {
  uint64_t weights = 0;
  for (const Initializer& i : model.graph.initializers) weights += i.value.nbytes();
  onnx::ModelProto p;
  proto::from_model(model, &p);
  if (external_above && weights >= external_above) {
    constexpr size_t kExternalMin = 1024, kAlign = 64;  // ORT's size_threshold; a cache line
    const std::string location = fs::path(path).filename().string() + ".data";
    const std::string data_path = (fs::path(path).parent_path() / location).string();
    std::ofstream data(data_path, std::ios::binary | std::ios::trunc);
    uint64_t offset = 0;
    for (onnx::TensorProto& t : *p.mutable_graph()->mutable_initializer()) {
      if (!t.has_raw_data() || t.raw_data().size() < kExternalMin) continue;
      const uint64_t start = (offset + kAlign - 1) / kAlign * kAlign;
      data.write(std::string(size_t(start - offset), '\0').data(), std::streamsize(start - offset));
      data.write(t.raw_data().data(), std::streamsize(t.raw_data().size()));
      offset = start + t.raw_data().size();
      auto entry = [&](const std::string& key, const std::string& value) {
        auto* kv = t.add_external_data();
        kv->set_key(key);
        kv->set_value(value);
      };
      entry("location", location);
      entry("offset", std::to_string(start));
      entry("length", std::to_string(t.raw_data().size()));
      t.set_data_location(onnx::TensorProto::EXTERNAL);
      t.clear_raw_data();
    }
    if (!data) fail_input(fmt::format("cannot write '{}'", data_path));
  }
  const std::string bytes = serialized(p);
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

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

namespace refeval {
namespace {

namespace fs = std::filesystem;
constexpr int64_t kMinIrVersion = 3, kMaxIrVersion = 13;
constexpr uintmax_t kViewFileBytes = 1 << 20;  // smaller models are copied whole

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

// Protobuf's wire format, read without copying: where each raw_data of the main graph's
// initializers lies in the file (ModelProto.graph = 7, GraphProto.initializer = 5,
// TensorProto.raw_data = 9), by position, so that large weights become views of the file. Empty
// when the file is not laid out plainly (the graph given in parts, groups): the weights are then
// copied from the parsed proto as before.
class WireScan {
 public:
  WireScan(const uint8_t* begin, const uint8_t* end) : p_(begin), end_(end) {}
  // The next field's number and wire type; false at the end or on a malformed tag.
  bool next(uint32_t& field, uint32_t& type) {
    uint64_t tag = 0;
    if (p_ >= end_ || !varint(tag)) return false;
    field = uint32_t(tag >> 3), type = uint32_t(tag & 7);
    return true;
  }
  // A length-delimited field's payload [begin, end); false if it runs past the end.
  bool payload(const uint8_t*& begin, const uint8_t*& end) {
    uint64_t n = 0;
    if (!varint(n) || n > uint64_t(end_ - p_)) return false;
    begin = p_, end = p_ + n, p_ += n;
    return true;
  }
  bool skip(uint32_t type) {
    uint64_t v = 0;
    const uint8_t *b = nullptr, *e = nullptr;
    switch (type) {
      case 0: return varint(v);
      case 1: return advance(8);
      case 2: return payload(b, e);
      case 5: return advance(4);
      default: return false;  // groups: not in ONNX files
    }
  }

 private:
  bool varint(uint64_t& v) {
    v = 0;
    for (int shift = 0; shift < 64 && p_ < end_; shift += 7) {
      const uint8_t byte = *p_++;
      v |= uint64_t(byte & 0x7f) << shift;
      if (!(byte & 0x80)) return true;
    }
    return false;
  }
  bool advance(size_t n) {
    if (n > size_t(end_ - p_)) return false;
    p_ += n;
    return true;
  }
  const uint8_t* p_;
  const uint8_t* end_;
};

std::vector<std::optional<proto::FileRange>> initializer_raw_data(const std::shared_ptr<MappedFile>& file) {
  const uint8_t* base = file->data();
  WireScan model(base, base + file->size());
  const uint8_t *graph_begin = nullptr, *graph_end = nullptr;
  int graphs = 0;
  for (uint32_t field = 0, type = 0; model.next(field, type);) {
    if (field == 7 && type == 2) {
      if (!model.payload(graph_begin, graph_end)) return {};
      ++graphs;
    } else if (!model.skip(type)) {
      return {};
    }
  }
  if (graphs != 1) return {};
  std::vector<std::optional<proto::FileRange>> ranges;
  WireScan graph(graph_begin, graph_end);
  for (uint32_t field = 0, type = 0; graph.next(field, type);) {
    if (field != 5 || type != 2) {
      if (!graph.skip(type)) return {};
      continue;
    }
    const uint8_t *tensor_begin = nullptr, *tensor_end = nullptr;
    if (!graph.payload(tensor_begin, tensor_end)) return {};
    std::optional<proto::FileRange> raw;
    WireScan tensor(tensor_begin, tensor_end);
    for (uint32_t f = 0, t = 0; tensor.next(f, t);) {
      const uint8_t *b = nullptr, *e = nullptr;
      if (f == 9 && t == 2) {
        if (!tensor.payload(b, e)) return {};
        raw = proto::FileRange{file, int64_t(b - base), int64_t(e - b)};  // the last one counts, as in protobuf
      } else if (!tensor.skip(t)) {
        return {};
      }
    }
    ranges.push_back(raw);
  }
  return ranges;
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
  // Weights in a large file become views of it (refeval/file_backed.h) rather than copies.
  std::vector<std::optional<proto::FileRange>> raw_data;
  if (fs::file_size(path, ec) >= kViewFileBytes && !ec) raw_data = initializer_raw_data(MappedFile::open(path));
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

// TensorProto <-> Tensor, following numpy_helper.to_array: raw_data is little-endian; without it
// each type has its typed field; sub-byte types are packed low bits first; external data is read
// from a file next to the model.
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string_view>
#include <map>
#include <memory>
#include <mutex>

#include <fmt/format.h>

#include "load/proto_convert.h"
#include "refeval/file_backed.h"

namespace refeval::proto {
namespace {

namespace fs = std::filesystem;

int sub_byte_bits(DType t) {
  switch (t) {
    case DType::Int4: case DType::UInt4: case DType::Float4E2M1: return 4;
    case DType::Int2: case DType::UInt2: return 2;
    default: return 0;
  }
}

// Bytes of the wire form of `n` elements.
size_t wire_bytes(DType t, int64_t n) {
  const int bits = sub_byte_bits(t);
  if (bits) return size_t((n * bits + 7) / 8);
  return size_t(n) * dtype_size(t);
}

void unpack(const uint8_t* packed, int64_t n, DType t, uint8_t* out) {
  const int bits = sub_byte_bits(t);
  const int per_byte = 8 / bits;
  const uint8_t mask = uint8_t((1 << bits) - 1);
  const bool sign = t == DType::Int4 || t == DType::Int2;
  for (int64_t i = 0; i < n; ++i) {
    uint8_t v = (packed[i / per_byte] >> ((i % per_byte) * bits)) & mask;
    if (sign && (v >> (bits - 1))) v = uint8_t(v | ~mask);  // sign-extend into the int8 byte
    out[i] = v;
  }
}

std::string pack(const uint8_t* values, int64_t n, DType t) {
  const int bits = sub_byte_bits(t);
  const int per_byte = 8 / bits;
  const uint8_t mask = uint8_t((1 << bits) - 1);
  std::string packed(wire_bytes(t, n), '\0');
  for (int64_t i = 0; i < n; ++i)
    packed[i / per_byte] = char(uint8_t(packed[i / per_byte]) | ((values[i] & mask) << ((i % per_byte) * bits)));
  return packed;
}

// The folder-confined file an external tensor names.
fs::path external_path(const std::string& location, const std::string& base_dir, const std::string& what) {
  const fs::path loc(location);
  if (location.empty() || loc.is_absolute())
    fail_model(fmt::format("tensor '{}': external data location '{}' must be a relative path", what, location));
  const fs::path base = fs::weakly_canonical(fs::path(base_dir.empty() ? "." : base_dir));
  const fs::path full = fs::weakly_canonical(base / loc);
  auto [b, f] = std::mismatch(base.begin(), base.end(), full.begin(), full.end());
  if (b != base.end())
    fail_model(fmt::format("tensor '{}': external data location '{}' leaves the model's folder", what, location));
  return full;
}

// Where an external tensor's bytes are: checked against the file's size and the shape's need.
struct ExternalBytes {
  fs::path path;
  int64_t offset = 0, length = 0;
};

ExternalBytes locate_external(const onnx::TensorProto& p, const std::string& base_dir, const std::string& what, size_t expected) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : p.external_data()) {
    auto to_int = [&](const std::string& s) {
      try { size_t used; long long v = std::stoll(s, &used); if (used != s.size() || v < 0) throw 0; return int64_t(v); }
      catch (...) { fail_model(fmt::format("tensor '{}': external data {} '{}' is not a non-negative integer", what, kv.key(), s)); }
    };
    if (kv.key() == "location") location = kv.value();
    else if (kv.key() == "offset") offset = to_int(kv.value());
    else if (kv.key() == "length") length = to_int(kv.value());
  }
  ExternalBytes e;
  e.path = external_path(location, base_dir, what);
  std::error_code ec;
  const auto size = fs::file_size(e.path, ec);
  if (ec) fail_model(fmt::format("tensor '{}': cannot open external data file '{}'", what, e.path.string()));
  const int64_t file_size = int64_t(size);
  const int64_t want = length >= 0 ? length : int64_t(expected);
  if (want != int64_t(expected))
    fail_model(fmt::format("tensor '{}': external data length {} does not match the {} bytes its shape needs", what, want, expected));
  if (offset > file_size || want > file_size - offset)
    fail_model(fmt::format("tensor '{}': external data [{}, {}) is beyond the end of '{}' ({} bytes)", what, offset, offset + want, e.path.string(), file_size));
  e.offset = offset, e.length = want;
  return e;
}

std::string read_external(const ExternalBytes& e, const std::string& what) {
  std::ifstream in(e.path, std::ios::binary);
  if (!in) fail_model(fmt::format("tensor '{}': cannot open external data file '{}'", what, e.path.string()));
  std::string bytes(size_t(e.length), '\0');
  in.seekg(e.offset);
  in.read(bytes.data(), e.length);
  if (!in) fail_model(fmt::format("tensor '{}': cannot read external data from '{}'", what, e.path.string()));
  return bytes;
}

// The mapping of each external data file, shared by the tensors that view it (one per file while
// any of them lives).
std::shared_ptr<MappedFile> mapped(const fs::path& path) {
  static std::mutex mutex;
  static std::map<std::string, std::weak_ptr<MappedFile>> files;
  std::lock_guard lock(mutex);
  std::weak_ptr<MappedFile>& slot = files[path.string()];
  std::shared_ptr<MappedFile> file = slot.lock();
  if (!file) slot = file = MappedFile::open(path.string());
  return file;
}

// Whether a tensor of this type and size is better read as a view of its file than copied: its
// bytes are its elements as they lie (not bits packed, not bools to normalise), aligned for its
// type, and large enough that a page of the file is mostly its own.
bool viewable(DType dtype, int64_t offset, size_t bytes) {
  constexpr size_t kMinViewBytes = 64 << 10;
  return dtype != DType::String && dtype != DType::Bool && !sub_byte_bits(dtype) && bytes >= kMinViewBytes &&
         offset % int64_t(dtype_size(dtype)) == 0;
}

// An aligned copy of plain elements that lie unaligned in the file (file_copy_buffer), made a few
// MB at a time, each part's pages given back once copied: a table of 98 MB is not resident twice.
Tensor copy_of(const FileRange& r, DType dtype, Shape shape) {
  const std::shared_ptr<void> buffer = file_copy_buffer(size_t(r.length), r.file, r.offset);
  const char* from = reinterpret_cast<const char*>(r.file->data()) + r.offset;
  constexpr size_t kPart = size_t(4) << 20;
  for (size_t at = 0; at < size_t(r.length); at += kPart) {
    const size_t n = std::min(kPart, size_t(r.length) - at);
    std::memcpy(static_cast<char*>(buffer.get()) + at, from + at, n);
    release_file_pages(from + at, n);
  }
  release_file_pages(from, size_t(r.length));
  return Tensor::view(dtype, std::move(shape), buffer, buffer.get());
}

Tensor view_of(const std::shared_ptr<MappedFile>& file, int64_t offset, DType dtype, Shape shape) {
  unsigned char* at = const_cast<unsigned char*>(file->data()) + offset;
  return Tensor::view(dtype, std::move(shape), std::shared_ptr<void>(file, at), at);
}

template <class Field>
void check_count(const Field& f, int64_t want, const std::string& what, const char* field_name) {
  if (int64_t(f.size()) != want)
    fail_model(fmt::format("tensor '{}': {} holds {} values but its shape needs {}", what, field_name, f.size(), want));
}

// Elements stored one per int32 (narrow types as their bit patterns).
template <class T>
void from_int32_field(const onnx::TensorProto& p, Tensor& t, const std::string& what) {
  check_count(p.int32_data(), t.size(), what, "int32_data");
  auto* out = reinterpret_cast<T*>(t.raw_data());
  for (int64_t i = 0; i < t.size(); ++i) {
    const int32_t v = p.int32_data(int(i));
    std::memcpy(&out[i], &v, sizeof(T));  // the low bytes, on a little-endian host
  }
}

void from_typed_fields(onnx::TensorProto& p, Tensor& t, const std::string& what) {
  const int64_t n = t.size();
  switch (t.dtype()) {
    case DType::Float:
      check_count(p.float_data(), n, what, "float_data");
      std::copy(p.float_data().begin(), p.float_data().end(), t.data<float>());
      return;
    case DType::Complex64:
      check_count(p.float_data(), 2 * n, what, "float_data");
      if (n > 0) std::memcpy(t.raw_data(), p.float_data().data(), size_t(n) * 8);  // an empty field's data() is null
      return;
    case DType::Double:
      check_count(p.double_data(), n, what, "double_data");
      std::copy(p.double_data().begin(), p.double_data().end(), t.data<double>());
      return;
    case DType::Complex128:
      check_count(p.double_data(), 2 * n, what, "double_data");
      if (n > 0) std::memcpy(t.raw_data(), p.double_data().data(), size_t(n) * 16);
      return;
    case DType::Int64:
      check_count(p.int64_data(), n, what, "int64_data");
      std::copy(p.int64_data().begin(), p.int64_data().end(), t.data<int64_t>());
      return;
    case DType::UInt32: {
      check_count(p.uint64_data(), n, what, "uint64_data");
      auto* out = t.data<uint32_t>();
      for (int64_t i = 0; i < n; ++i) out[i] = uint32_t(p.uint64_data(int(i)));
      return;
    }
    case DType::UInt64:
      check_count(p.uint64_data(), n, what, "uint64_data");
      std::copy(p.uint64_data().begin(), p.uint64_data().end(), t.data<uint64_t>());
      return;
    case DType::String: {
      check_count(p.string_data(), n, what, "string_data");
      auto* out = t.data<std::string>();
      for (int64_t i = 0; i < n; ++i) out[i] = std::move(*p.mutable_string_data(int(i)));
      return;
    }
    case DType::Bool: {
      check_count(p.int32_data(), n, what, "int32_data");
      auto* out = t.data<bool>();
      for (int64_t i = 0; i < n; ++i) out[i] = p.int32_data(int(i)) != 0;
      return;
    }
    case DType::Int32: from_int32_field<int32_t>(p, t, what); return;
    case DType::Int16: case DType::UInt16: case DType::Float16: case DType::BFloat16:
      from_int32_field<uint16_t>(p, t, what); return;
    case DType::Int8: case DType::UInt8: case DType::Float8E4M3FN: case DType::Float8E4M3FNUZ:
    case DType::Float8E5M2: case DType::Float8E5M2FNUZ: case DType::Float8E8M0:
      from_int32_field<uint8_t>(p, t, what); return;
    case DType::Int4: case DType::UInt4: case DType::Float4E2M1: case DType::Int2: case DType::UInt2: {
      const size_t bytes = wire_bytes(t.dtype(), n);
      check_count(p.int32_data(), int64_t(bytes), what, "int32_data (packed bytes)");
      std::string packed(bytes, '\0');
      for (size_t i = 0; i < bytes; ++i) packed[i] = char(uint8_t(p.int32_data(int(i))));
      unpack(reinterpret_cast<const uint8_t*>(packed.data()), n, t.dtype(), static_cast<uint8_t*>(t.raw_data()));
      return;
    }
    case DType::Undefined: break;
  }
  fail_model(fmt::format("tensor '{}': unsupported element type", what));
}

}  // namespace

Tensor to_tensor(onnx::TensorProto& p, const std::string& base_dir, const std::string& what_in, const FileRange* in_file) {
  const std::string what = what_in.empty() ? p.name() : what_in;
  if (!p.has_data_type() || !is_valid_dtype(p.data_type()))
    fail_model(fmt::format("tensor '{}': unknown element type {}", what, p.data_type()));
  if (p.has_segment()) fail_model(fmt::format("tensor '{}': segmented tensors are not supported (is this file really a TensorProto?)", what));
  const DType dtype = DType(p.data_type());
  Shape shape(p.dims().begin(), p.dims().end());
  for (int64_t d : shape)
    if (d < 0) fail_model(fmt::format("tensor '{}': negative dimension {} in {}", what, d, shape_to_string(shape)));
  int64_t elements = 0;
  try {
    elements = shape_size(shape);
  } catch (const Error& e) {
    fail_model(fmt::format("tensor '{}': {}", what, e.what()));
  }
  const size_t expected = wire_bytes(dtype, elements);
  const bool external = p.data_location() == onnx::TensorProto::EXTERNAL;
  if (external && dtype != DType::String) {
    const ExternalBytes e = locate_external(p, base_dir, what, expected);
    if (viewable(dtype, e.offset, expected)) return view_of(mapped(e.path), e.offset, dtype, shape);
  }
  // The loader left raw_data in the file (wire_strip.h) when `in_file` is given.
  const FileRange* left = external ? nullptr : in_file;
  if (left && left->length == int64_t(expected)) {
    if (viewable(dtype, left->offset, expected)) return view_of(left->file, left->offset, dtype, shape);
    if (dtype != DType::String && dtype != DType::Bool && !sub_byte_bits(dtype) && expected > 0) return copy_of(*left, dtype, shape);
  }
  Tensor t;
  try {
    t = Tensor(dtype, shape);
  } catch (const Error& e) {
    fail_model(fmt::format("tensor '{}': {}", what, e.what()));
  }
  if (external || p.has_raw_data() || left) {
    if (dtype == DType::String) fail_model(fmt::format("tensor '{}': strings cannot be stored in raw_data", what));
    std::string bytes;
    std::string_view raw;
    if (external) {
      raw = bytes = read_external(locate_external(p, base_dir, what, expected), what);
    } else if (left) {
      raw = std::string_view(reinterpret_cast<const char*>(left->file->data()) + left->offset, size_t(left->length));
    } else {
      raw = bytes = std::move(*p.mutable_raw_data());
      std::string().swap(*p.mutable_raw_data());  // release the proto's copy now
    }
    if (raw.size() != expected)
      fail_model(fmt::format("tensor '{}': raw_data has {} bytes but shape {} of {} needs {}", what, raw.size(),
                             shape_to_string(shape), dtype_short_name(dtype), expected));
    if (sub_byte_bits(dtype)) unpack(reinterpret_cast<const uint8_t*>(raw.data()), t.size(), dtype, static_cast<uint8_t*>(t.raw_data()));
    else if (dtype == DType::Bool) {
      auto* out = t.data<bool>();
      for (size_t i = 0; i < raw.size(); ++i) out[i] = raw[i] != 0;
    } else if (!raw.empty()) std::memcpy(t.raw_data(), raw.data(), raw.size());
    if (left) release_file_pages(raw.data(), raw.size());
    return t;
  }
  from_typed_fields(p, t, what);
  return t;
}

Tensor sparse_to_dense(onnx::SparseTensorProto& p, const std::string& base_dir, const std::string& what) {
  Tensor values = to_tensor(*p.mutable_values(), base_dir, what + " (values)");
  Tensor indices = to_tensor(*p.mutable_indices(), base_dir, what + " (indices)");
  Shape shape(p.dims().begin(), p.dims().end());
  Tensor dense(values.dtype(), shape);
  if (indices.dtype() != DType::Int64) fail_model(fmt::format("sparse tensor '{}': indices must be int64", what));
  const int64_t nnz = values.size(), n = dense.size();
  const int64_t* idx = indices.data<int64_t>();
  const bool flat = indices.rank() == 1;
  if ((flat && indices.size() != nnz) || (!flat && (indices.rank() != 2 || indices.dim(0) != nnz || indices.dim(1) != int64_t(shape.size()))))
    fail_model(fmt::format("sparse tensor '{}': indices of shape {} do not fit {} values", what, shape_to_string(indices.shape()), nnz));
  const size_t elem = dtype_size(values.dtype());
  for (int64_t k = 0; k < nnz; ++k) {
    int64_t pos = 0;
    if (flat) pos = idx[k];
    else
      for (size_t d = 0; d < shape.size(); ++d) {
        const int64_t i = idx[k * int64_t(shape.size()) + int64_t(d)];
        if (i < 0 || i >= shape[d]) { pos = -1; break; }
        pos = pos * shape[d] + i;
      }
    if (pos < 0 || pos >= n) fail_model(fmt::format("sparse tensor '{}': index {} is out of range", what, k));
    if (values.dtype() == DType::String) dense.data<std::string>()[pos] = values.data<std::string>()[k];
    else std::memcpy(static_cast<char*>(dense.raw_data()) + pos * elem, static_cast<const char*>(values.raw_data()) + k * elem, elem);
  }
  return dense;
}

void from_tensor(const Tensor& t, onnx::TensorProto* p) {
  p->set_data_type(int32_t(t.dtype()));
  for (int64_t d : t.shape()) p->add_dims(d);
  if (t.dtype() == DType::String) {
    const auto* s = t.data<std::string>();
    for (int64_t i = 0; i < t.size(); ++i) p->add_string_data(s[i]);
  } else if (sub_byte_bits(t.dtype())) {
    p->set_raw_data(pack(static_cast<const uint8_t*>(t.raw_data()), t.size(), t.dtype()));
  } else {
    p->set_raw_data(std::string(static_cast<const char*>(t.raw_data()), t.nbytes()));
  }
}

}  // namespace refeval::proto

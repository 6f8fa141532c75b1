// numpy .npy files (format 1.0-3.0). The header is a Python dict literal with three keys; we read
// exactly that grammar. Strings are numpy '<U' (UTF-32) arrays; object arrays (pickles) are refused.
#include <algorithm>
#include <cstring>
#include <fstream>
#include <regex>

#include <fmt/format.h>

#include "refeval/model_io.h"

namespace refeval {
namespace {

struct NpyDescr {
  DType dtype = DType::Undefined;
  size_t item = 0;       // bytes per element in the file
  bool swap = false;     // big-endian file
  bool unicode = false;  // '<U': UTF-32 strings of `item / 4` code points
};

NpyDescr parse_descr(const std::string& d, const std::string& file) {
  if (d.size() < 3) fail_input(fmt::format("{}: unsupported .npy dtype '{}'", file, d));
  NpyDescr r;
  const char order = d[0], kind = d[1];
  size_t width = 0;
  try { width = std::stoul(d.substr(2)); } catch (...) { fail_input(fmt::format("{}: unsupported .npy dtype '{}'", file, d)); }
  r.swap = order == '>' && width > 1;
  r.item = width;
  auto pick = [&](DType t) { if (dtype_size(t) != width) fail_input(fmt::format("{}: unsupported .npy dtype '{}'", file, d)); r.dtype = t; };
  switch (kind) {
    case 'f': pick(width == 2 ? DType::Float16 : width == 4 ? DType::Float : DType::Double); break;
    case 'i': pick(width == 1 ? DType::Int8 : width == 2 ? DType::Int16 : width == 4 ? DType::Int32 : DType::Int64); break;
    case 'u': pick(width == 1 ? DType::UInt8 : width == 2 ? DType::UInt16 : width == 4 ? DType::UInt32 : DType::UInt64); break;
    case 'b': pick(DType::Bool); break;
    case 'c': pick(width == 8 ? DType::Complex64 : DType::Complex128); break;
    case 'U': r.dtype = DType::String; r.unicode = true; r.item = width * 4; break;
    default: fail_input(fmt::format("{}: unsupported .npy dtype '{}' (object arrays cannot be read; save strings as '<U')", file, d));
  }
  return r;
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) out += char(cp);
  else if (cp < 0x800) { out += char(0xc0 | (cp >> 6)); out += char(0x80 | (cp & 0x3f)); }
  else if (cp < 0x10000) { out += char(0xe0 | (cp >> 12)); out += char(0x80 | ((cp >> 6) & 0x3f)); out += char(0x80 | (cp & 0x3f)); }
  else { out += char(0xf0 | (cp >> 18)); out += char(0x80 | ((cp >> 12) & 0x3f)); out += char(0x80 | ((cp >> 6) & 0x3f)); out += char(0x80 | (cp & 0x3f)); }
}

std::vector<uint32_t> utf8_to_utf32(const std::string& s) {
  std::vector<uint32_t> out;
  for (size_t i = 0; i < s.size();) {
    const uint8_t c = uint8_t(s[i]);
    const int len = c < 0x80 ? 1 : c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;
    uint32_t cp = len == 1 ? c : len == 2 ? (c & 0x1f) : len == 3 ? (c & 0x0f) : (c & 0x07);
    for (int k = 1; k < len && i + size_t(k) < s.size(); ++k) cp = (cp << 6) | (uint8_t(s[i + size_t(k)]) & 0x3f);
    out.push_back(cp);
    i += size_t(len);
  }
  return out;
}

// Reorders a Fortran-ordered buffer (element size `item`) into C order.
std::string fortran_to_c(const std::string& data, const Shape& shape, size_t item) {
  const int64_t n = shape_size(shape);
  std::string out(data.size(), '\0');
  std::vector<int64_t> idx(shape.size(), 0);
  for (int64_t c = 0; c < n; ++c) {
    int64_t f = 0, stride = 1;
    for (size_t d = 0; d < shape.size(); ++d) { f += idx[d] * stride; stride *= shape[d]; }
    std::memcpy(&out[size_t(c) * item], &data[size_t(f) * item], item);
    for (int64_t d = int64_t(shape.size()) - 1; d >= 0; --d) {
      if (++idx[size_t(d)] < shape[size_t(d)]) break;
      idx[size_t(d)] = 0;
    }
  }
  return out;
}

}  // namespace

Tensor parse_npy(const std::string& bytes, const std::string& file) {
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0) fail_input(fmt::format("{}: not a .npy file", file));
  const int major = uint8_t(bytes[6]);
  size_t header_len, pos;
  if (major == 1) { header_len = uint8_t(bytes[8]) | (size_t(uint8_t(bytes[9])) << 8); pos = 10; }
  else if (major == 2 || major == 3) {
    if (bytes.size() < 12) fail_input(fmt::format("{}: truncated .npy header", file));
    header_len = 0;
    for (int k = 0; k < 4; ++k) header_len |= size_t(uint8_t(bytes[8 + size_t(k)])) << (8 * k);
    pos = 12;
  } else fail_input(fmt::format("{}: unsupported .npy format version {}", file, major));
  if (bytes.size() < pos + header_len) fail_input(fmt::format("{}: truncated .npy header", file));
  const std::string header = bytes.substr(pos, header_len);
  std::smatch m;
  static const std::regex descr_re(R"('descr'\s*:\s*'([^']*)')"), order_re(R"('fortran_order'\s*:\s*(True|False))"),
      shape_re(R"('shape'\s*:\s*\(([^)]*)\))");
  std::string descr, fortran, shape_text;
  if (std::regex_search(header, m, descr_re)) descr = m[1];
  if (std::regex_search(header, m, order_re)) fortran = m[1];
  if (std::regex_search(header, m, shape_re)) shape_text = m[1];
  if (descr.empty() || fortran.empty()) fail_input(fmt::format("{}: malformed .npy header", file));
  Shape shape;
  for (size_t i = 0; i < shape_text.size();) {
    while (i < shape_text.size() && (shape_text[i] == ' ' || shape_text[i] == ',')) ++i;
    if (i >= shape_text.size()) break;
    size_t used = 0;
    try { shape.push_back(std::stoll(shape_text.substr(i), &used)); } catch (...) { fail_input(fmt::format("{}: malformed .npy shape", file)); }
    if (shape.back() < 0) fail_input(fmt::format("{}: negative dimension in .npy shape", file));
    i += used;
    while (i < shape_text.size() && shape_text[i] == 'L') ++i;
  }
  const NpyDescr d = parse_descr(descr, file);
  int64_t n;
  try { n = shape_size(shape); } catch (const Error& e) { fail_input(fmt::format("{}: {}", file, e.what())); }
  const size_t data_pos = pos + header_len;
  if (d.item && uint64_t(n) > (bytes.size() - data_pos) / d.item)
    fail_input(fmt::format("{}: data is shorter than shape {} needs", file, shape_to_string(shape)));
  std::string data = bytes.substr(data_pos, size_t(n) * d.item);
  if (fortran == "True" && shape.size() > 1) data = fortran_to_c(data, shape, d.item);
  Tensor t(d.dtype, shape);
  if (d.unicode) {
    auto* out = t.data<std::string>();
    const size_t chars = d.item / 4;
    for (int64_t i = 0; i < n; ++i) {
      std::string s;
      for (size_t c = 0; c < chars; ++c) {
        uint32_t cp;
        std::memcpy(&cp, &data[size_t(i) * d.item + c * 4], 4);
        if (d.swap) cp = __builtin_bswap32(cp);
        if (cp == 0) break;
        append_utf8(s, cp);
      }
      out[i] = std::move(s);
    }
    return t;
  }
  if (d.swap) {
    const size_t w = (d.dtype == DType::Complex64 || d.dtype == DType::Complex128) ? d.item / 2 : d.item;
    for (size_t i = 0; i + w <= data.size(); i += w) std::reverse(data.begin() + long(i), data.begin() + long(i + w));
  }
  if (d.dtype == DType::Bool) {
    for (int64_t i = 0; i < n; ++i) t.data<bool>()[i] = data[size_t(i)] != 0;
  } else if (!data.empty()) {
    std::memcpy(t.raw_data(), data.data(), data.size());
  }
  return t;
}

Tensor read_npy(const std::string& path) { return parse_npy(read_file_bytes(path), path); }

void write_npy(const std::string& path, const Tensor& t) {
  std::string descr;
  size_t max_chars = 1;
  switch (t.dtype()) {
    case DType::Float: descr = "<f4"; break;
    case DType::Double: descr = "<f8"; break;
    case DType::Float16: descr = "<f2"; break;
    case DType::Int8: descr = "|i1"; break;
    case DType::Int16: descr = "<i2"; break;
    case DType::Int32: descr = "<i4"; break;
    case DType::Int64: descr = "<i8"; break;
    case DType::UInt8: descr = "|u1"; break;
    case DType::UInt16: descr = "<u2"; break;
    case DType::UInt32: descr = "<u4"; break;
    case DType::UInt64: descr = "<u8"; break;
    case DType::Bool: descr = "|b1"; break;
    case DType::Complex64: descr = "<c8"; break;
    case DType::Complex128: descr = "<c16"; break;
    case DType::String:
      for (int64_t i = 0; i < t.size(); ++i) max_chars = std::max(max_chars, utf8_to_utf32(t.data<std::string>()[i]).size());
      descr = fmt::format("<U{}", max_chars);
      break;
    default:
      fail_input(fmt::format("{}: {} has no .npy representation; write a .pb file instead", path, dtype_short_name(t.dtype())));
  }
  std::string shape = t.rank() == 1 ? fmt::format("({},)", t.dim(0)) : fmt::format("({})", fmt::join(t.shape(), ", "));
  std::string header = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}", descr, shape);
  const size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string out = "\x93NUMPY";
  out += char(1);
  out += char(0);
  out += char(header.size() & 0xff);
  out += char(header.size() >> 8);
  out += header;
  if (t.dtype() == DType::String) {
    for (int64_t i = 0; i < t.size(); ++i) {
      auto cps = utf8_to_utf32(t.data<std::string>()[i]);
      cps.resize(max_chars, 0);
      out.append(reinterpret_cast<const char*>(cps.data()), cps.size() * 4);
    }
  } else if (t.dtype() == DType::Bool) {
    for (int64_t i = 0; i < t.size(); ++i) out += char(t.data<bool>()[i] ? 1 : 0);
  } else {
    out.append(static_cast<const char*>(t.raw_data()), t.nbytes());
  }
  std::ofstream f(path, std::ios::binary);
  f.write(out.data(), std::streamsize(out.size()));
  if (!f) fail_input(fmt::format("cannot write '{}'", path));
}

}  // namespace refeval

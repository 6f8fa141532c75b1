// strip_initializer_bytes (wire_strip.h): protobuf's wire format walked without copying.
#include "load/wire_strip.h"

namespace refeval::wire {
namespace {

constexpr uint32_t kModelGraph = 7, kGraphInitializer = 5, kTensorRawData = 9;
constexpr uint32_t kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5;

// One message's fields in order: each field's number, wire type and extent (tag included), and a
// length-delimited field's payload.
class Fields {
 public:
  Fields(const uint8_t* begin, const uint8_t* end) : p_(begin), end_(end) {}
  struct Field {
    uint32_t number = 0, type = 0;
    const uint8_t *begin = nullptr, *end = nullptr;                  // the whole field, tag to end
    const uint8_t *payload = nullptr, *payload_end = nullptr;        // length-delimited only
  };
  // The next field; false at the end, or (with ok() false) on malformed bytes.
  bool next(Field& f) {
    if (p_ >= end_) return false;
    f = Field{};
    f.begin = p_;
    uint64_t tag = 0;
    if (!varint(tag) || (tag >> 3) == 0) return fail();
    f.number = uint32_t(tag >> 3), f.type = uint32_t(tag & 7);
    uint64_t n = 0;
    switch (f.type) {
      case kVarint:
        if (!varint(n)) return fail();
        break;
      case kFixed64:
        if (!advance(8)) return fail();
        break;
      case kLengthDelimited:
        if (!varint(n) || n > uint64_t(end_ - p_)) return fail();
        f.payload = p_, f.payload_end = p_ + n, p_ += n;
        break;
      case kFixed32:
        if (!advance(4)) return fail();
        break;
      default:  // groups: not in ONNX files
        return fail();
    }
    f.end = p_;
    return true;
  }
  bool ok() const { return ok_; }

 private:
  bool fail() { return ok_ = false; }
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
  bool ok_ = true;
};

void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) out.push_back(char(uint8_t(v) | 0x80)), v >>= 7;
  out.push_back(char(v));
}
void put_field(std::string& out, uint32_t number, const std::string& payload) {
  put_varint(out, uint64_t(number) << 3 | kLengthDelimited);
  put_varint(out, payload.size());
  out += payload;
}
void put_bytes(std::string& out, const uint8_t* begin, const uint8_t* end) { out.append(reinterpret_cast<const char*>(begin), size_t(end - begin)); }

// A TensorProto without its raw_data when the last one is large; `cut` says where that one lies.
bool strip_tensor(const uint8_t* base, const uint8_t* begin, const uint8_t* end, size_t min_bytes, std::string& out,
                  std::optional<ByteRange>& cut) {
  Fields fields(begin, end);
  Fields::Field f, last_raw;
  while (fields.next(f))
    if (f.number == kTensorRawData && f.type == kLengthDelimited) last_raw = f;
  if (!fields.ok()) return false;
  if (!last_raw.payload || size_t(last_raw.payload_end - last_raw.payload) < min_bytes) {
    put_bytes(out, begin, end);
    return true;
  }
  cut = ByteRange{last_raw.payload - base, last_raw.payload_end - last_raw.payload};
  Fields again(begin, end);
  while (again.next(f))
    if (f.number != kTensorRawData || f.type != kLengthDelimited) put_bytes(out, f.begin, f.end);
  return again.ok();
}

bool strip_graph(const uint8_t* base, const uint8_t* begin, const uint8_t* end, size_t min_bytes, Stripped& s, std::string& out) {
  Fields fields(begin, end);
  Fields::Field f;
  while (fields.next(f)) {
    if (f.number != kGraphInitializer || f.type != kLengthDelimited) {
      put_bytes(out, f.begin, f.end);
      continue;
    }
    std::string tensor;
    std::optional<ByteRange> cut;
    if (!strip_tensor(base, f.payload, f.payload_end, min_bytes, tensor, cut)) return false;
    put_field(out, kGraphInitializer, tensor);
    s.raw_data.push_back(cut);
  }
  return fields.ok();
}

}  // namespace

std::optional<Stripped> strip_initializer_bytes(const uint8_t* data, size_t size, size_t min_bytes) {
  Stripped s;
  Fields model(data, data + size);
  Fields::Field f;
  int graphs = 0;
  while (model.next(f)) {
    if (f.number != kModelGraph || f.type != kLengthDelimited) {
      put_bytes(s.model, f.begin, f.end);
      continue;
    }
    if (++graphs > 1) return std::nullopt;  // the graph given in parts: protobuf merges them
    std::string graph;
    if (!strip_graph(data, f.payload, f.payload_end, min_bytes, s, graph)) return std::nullopt;
    put_field(s.model, kModelGraph, graph);
  }
  if (!model.ok() || graphs != 1) return std::nullopt;
  return s;
}

}  // namespace refeval::wire

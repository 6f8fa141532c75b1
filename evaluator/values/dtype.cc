// Names and sizes of the element types.
#include "refeval/dtype.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace refeval {
namespace {

struct DTypeInfo {
  std::string_view onnx, numpy, shortname;
  size_t size;
};

// Indexed by the DType number; the static_assert keeps the table and the enum in step.
constexpr std::array<DTypeInfo, kMaxDType + 1> kInfo = {{
    {"UNDEFINED", "undefined", "undefined", 0},
    {"FLOAT", "float32", "float", 4},
    {"UINT8", "uint8", "uint8", 1},
    {"INT8", "int8", "int8", 1},
    {"UINT16", "uint16", "uint16", 2},
    {"INT16", "int16", "int16", 2},
    {"INT32", "int32", "int32", 4},
    {"INT64", "int64", "int64", 8},
    {"STRING", "object", "string", sizeof(std::string)},
    {"BOOL", "bool", "bool", 1},
    {"FLOAT16", "float16", "float16", 2},
    {"DOUBLE", "float64", "double", 8},
    {"UINT32", "uint32", "uint32", 4},
    {"UINT64", "uint64", "uint64", 8},
    {"COMPLEX64", "complex64", "complex64", 8},
    {"COMPLEX128", "complex128", "complex128", 16},
    {"BFLOAT16", "bfloat16", "bfloat16", 2},
    {"FLOAT8E4M3FN", "float8_e4m3fn", "float8e4m3fn", 1},
    {"FLOAT8E4M3FNUZ", "float8_e4m3fnuz", "float8e4m3fnuz", 1},
    {"FLOAT8E5M2", "float8_e5m2", "float8e5m2", 1},
    {"FLOAT8E5M2FNUZ", "float8_e5m2fnuz", "float8e5m2fnuz", 1},
    {"UINT4", "uint4", "uint4", 1},
    {"INT4", "int4", "int4", 1},
    {"FLOAT4E2M1", "float4_e2m1fn", "float4e2m1", 1},
    {"FLOAT8E8M0", "float8_e8m0fnu", "float8e8m0", 1},
    {"UINT2", "uint2", "uint2", 1},
    {"INT2", "int2", "int2", 1},
}};
static_assert(kInfo.size() == kMaxDType + 1);

const DTypeInfo& info(DType t) {
  const int i = int(t);
  return kInfo[(i >= 0 && i <= kMaxDType) ? i : 0];
}

bool iequal(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(),
                    [](char x, char y) { return std::tolower(x) == std::tolower(y); });
}

}  // namespace

size_t dtype_size(DType t) { return info(t).size; }
bool is_valid_dtype(int32_t v) { return v > 0 && v <= kMaxDType; }

bool is_float_dtype(DType t) {
  switch (t) {
    case DType::Float: case DType::Double: case DType::Float16: case DType::BFloat16:
    case DType::Float8E4M3FN: case DType::Float8E4M3FNUZ: case DType::Float8E5M2:
    case DType::Float8E5M2FNUZ: case DType::Float4E2M1: case DType::Float8E8M0:
      return true;
    default:
      return false;
  }
}

bool is_signed_integer_dtype(DType t) {
  switch (t) {
    case DType::Int8: case DType::Int16: case DType::Int32: case DType::Int64:
    case DType::Int4: case DType::Int2:
      return true;
    default:
      return false;
  }
}

bool is_integer_dtype(DType t) {
  switch (t) {
    case DType::UInt8: case DType::UInt16: case DType::UInt32: case DType::UInt64:
    case DType::UInt4: case DType::UInt2:
      return true;
    default:
      return is_signed_integer_dtype(t);
  }
}

std::string_view dtype_onnx_name(DType t) { return info(t).onnx; }
std::string_view dtype_numpy_name(DType t) { return info(t).numpy; }
std::string_view dtype_short_name(DType t) { return info(t).shortname; }

DType dtype_from_name(std::string_view name) {
  for (int i = 1; i <= kMaxDType; ++i) {
    const auto& d = kInfo[i];
    if (iequal(name, d.onnx) || iequal(name, d.numpy) || iequal(name, d.shortname)) return DType(i);
  }
  if (iequal(name, "double") || iequal(name, "float64")) return DType::Double;
  return DType::Undefined;
}

}  // namespace refeval

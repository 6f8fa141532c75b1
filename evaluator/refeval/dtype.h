// Element types: the ONNX TensorProto data types, their C++ storage types and their names.
#pragma once

#include <complex>
#include <cstdint>
#include <string>
#include <string_view>

#include "refeval/narrow_types.h"

namespace refeval {

// Values are the ONNX TensorProto.DataType numbers, so conversion to and from protobuf is a cast.
enum class DType : int32_t {
  Undefined = 0,
  Float = 1,
  UInt8 = 2,
  Int8 = 3,
  UInt16 = 4,
  Int16 = 5,
  Int32 = 6,
  Int64 = 7,
  String = 8,
  Bool = 9,
  Float16 = 10,
  Double = 11,
  UInt32 = 12,
  UInt64 = 13,
  Complex64 = 14,
  Complex128 = 15,
  BFloat16 = 16,
  Float8E4M3FN = 17,
  Float8E4M3FNUZ = 18,
  Float8E5M2 = 19,
  Float8E5M2FNUZ = 20,
  UInt4 = 21,
  Int4 = 22,
  Float4E2M1 = 23,
  Float8E8M0 = 24,
  UInt2 = 25,
  Int2 = 26,
};
inline constexpr int kMaxDType = 26;

// C++ storage type of each element type. Sub-byte types are stored one element per byte in
// memory (as ml_dtypes does); packing happens only when reading or writing protobuf.
template <class T> struct DTypeOf;
#define REFEVAL_DTYPE_OF(T, D) \
  template <> struct DTypeOf<T> { static constexpr DType value = DType::D; }
REFEVAL_DTYPE_OF(float, Float);
REFEVAL_DTYPE_OF(uint8_t, UInt8);
REFEVAL_DTYPE_OF(int8_t, Int8);
REFEVAL_DTYPE_OF(uint16_t, UInt16);
REFEVAL_DTYPE_OF(int16_t, Int16);
REFEVAL_DTYPE_OF(int32_t, Int32);
REFEVAL_DTYPE_OF(int64_t, Int64);
REFEVAL_DTYPE_OF(std::string, String);
REFEVAL_DTYPE_OF(bool, Bool);
REFEVAL_DTYPE_OF(float16, Float16);
REFEVAL_DTYPE_OF(double, Double);
REFEVAL_DTYPE_OF(uint32_t, UInt32);
REFEVAL_DTYPE_OF(uint64_t, UInt64);
REFEVAL_DTYPE_OF(std::complex<float>, Complex64);
REFEVAL_DTYPE_OF(std::complex<double>, Complex128);
REFEVAL_DTYPE_OF(bfloat16, BFloat16);
REFEVAL_DTYPE_OF(float8e4m3fn, Float8E4M3FN);
REFEVAL_DTYPE_OF(float8e4m3fnuz, Float8E4M3FNUZ);
REFEVAL_DTYPE_OF(float8e5m2, Float8E5M2);
REFEVAL_DTYPE_OF(float8e5m2fnuz, Float8E5M2FNUZ);
REFEVAL_DTYPE_OF(uint4, UInt4);
REFEVAL_DTYPE_OF(int4, Int4);
REFEVAL_DTYPE_OF(float4e2m1, Float4E2M1);
REFEVAL_DTYPE_OF(float8e8m0, Float8E8M0);
REFEVAL_DTYPE_OF(uint2, UInt2);
REFEVAL_DTYPE_OF(int2, Int2);
#undef REFEVAL_DTYPE_OF

template <class T> inline constexpr DType dtype_of = DTypeOf<T>::value;

// Bytes one element occupies in memory (not on the wire). 0 for Undefined.
size_t dtype_size(DType t);
bool is_valid_dtype(int32_t value);
bool is_float_dtype(DType t);    // every floating type, narrow ones included (not complex)
bool is_integer_dtype(DType t);  // signed and unsigned integers of every width (not bool)
bool is_signed_integer_dtype(DType t);

// ONNX name, as in TensorProto.DataType: "FLOAT", "INT64", "FLOAT8E4M3FN".
std::string_view dtype_onnx_name(DType t);
// numpy / ml_dtypes name, as the Python evaluator prints it: "float32", "int64", "bfloat16".
std::string_view dtype_numpy_name(DType t);
// Lower-case short name for tables: "float", "int64", "float8e4m3fn".
std::string_view dtype_short_name(DType t);
// Parses any of the names above (case-insensitive); Undefined if unknown.
DType dtype_from_name(std::string_view name);

}  // namespace refeval

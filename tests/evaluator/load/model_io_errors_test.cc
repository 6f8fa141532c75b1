// Bytes that are not a model, and values that cannot be written, are refused with the name of
// what was being read or written.
#include <filesystem>

#include "refeval/model_io.h"
#include "test_util.h"

using namespace refeval;

TEST_CASE("model bytes that do not parse as a ModelProto name where they came from") {
  CHECK_THROWS_WITH_AS(parse_model(std::string("\xff\xff\xff\xff garbage", 13), ".", "upload"),
                       "upload: not a valid ONNX model (the protobuf does not parse; truncated or corrupt?)", Error);
}

TEST_CASE("an absent value has no file form, and a tensor type without a .npy form asks for .pb") {
  const std::string dir = std::filesystem::temp_directory_path().string();
  CHECK_THROWS_WITH_AS(write_value_pb(dir + "/absent.pb", "skipped", Value()), "value 'skipped' is absent and cannot be written", Error);
  const Tensor f8(DType::Float8E4M3FN, {2});
  CHECK_THROWS_WITH_AS(write_npy(dir + "/f8.npy", f8),
                       doctest::Contains("f8.npy: float8e4m3fn has no .npy representation; write a .pb file instead"), Error);
}

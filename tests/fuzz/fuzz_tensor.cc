// libFuzzer target: arbitrary bytes as a TensorProto / SequenceProto / OptionalProto file.
// Dims against data size, huge or negative dims, external-data paths: all must be errors.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include "refeval/model_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  refeval::set_memory_cap(64 << 20);
  static const std::string dir = [] {
    auto d = std::filesystem::temp_directory_path() / ("refeval_fuzz_tensor_" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    return d.string();
  }();
  const std::string path = dir + "/value.pb";
  {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(data), std::streamsize(size));
  }
  using Kind = refeval::ValueType::Kind;
  for (Kind k : {Kind::Tensor, Kind::Sequence, Kind::Optional, Kind::Map}) {
    refeval::ValueType t;
    t.kind = k;
    try {
      refeval::read_value_pb(path, &t);
    } catch (const refeval::Error&) {
    }
  }
  return 0;
}

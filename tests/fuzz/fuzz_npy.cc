// libFuzzer target: arbitrary bytes as a .npy file.
#include <cstdint>
#include <string>

#include "refeval/model_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  refeval::set_memory_cap(64 << 20);
  try {
    refeval::parse_npy(std::string(reinterpret_cast<const char*>(data), size), "fuzz.npy");
  } catch (const refeval::Error&) {
  }
  return 0;
}

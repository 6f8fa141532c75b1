// Scratch memory a kernel asks for is checked before it is allocated: a count whose bytes do not
// fit in 64 bits, or exceed the memory cap, is a resource error naming what it was for.
#include "refeval/limits.h"
#include "refeval/tensor.h"
#include "test_util.h"

using namespace refeval;

TEST_CASE("scratch beyond 64-bit sizes or the memory cap is refused, naming its use") {
  CHECK_THROWS_WITH_AS(check_scratch(-1, 4, "the window"), "the window: -1 elements do not fit in memory", Error);
  CHECK_THROWS_WITH_AS(check_scratch(int64_t(1) << 62, 8, "the table"), "the table: 4611686018427387904 elements do not fit in memory", Error);
  const uint64_t cap = memory_cap();
  set_memory_cap(100);
  CHECK_THROWS_WITH_AS(check_scratch(50, 4, "the window"), "the window: 50 elements (200 bytes) exceed the memory cap of 100 bytes", Error);
  set_memory_cap(cap);
}

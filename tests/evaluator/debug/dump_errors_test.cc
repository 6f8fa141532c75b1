// A dump folder that does not exist is refused with its name before its index is looked for.
#include "refeval/dump.h"
#include "test_util.h"

using namespace refeval;

TEST_CASE("reading a dump from a folder that does not exist names the folder") {
  CHECK_THROWS_WITH_AS(read_dump_index("/nonexistent/dump"), "/nonexistent/dump: not a dump folder (no such folder)", Error);
}

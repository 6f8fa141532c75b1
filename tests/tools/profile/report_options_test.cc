// The report's option values and outputs, as the library takes them (the CLI checks the names
// first, but other callers of the library do not): unknown names are usage errors that list
// the known ones; tables grouped differently cannot be compared; an unwritable path is named.
#include <doctest/doctest.h>

#include "aggregate.h"
#include "profile_file.h"
#include "render.h"
#include "refeval/error.h"

using namespace refeval::profile;
using refeval::Error;

TEST_CASE("an unknown grouping or format lists the known ones") {
  CHECK_THROWS_WITH_AS(parse_group_by("colour"), "--by: 'colour' is not op, node, provider, phase or scope", Error);
  CHECK_THROWS_WITH_AS(parse_format("pdf"), "--format: 'pdf' is not text, csv, json, md or html", Error);
}

TEST_CASE("a table by op type is not compared with a table by node") {
  Table by_op, by_node;
  by_node.by = GroupBy::Node;
  CHECK_THROWS_WITH_AS(compare(by_op, by_node), "compare: both tables must be grouped the same way", Error);
}

TEST_CASE("a profile that cannot be written names its path") {
  CHECK_THROWS_WITH_AS(write_profile("/proc/self/profile.json", {}), "/proc/self/profile.json: cannot write the profile", Error);
}

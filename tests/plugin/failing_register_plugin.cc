// A test plugin whose registration fails (as one that cannot find a resource it needs would): it
// returns a negative status, which refeval reports as a usage error naming the library.
#include "refeval/plugin.h"

extern "C" int refeval_register_ops(refeval::Registry*, int) { return -3; }

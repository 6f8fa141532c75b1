// A test plugin built for a plugin API version refeval does not provide (as a library built
// against a newer refeval would be): it refuses to register and says which version it wants.
#include "refeval/plugin.h"

namespace {
constexpr int kBuiltForApiVersion = refeval::kPluginApiVersion + 1;
}

extern "C" int refeval_register_ops(refeval::Registry*, int api_version) {
  return api_version == kBuiltForApiVersion ? 0 : kBuiltForApiVersion;
}

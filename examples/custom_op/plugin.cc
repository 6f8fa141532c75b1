// The plugin's entry point: `refeval --custom-ops librefeval_example_ops.so ...` calls it once.
#include "my_fused_gelu.h"
#include "refeval/plugin.h"

extern "C" int refeval_register_ops(refeval::Registry* registry, int api_version) {
  // Built against another API version: refuse, and say which version this library was built for.
  if (api_version != refeval::kPluginApiVersion) return refeval::kPluginApiVersion;
  example::register_my_fused_gelu(*registry);
  return 0;
}

// Custom-operator plugins: a shared library that exports
//
//   extern "C" int refeval_register_ops(refeval::Registry* registry, int api_version);
//
// refeval passes kPluginApiVersion. The library returns 0 after registering its operators. When
// api_version is not the version it was built for, it registers nothing and returns the version
// it was built for (its kPluginApiVersion), so refeval can say which one; any other non-zero
// value is a failure of the library's own. docs/custom-ops.md walks through writing one.
#pragma once

#include <string>

#include "refeval/registry.h"

namespace refeval {

inline constexpr int kPluginApiVersion = 2;  // 2: OpFactory::determinism

// Loads the library and lets it register its operators into `registry`. ErrorKind::Usage on
// failure, naming the library and the reason.
void load_plugin(Registry& registry, const std::string& path);

}  // namespace refeval

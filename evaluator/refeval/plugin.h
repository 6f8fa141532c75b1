// Custom-operator plugins: a shared library that exports
//
//   extern "C" int refeval_register_ops(refeval::Registry* registry, int api_version);
//
// returning 0 on success. The library should refuse (return non-zero) an api_version it was not
// built for; refeval passes kPluginApiVersion.
#pragma once

#include <string>

#include "refeval/registry.h"

namespace refeval {

inline constexpr int kPluginApiVersion = 1;

// Loads the library and lets it register its operators into `registry`. ErrorKind::Usage on
// failure, naming the library and the reason.
void load_plugin(Registry& registry, const std::string& path);

}  // namespace refeval

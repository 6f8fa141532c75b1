#include "refeval/plugin.h"

#include <dlfcn.h>

#include <fmt/format.h>

namespace refeval {

void load_plugin(Registry& registry, const std::string& path) {
  // Plugins stay loaded for the life of the process: their factories live in the registry.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) fail_usage(fmt::format("cannot load custom-op library '{}': {}", path, dlerror()));
  using RegisterFn = int (*)(Registry*, int);
  auto fn = reinterpret_cast<RegisterFn>(dlsym(handle, "refeval_register_ops"));
  if (!fn) fail_usage(fmt::format("custom-op library '{}' does not export refeval_register_ops", path));
  const int status = fn(&registry, kPluginApiVersion);
  if (status == 0) return;
  if (status > 0 && status != kPluginApiVersion)
    fail_usage(fmt::format("custom-op library '{}' was built for plugin API version {}, but this refeval provides version {}; "
                           "rebuild it against this refeval's headers", path, status, kPluginApiVersion));
  fail_usage(fmt::format("custom-op library '{}' failed to register its operators (status {})", path, status));
}

}  // namespace refeval

#include "buffer_cache.h"

#include <cstdlib>
#include <mutex>
#include <unordered_map>

namespace refeval::buffer_cache {
namespace {

constexpr size_t kMaxHeld = size_t(128) << 20;

struct Cache {
  std::mutex mutex;
  std::unordered_multimap<size_t, void*> free;  // bytes -> buffer
  size_t held = 0;
};
// Never destroyed: tensors in static storage may be freed after it would be.
Cache& cache() {
  static Cache* c = new Cache;
  return *c;
}

}  // namespace

void* take(size_t bytes) {
  Cache& c = cache();
  std::lock_guard lock(c.mutex);
  auto it = c.free.find(bytes);
  if (it == c.free.end()) return nullptr;
  void* p = it->second;
  c.free.erase(it);
  c.held -= bytes;
  return p;
}

void give(void* p, size_t bytes) {
  Cache& c = cache();
  {
    std::lock_guard lock(c.mutex);
    if (c.held + bytes <= kMaxHeld) {
      c.free.emplace(bytes, p);
      c.held += bytes;
      return;
    }
  }
  std::free(p);
}

size_t held_bytes() {
  Cache& c = cache();
  std::lock_guard lock(c.mutex);
  return c.held;
}

}  // namespace refeval::buffer_cache

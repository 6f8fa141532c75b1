#include "buffer_cache.h"

#include <cstdint>
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

void free_held() {
  Cache& c = cache();
  std::lock_guard lock(c.mutex);
  for (auto& [bytes, p] : c.free) std::free(p);
  c.free.clear();
  c.held = 0;
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

namespace {

constexpr size_t kGranule = 64, kSizes = kMaxSmallBytes / kGranule;

// One thread's free lists, linked through the buffers themselves. Trivially destructible, so
// tensors freed while the thread's (or the program's) destructors run can still reach it;
// `closed` sends them straight to free once the thread has emptied its lists.
struct SmallLists {
  void* head[kSizes];
  uint32_t count[kSizes];
  bool closed;
};
thread_local SmallLists t_lists{};

struct SmallListsCloser {
  ~SmallListsCloser() {
    for (size_t i = 0; i < kSizes; ++i)
      while (void* p = t_lists.head[i]) {
        t_lists.head[i] = *static_cast<void**>(p);
        std::free(p);
      }
    t_lists.closed = true;
  }
};
thread_local SmallListsCloser t_closer;

size_t size_index(size_t bytes) { return bytes == 0 ? 0 : (bytes - 1) / kGranule; }

}  // namespace

void* take_small(size_t bytes) {
  const size_t i = size_index(bytes);
  if (void* p = t_lists.head[i]) {
    t_lists.head[i] = *static_cast<void**>(p);
    --t_lists.count[i];
    return p;
  }
  static_cast<void>(&t_closer);  // registers the thread's closer
  void* p = std::aligned_alloc(kGranule, (i + 1) * kGranule);
  if (!p) throw std::bad_alloc();
  return p;
}

void give_small(void* p, size_t bytes) {
  const size_t i = size_index(bytes);
  if (t_lists.closed || t_lists.count[i] >= kSmallPerSize) return std::free(p);
  static_cast<void>(&t_closer);
  *static_cast<void**>(p) = t_lists.head[i];
  t_lists.head[i] = p;
  ++t_lists.count[i];
}

size_t held_bytes() {
  Cache& c = cache();
  std::lock_guard lock(c.mutex);
  return c.held;
}

}  // namespace refeval::buffer_cache

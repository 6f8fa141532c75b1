#include "refeval/threads.h"

#include <atomic>
#include <thread>

namespace refeval {
namespace {
std::atomic<int> g_threads{1};
}  // namespace

void set_thread_count(int n) {
  g_threads = n > 0 ? n : int(std::max(1u, std::thread::hardware_concurrency()));
}

int thread_count() { return g_threads; }

}  // namespace refeval

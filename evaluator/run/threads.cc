#include "refeval/threads.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <thread>

namespace refeval {
namespace {
std::atomic<int> g_threads{1};
}  // namespace

void set_thread_count(int n) {
  g_threads = n > 0 ? n : int(std::max(1u, std::thread::hardware_concurrency()));
}

int thread_count() { return g_threads; }

void parallel_for_split(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& body) {
  const int threads = int(std::min<int64_t>(thread_count(), n / std::max<int64_t>(grain, 1)));
  // Inside another parallel_for the nested OpenMP region would be inactive: one thread, which
  // would run only the first chunk. The whole range runs here instead.
  if (threads <= 1 || omp_in_parallel()) {
    if (n > 0) body(0, n);
    return;
  }
  // An exception must not leave an OpenMP region (the program would terminate): the first one
  // is carried out and rethrown here.
  std::exception_ptr error;
#pragma omp parallel num_threads(threads)
  {
    const int64_t t = omp_get_thread_num(), chunk = (n + threads - 1) / threads;
    const int64_t begin = std::min(n, t * chunk), end = std::min(n, begin + chunk);
    try {
      if (begin < end) body(begin, end);
    } catch (...) {
#pragma omp critical(refeval_parallel_for_error)
      if (!error) error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace refeval

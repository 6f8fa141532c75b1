// refeval's thread pool. A parallel_for is cut into more chunks than threads, and every thread,
// the caller included, claims the next chunk until none is left: a thread the OS has parked (a
// core taken by another process) takes no share, the others do its work, and the caller waits
// only for chunks already started. Idle threads spin briefly (the next node's work usually comes
// within microseconds) and then sleep on a futex, so they never take a busy core's time for long.
// Which thread runs a chunk never changes a bit: the kernels split over outputs only.
#include "refeval/threads.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace refeval {
namespace {

std::atomic<int> g_threads{1};

// Each thread claims chunks until none is left: with this many per thread, a thread parked in
// the middle of a chunk holds up the others for one eighth of the work on two threads, not half.
constexpr int64_t kChunksPerThread = 4;
// How long an idle thread spins before it sleeps (the gap between two nodes' parallel work in a
// decode step is a few microseconds; a futex wake-up costs tens).
constexpr auto kSpin = std::chrono::microseconds(50);

// Set on the pool's threads, and on the caller while it runs a parallel_for: a parallel_for
// inside one runs whole on its thread.
thread_local bool t_in_parallel = false;

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

// Spins until ready() for at most kSpin; true when it became ready.
template <class Ready>
bool spin_until(Ready ready) {
  const auto until = std::chrono::steady_clock::now() + kSpin;
  for (int i = 1;; ++i) {
    if (ready()) return true;
    cpu_relax();
    if (i % 64 == 0 && std::chrono::steady_clock::now() > until) return ready();
  }
}

using Body = std::function<void(int64_t, int64_t)>;

class Pool {
 public:
  explicit Pool(int workers) {
    for (int i = 0; i < workers; ++i) threads_.emplace_back([this] { work_loop(); });
  }
  ~Pool() {
    stop_ = true;
    epoch_.fetch_add(1);
    epoch_.notify_all();
    for (std::thread& t : threads_) t.join();
  }
  int workers() const { return int(threads_.size()); }

  // body over [0, n) in `chunks` chunks; returns when every chunk has run.
  void run(int64_t n, int64_t chunks, const Body& body) {
    body_.store(&body, std::memory_order_relaxed);
    n_.store(n, std::memory_order_relaxed);
    done_.store(0, std::memory_order_relaxed);
    error_ = nullptr;
    failed_.store(false, std::memory_order_relaxed);
    const uint32_t epoch = epoch_.load(std::memory_order_relaxed) + 1;
    claim_.store(uint64_t(epoch) << 32 | uint64_t(chunks) << 16, std::memory_order_release);
    epoch_.store(epoch);
    if (sleeping_.load() > 0) epoch_.notify_all();
    work(epoch);
    auto finished = [&] { return done_.load(std::memory_order_acquire) == chunks; };
    if (!spin_until(finished))
      for (int d = done_.load(std::memory_order_acquire); d != chunks; d = done_.load(std::memory_order_acquire))
        done_.wait(d, std::memory_order_acquire);
    if (error_) std::rethrow_exception(error_);
  }

 private:
  // Claims and runs the chunks of `epoch` until none is left. A claim is a compare-exchange of
  // the word (epoch, chunk count, next chunk): one that succeeds on a chunk below the count proves
  // the job still open (its chunk unfinished, the caller cannot have published the next), so
  // the body and range read after it are this job's. (With the count read beside the word, a
  // thread late from the previous job could read the next job's larger count before the caller
  // published its word, claim one chunk past the old job's end, and run it with the new body: a
  // chunk too many counted as done, the caller returning while one still ran, then a hang.)
  void work(uint32_t epoch) {
    for (;;) {
      uint64_t claim = claim_.load(std::memory_order_acquire);
      if (uint32_t(claim >> 32) != epoch) return;
      const int64_t chunks = int64_t(claim >> 16 & 0xffff), chunk = int64_t(claim & 0xffff);
      if (chunk >= chunks) return;
      if (!claim_.compare_exchange_weak(claim, claim + 1, std::memory_order_acq_rel)) continue;
      const Body* body = body_.load(std::memory_order_relaxed);
      const int64_t n = n_.load(std::memory_order_relaxed);
      if (!failed_.load(std::memory_order_relaxed)) {
        try {
          (*body)(n * chunk / chunks, n * (chunk + 1) / chunks);
        } catch (...) {
          // An exception must not leave the thread: the first one is carried to the caller.
          std::lock_guard lock(error_mutex_);
          if (!error_) error_ = std::current_exception();
          failed_.store(true, std::memory_order_relaxed);
        }
      }
      if (done_.fetch_add(1, std::memory_order_acq_rel) + 1 == chunks) done_.notify_one();
    }
  }

  void work_loop() {
    t_in_parallel = true;
    uint32_t seen = 0;  // the pool's first epoch: a job published before this thread started is still claimable
    while (!stop_) {
      if (!spin_until([&] { return epoch_.load(std::memory_order_acquire) != seen; })) {
        sleeping_.fetch_add(1);
        epoch_.wait(seen);  // returns at once if the epoch moved after the count went up
        sleeping_.fetch_sub(1);
      }
      seen = epoch_.load();
      if (!stop_) work(seen);
    }
  }

  std::vector<std::thread> threads_;
  std::atomic<uint32_t> epoch_{0};  // the futex idle threads sleep on
  std::atomic<uint64_t> claim_{0};  // epoch << 32 | chunk count << 16 | the next chunk to claim
  std::atomic<const Body*> body_{nullptr};
  std::atomic<int64_t> n_{0};
  std::atomic<int> done_{0};  // chunks finished; an int, so that waiting on it is a plain futex
  std::atomic<int> sleeping_{0};
  std::atomic<bool> failed_{false}, stop_{false};
  std::mutex error_mutex_;
  std::exception_ptr error_;
};

// One pool for the process, rebuilt when the thread count changes. A second caller running a
// parallel_for at the same moment (two sessions on two threads) runs its range on its own thread.
std::mutex g_pool_mutex;
std::unique_ptr<Pool> g_pool;

}  // namespace

void set_thread_count(int n) {
  g_threads = n > 0 ? n : int(std::max(1u, std::thread::hardware_concurrency()));
}

int thread_count() { return g_threads; }

void parallel_for_split(int64_t n, int64_t grain, const Body& body) {
  const int threads = int(std::min<int64_t>(thread_count(), n / std::max<int64_t>(grain, 1)));
  std::unique_lock lock(g_pool_mutex, std::defer_lock);
  if (threads <= 1 || t_in_parallel || !lock.try_lock()) {
    if (n > 0) body(0, n);
    return;
  }
  if (!g_pool || g_pool->workers() != thread_count() - 1) {
    g_pool.reset();
    g_pool = std::make_unique<Pool>(thread_count() - 1);
  }
  const int64_t chunks = std::min<int64_t>({n / std::max<int64_t>(grain, 1), threads * kChunksPerThread, 0xffff});
  t_in_parallel = true;
  try {
    g_pool->run(n, chunks, body);
  } catch (...) {
    t_in_parallel = false;
    throw;
  }
  t_in_parallel = false;
}

}  // namespace refeval

// The evaluator's thread pool (refeval/threads.h): parallel_for covers its range once, in one
// call below the grain, and carries an exception out of the threads; ops split across threads
// give the bits one thread gives.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "refeval/threads.h"
#include "test_util.h"

using namespace refeval;
using namespace refeval::testing;
using build::attr;
using build::node;

TEST_CASE("parallel_for: every index once, in chunks of at least the grain, one call below twice the grain, exceptions rethrown") {
  set_thread_count(2);
  std::vector<int> seen(1000, 0);
  int calls = 0;
  int64_t shortest = 1000;
  std::mutex m;
  parallel_for(1000, 100, [&](int64_t b, int64_t e) {
    std::lock_guard lock(m);
    ++calls;
    shortest = std::min(shortest, e - b);
    for (int64_t i = b; i < e; ++i) ++seen[size_t(i)];
  });
  CHECK(calls > 2);  // more chunks than threads: a parked thread's share goes to the others
  CHECK(shortest >= 100);
  CHECK(std::count(seen.begin(), seen.end(), 1) == 1000);
  calls = 0;
  int64_t begin = -1, end = -1;
  parallel_for(150, 100, [&](int64_t b, int64_t e) { ++calls, begin = b, end = e; });
  CHECK(calls == 1);
  CHECK(begin == 0);
  CHECK(end == 150);
  CHECK_THROWS_WITH_AS(parallel_for(1000, 10, [](int64_t b, int64_t) {
                         if (b > 0) throw std::runtime_error("from the second chunk");
                       }),
                       "from the second chunk", std::runtime_error);
  set_thread_count(1);
}

TEST_CASE("parallel_for: a pool thread stalled in its first chunk leaves the rest of the work to the caller") {
  // As when the OS parks a thread because another process holds its core: the caller must not
  // wait for a fixed share of the work, only for the chunk already started.
  set_thread_count(2);
  const std::thread::id caller = std::this_thread::get_id();
  std::atomic<int64_t> by_caller{0};
  std::atomic<bool> stalled{false};
  parallel_for(800, 100, [&](int64_t b, int64_t e) {
    if (std::this_thread::get_id() == caller) by_caller += e - b;
    else if (!stalled.exchange(true)) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  });
  CHECK(by_caller >= 800 - 200);  // all but the stalled chunk (at most a quarter of the range on two threads)
  set_thread_count(1);
}

TEST_CASE("parallel_for: back-to-back small jobs with idle gaps each cover their range once, never hang") {
  // Jobs of 1-13 chunks in a row, the caller pausing 40-70 us now and then so that the pool
  // thread goes to sleep and wakes late: a thread still claiming in the previous job when the
  // next is published must not take a chunk of it. (A pool that read the chunk count apart from
  // the claimed word ran a chunk too many within a few seconds and then hung: the watchdog
  // turns that into a failure instead of a stuck suite.)
  set_thread_count(2);
  std::atomic<bool> finished{false};
  std::thread watchdog([&] {
    for (int i = 0; i < 300 && !finished; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (!finished) {
      std::fputs("parallel_for stress: no progress for 30 s, the pool hangs\n", stderr);
      std::_Exit(1);
    }
  });
  std::vector<std::atomic<int>> count(16);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  int64_t wrong = 0, jobs = 0;
  for (; std::chrono::steady_clock::now() < until && wrong == 0; ++jobs) {
    const int64_t n = 1 + jobs % 13;
    for (auto& c : count) c.store(0);
    parallel_for(n, 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) count[size_t(i)].fetch_add(1);
    });
    for (int64_t i = 0; i < n; ++i) wrong += count[size_t(i)].load() != 1;
    if (jobs % 3 == 0) {
      const auto resume = std::chrono::steady_clock::now() + std::chrono::microseconds(40 + jobs % 30);
      while (std::chrono::steady_clock::now() < resume) {}
    }
  }
  finished = true;
  watchdog.join();
  CAPTURE(jobs);
  CHECK(wrong == 0);
  set_thread_count(1);
}

TEST_CASE("parallel_for called from two threads at once: each range is covered whole") {
  set_thread_count(2);
  std::vector<std::atomic<int>> seen(2 * 100000);
  auto cover = [&](int64_t offset) {
    for (int round = 0; round < 50; ++round)
      parallel_for(100000 / 50, 10, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) ++seen[size_t(offset + round * 2000 + i)];
      });
  };
  std::thread other(cover, 100000);
  cover(0);
  other.join();
  CHECK(std::all_of(seen.begin(), seen.end(), [](const std::atomic<int>& v) { return v == 1; }));
  set_thread_count(1);
}

TEST_CASE("parallel_for inside parallel_for: the inner range is covered whole (a kernel calling a split helper)") {
  set_thread_count(2);
  std::vector<int> seen(2 * 1000, 0);
  std::mutex m;
  parallel_for(2, 1, [&](int64_t ob, int64_t oe) {
    for (int64_t o = ob; o < oe; ++o)
      parallel_for(1000, 100, [&](int64_t b, int64_t e) {
        std::lock_guard lock(m);
        for (int64_t i = b; i < e; ++i) ++seen[size_t(o * 1000 + i)];
      });
  });
  CHECK(std::count(seen.begin(), seen.end(), 1) == 2000);
  set_thread_count(1);
}

TEST_CASE("Elementwise ops, Softmax and LayerNormalization split across threads give one thread's bits") {
  auto ramp = [](Shape s) {
    std::vector<float> v(static_cast<size_t>(shape_size(s)));
    for (size_t i = 0; i < v.size(); ++i) v[i] = float(int(i * 7919 % 1009) - 504) * 3e-3f;
    return tensor<float>(s, v);
  };
  const Tensor big = ramp({64, 3072}), other = ramp({64, 3072}), scalar = tensor<float>({}, {0.5f});
  const Tensor scale = ramp({3072}), bias = ramp({3072});
  // Rows longer than two grains (GPT-2's vocabulary): the exponentials split inside the row split
  // (it ran half the row and read garbage for the rest on two threads before parallel_for nested).
  const Tensor vocab = ramp({4, 50257});
  // A middle axis: whole slabs across threads, the columns side by side.
  const Tensor slabs = ramp({8, 1000, 64});
  struct Case { const char* what; Node n; Values in; };
  const Case cases[] = {
      {"Tanh", node("Tanh", {"x"}, {"y"}), {big}},
      {"Add, equal shapes", node("Add", {"a", "b"}, {"y"}), {big, other}},
      {"Mul by a scalar", node("Mul", {"a", "b"}, {"y"}), {scalar, big}},
      {"Add with a broadcast row", node("Add", {"a", "b"}, {"y"}), {big, bias}},
      {"Softmax", node("Softmax", {"x"}, {"y"}, {attr("axis", int64_t(-1))}), {big}},
      {"LogSoftmax over 50,257", node("LogSoftmax", {"x"}, {"y"}, {attr("axis", int64_t(-1))}), {vocab}},
      {"Softmax over a middle axis", node("Softmax", {"x"}, {"y"}, {attr("axis", int64_t(1))}), {slabs}},
      {"LogSoftmax over a middle axis", node("LogSoftmax", {"x"}, {"y"}, {attr("axis", int64_t(1))}), {slabs}},
      {"LayerNormalization", node("LayerNormalization", {"x", "s", "b"}, {"y"}), {big, scale, bias}},
  };
  for (const Case& c : cases) {
    CAPTURE(c.what);
    set_thread_count(1);
    const Tensor one = run_node(c.n, c.in)[0].tensor();
    set_thread_count(2);
    const Tensor two = run_node(c.n, c.in)[0].tensor();
    set_thread_count(1);
    REQUIRE(one.shape() == two.shape());
    CHECK(std::memcmp(one.raw_data(), two.raw_data(), one.nbytes()) == 0);
  }
}

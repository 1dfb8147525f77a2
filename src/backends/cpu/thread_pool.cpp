// Fork-join thread pool and counter waits for the CPU backend (see thread_pool.hpp for why it sleeps, not spins).
// Hand-written, not a packaged pool: thread_pool.hpp says why.
#include "backends/cpu/thread_pool.hpp"

#include <pthread.h>
#include <sched.h>

#include <chrono>
#include <cstdlib>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#define TF_CPU_RELAX() _mm_pause()
#else
#define TF_CPU_RELAX() ((void)0)
#endif

namespace tileforge::cpu {
namespace {

// How long a waiting thread spins before it sleeps on the futex. Inside one GEMM (B's packing pieces another
// thread holds, the caller waiting for its workers) the wait is short but a sleep is not: waking a thread costs
// tens to hundreds of microseconds on a virtual machine (the wake-up is an inter-processor interrupt), far more
// than packing a piece, so those waits spin up to 2 ms. Between GEMMs an idle worker spins only 50 us, so that it does not take a core from
// the next library measured (DESIGN.md: no threads left spinning while the other library runs).
constexpr std::chrono::microseconds kSpinInsideGemm{2000};
constexpr std::chrono::microseconds kSpinBetweenGemms{50};

template <class A, class V>
void wait_while_equal(const A& atom, V old, std::chrono::microseconds spin) {
  const auto deadline = std::chrono::steady_clock::now() + spin;
  for (int i = 0;; ++i) {
    if (atom.load(std::memory_order_acquire) != old) return;
    TF_CPU_RELAX();
    if ((i & 63) == 63 && std::chrono::steady_clock::now() > deadline) break;
  }
  while (atom.load(std::memory_order_acquire) == old) atom.wait(old, std::memory_order_acquire);
}

std::vector<int> usable_cpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
  }
  return cpus;
}

}  // namespace

void wait_at_least(const std::atomic<int64_t>& counter, int64_t target) {
  for (int64_t v = counter.load(std::memory_order_acquire); v < target; v = counter.load(std::memory_order_acquire))
    wait_while_equal(counter, v, kSpinInsideGemm);
}

ThreadPool& ThreadPool::instance() {
  static ThreadPool pool([] {
    auto cpus = usable_cpus();
    int n = cpus.empty() ? int(std::thread::hardware_concurrency()) : int(cpus.size());
    return n > 0 ? n : 1;
  }());
  return pool;
}

ThreadPool::ThreadPool(int max_threads) {
  const char* pin_env = std::getenv("TILEFORGE_PIN_THREADS");
  const bool want_pin = !(pin_env && std::strcmp(pin_env, "0") == 0);
  auto cpus = usable_cpus();
  for (int tid = 1; tid < max_threads; ++tid) {
    workers_.emplace_back([this, tid] { worker_loop(tid); });
    if (want_pin && int(cpus.size()) >= max_threads) {
      // The caller (thread 0) stays where the OS put it; workers take the other cores one each.
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(cpus[tid], &set);
      pinned_ = pthread_setaffinity_np(workers_.back().native_handle(), sizeof(set), &set) == 0 || pinned_;
    }
  }
}

ThreadPool::~ThreadPool() {
  stop_.store(true, std::memory_order_release);
  generation_.fetch_add(1, std::memory_order_acq_rel);
  generation_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::worker_loop(int tid) {
  uint32_t seen = 0;
  for (;;) {
    wait_while_equal(generation_, seen, kSpinBetweenGemms);
    seen = generation_.load();
    if (stop_.load()) return;
    // Join only a job that is still open and is the one this wake-up was for; the caller waits for every
    // worker inside before it returns, so job_ is never read after the caller's function object is gone.
    inside_.fetch_add(1);
    if (open_.load() && generation_.load() == seen && tid < job_threads_) (*job_)();
    inside_.fetch_sub(1);
    inside_.notify_one();
  }
}

void ThreadPool::run(int nthreads, const std::function<void()>& work) {
  if (nthreads <= 1 || workers_.empty()) {
    work();
    return;
  }
  if (nthreads > max_threads()) nthreads = max_threads();
  while (busy_.test_and_set(std::memory_order_acquire)) busy_.wait(true, std::memory_order_relaxed);
  job_ = &work;
  job_threads_ = nthreads;
  open_.store(true);
  generation_.fetch_add(1);
  generation_.notify_all();
  work();
  // Late workers that have not joined yet never will: close the job, then wait for those inside to leave.
  open_.store(false);
  for (int in = inside_.load(); in != 0; in = inside_.load()) wait_while_equal(inside_, in, kSpinInsideGemm);
  job_ = nullptr;
  busy_.clear(std::memory_order_release);
  busy_.notify_one();
}

}  // namespace tileforge::cpu

// Fork-join thread pool and barrier for the CPU backend (see thread_pool.hpp for why it sleeps, not spins).
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

// How long a waiting thread spins before it sleeps on the futex. Inside one GEMM (barriers, the caller waiting
// for its workers) the wait is short but a sleep is not: waking a thread costs tens to hundreds of microseconds
// on a virtual machine (the wake-up is an inter-processor interrupt), far more than a packing phase, so those
// waits spin up to 2 ms. Between GEMMs an idle worker spins only 50 us, so that it does not take a core from
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

void Barrier::arrive_and_wait() {
  if (count_ <= 1) return;
  const uint32_t phase = phase_.load(std::memory_order_acquire);
  if (waiting_.fetch_add(1, std::memory_order_acq_rel) == count_ - 1) {
    waiting_.store(0, std::memory_order_relaxed);
    phase_.store(phase + 1, std::memory_order_release);
    phase_.notify_all();
    return;
  }
  wait_while_equal(phase_, phase, kSpinInsideGemm);
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
    if (open_.load() && generation_.load() == seen) {
      if (optional_) {
        (*job_)(tid, job_threads_);
      } else if (tid < job_threads_) {
        (*job_)(tid, job_threads_);
        required_done_.fetch_add(1);
        required_done_.notify_one();
      }
    }
    inside_.fetch_sub(1);
    inside_.notify_one();
  }
}

void ThreadPool::run(int nthreads, const std::function<void(int, int)>& fn, Participation mode) {
  if (nthreads <= 1 || workers_.empty()) {
    fn(0, 1);
    return;
  }
  if (nthreads > max_threads()) nthreads = max_threads();
  while (busy_.test_and_set(std::memory_order_acquire)) busy_.wait(true, std::memory_order_relaxed);
  job_ = &fn;
  job_threads_ = nthreads;
  optional_ = mode == Participation::optional;
  required_done_.store(0);
  open_.store(true);
  generation_.fetch_add(1);
  generation_.notify_all();
  fn(0, nthreads);
  if (!optional_) {
    for (int done = required_done_.load(); done != nthreads - 1; done = required_done_.load()) {
      wait_while_equal(required_done_, done, kSpinInsideGemm);
    }
  }
  // Late workers that have not joined yet never will: close the job, then wait for those inside to leave.
  open_.store(false);
  for (int in = inside_.load(); in != 0; in = inside_.load()) wait_while_equal(inside_, in, kSpinInsideGemm);
  job_ = nullptr;
  busy_.clear(std::memory_order_release);
  busy_.notify_one();
}

}  // namespace tileforge::cpu

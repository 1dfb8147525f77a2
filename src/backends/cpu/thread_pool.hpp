// A small fork-join thread pool for the CPU backend: workers sleep between calls (no spinning while another
// library runs), the caller is thread 0, and a reusable barrier separates the packing and compute phases.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

namespace tileforge::cpu {

// A sense-reversing barrier for a fixed number of threads: spins briefly, then sleeps on the futex.
class Barrier {
 public:
  explicit Barrier(int count) : count_(count) {}
  void arrive_and_wait();

 private:
  const int count_;
  std::atomic<int> waiting_{0};
  std::atomic<uint32_t> phase_{0};
};

class ThreadPool {
 public:
  // required: thread tid of nthreads must run (static partitions, barriers); the call waits for all of them.
  // optional: the work is claimed dynamically; workers that wake after the caller has finished skip it, so a
  // worker slow to wake never delays the call.
  enum class Participation { required, optional };

  // Process-wide pool sized to the usable cores; worker i is pinned to the i-th usable core after the
  // caller's (set TILEFORGE_PIN_THREADS=0 to leave placement to the OS).
  static ThreadPool& instance();
  explicit ThreadPool(int max_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int max_threads() const { return int(workers_.size()) + 1; }
  bool pinned() const { return pinned_; }
  // Runs fn(tid, nthreads) on up to nthreads threads (the caller is tid 0) and returns when every thread that
  // ran it has finished. Calls are serialized: one parallel region at a time.
  void run(int nthreads, const std::function<void(int tid, int nthreads)>& fn,
           Participation mode = Participation::required);

 private:
  void worker_loop(int tid);

  std::vector<std::thread> workers_;
  std::atomic<uint32_t> generation_{0};
  std::atomic<bool> open_{false};      // the current job may still be joined
  std::atomic<int> inside_{0};         // workers between joining and leaving the current job
  std::atomic<int> required_done_{0};  // required workers that have finished the current job
  std::atomic<bool> stop_{false};
  const std::function<void(int, int)>* job_ = nullptr;
  int job_threads_ = 0;
  bool optional_ = false;
  bool pinned_ = false;
  std::atomic_flag busy_ = ATOMIC_FLAG_INIT;
};

}  // namespace tileforge::cpu

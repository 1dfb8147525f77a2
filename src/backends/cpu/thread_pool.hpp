// A small fork-join thread pool for the CPU backend: workers sleep between calls (no spinning while another
// library runs), the caller is thread 0, and a counter wait lets a team wait only for work another thread claimed.
// Hand-written, not OpenMP or TBB: it sleeps on a futex between calls, never spinning beside OpenBLAS's OpenMP team.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

namespace tileforge::cpu {

// Waits until `counter` reaches at least `target` (spinning briefly, then sleeping on the futex); the thread that
// raises it must notify_all. For the team's waits on work other threads have claimed.
void wait_at_least(const std::atomic<int64_t>& counter, int64_t target);

class ThreadPool {
 public:
  // Process-wide pool sized to the usable cores; worker i is pinned to the i-th usable core after the
  // caller's (set TILEFORGE_PIN_THREADS=0 to leave placement to the OS).
  static ThreadPool& instance();
  explicit ThreadPool(int max_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int max_threads() const { return int(workers_.size()) + 1; }
  bool pinned() const { return pinned_; }
  // Runs `work` on the caller and on up to nthreads - 1 workers, and returns when the caller's has returned and
  // every worker that joined has left. `work` claims its pieces dynamically: a worker that wakes after the caller
  // has finished skips the job, so a worker slow to wake (or taken away by the OS) never holds the call up; a
  // worker that joined holds it up only by the piece it claimed. Calls are serialized: one parallel region at a
  // time.
  void run(int nthreads, const std::function<void()>& work);

 private:
  void worker_loop(int tid);

  std::vector<std::thread> workers_;
  std::atomic<uint32_t> generation_{0};
  std::atomic<bool> open_{false};  // the current job may still be joined
  std::atomic<int> inside_{0};     // workers between joining and leaving the current job
  std::atomic<bool> stop_{false};
  const std::function<void()>* job_ = nullptr;
  int job_threads_ = 0;
  bool pinned_ = false;
  std::atomic_flag busy_ = ATOMIC_FLAG_INIT;
};

}  // namespace tileforge::cpu

// The split-K / stream-K workspace of a prepared CUDA kernel: one per stream, shared by every prepared kernel of the
// process that launches on that stream, or the caller's own (GemmArgs::workspace), whose counters are zeroed in
// stream order before each launch.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "backends/backend.hpp"
#include "hw/cuda_driver.hpp"

namespace tileforge::cuda {

// One stream's workspace: a zone of counters that every launch leaves zero, then the partial sums. Shared by the
// kernels that launch on the stream (their launches are ordered by it), so that a tune's candidates, dispatch's
// kernels and a plan's all use one buffer instead of one each, and every candidate timed against another reads the
// same memory. (It was also meant to close a 6% spread between copies of one split-K kernel; it did not: that came
// from the order of the timed rounds, docs/PERF-LOG.md 2026-12-03.)
struct SharedWorkspace {
  std::mutex mutex;      // held from a lease to the end of the launch that uses it
  DeviceBuffer buffer;
  int64_t counter_zone = 0;  // bytes of counters at the start; the partials start there
};

// What a launch uses: the counters and the partials, and, for the stream's own workspace, its lock until the launch
// has been issued (a kernel of another thread that needs a larger workspace grows it only after that).
struct WorkspaceLease {
  void* counters = nullptr;
  void* partials = nullptr;
  std::unique_lock<std::mutex> lock;
};

class StreamWorkspaces {
 public:
  // A kernel's workspace of `workspace_bytes` (as its plan reports it): `counter_bytes` of counters that the kernel
  // leaves zero, then its partial sums; `what` names the kernel in errors. With args.workspace set, the caller's
  // memory (at least workspace_bytes, 16-byte aligned) with its counters zeroed on args.stream; else the stream's
  // shared workspace, grown (after the stream's earlier work) and zeroed as needed. Launches that may run at once
  // (other streams, or the per-thread default stream of other threads) never share one.
  Expected<WorkspaceLease> get(const GemmArgs& args, int64_t workspace_bytes, int64_t counter_bytes,
                               const std::string& what) const;

  // The process's workspace for `stream` in the current context (created empty where there is none), as get() finds
  // it; for tests.
  static Expected<std::shared_ptr<SharedWorkspace>> for_stream(CUstream stream);

 private:
  // The workspaces this kernel used, kept alive while it lives (the process's registry holds them weakly).
  mutable std::mutex mutex_;
  mutable std::map<CUstream, std::shared_ptr<SharedWorkspace>> held_;
};

}  // namespace tileforge::cuda

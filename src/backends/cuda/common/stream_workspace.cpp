// The per-stream shared or caller-supplied workspace of split-K and stream-K kernels (stream_workspace.hpp).
#include "backends/cuda/common/stream_workspace.hpp"

#include <algorithm>
#include <thread>
#include <tuple>

#include <fmt/format.h>

namespace tileforge::cuda {
namespace {

// The process's workspaces by context, stream and (for the per-thread default stream, whose one handle names a
// different stream in each thread) thread. Held weakly: a workspace lives while a kernel that used it does.
using Key = std::tuple<CUcontext, CUstream, std::thread::id>;

struct Registry {
  std::mutex mutex;
  std::map<Key, std::weak_ptr<SharedWorkspace>> by_stream;
};

// Never destroyed: kernels destroyed during the process's exit still find it.
Registry& registry() {
  static Registry* r = new Registry;
  return *r;
}

Expected<Key> key_of(CUstream stream) {
  auto d = driver();
  if (!d) return d.status();
  CUcontext ctx = nullptr;
  if (Status s = check((*d)->cuCtxGetCurrent(&ctx), "cuCtxGetCurrent (the workspace's context)"); !s) return s;
  const bool per_thread = stream == CU_STREAM_PER_THREAD;
  return Key{ctx, stream, per_thread ? std::this_thread::get_id() : std::thread::id()};
}

}  // namespace

Expected<std::shared_ptr<SharedWorkspace>> StreamWorkspaces::for_stream(CUstream stream) {
  auto key = key_of(stream);
  if (!key) return key.status();
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  // Drop the entries of workspaces no kernel holds any more (streams since destroyed, kernels since released).
  std::erase_if(r.by_stream, [](const auto& e) { return e.second.expired(); });
  std::weak_ptr<SharedWorkspace>& slot = r.by_stream[*key];
  std::shared_ptr<SharedWorkspace> ws = slot.lock();
  if (!ws) {
    ws = std::make_shared<SharedWorkspace>();
    slot = ws;
  }
  return ws;
}

Expected<WorkspaceLease> StreamWorkspaces::get(const GemmArgs& args, int64_t workspace_bytes, int64_t counter_bytes,
                                               const std::string& what) const {
  const CUstream stream = static_cast<CUstream>(args.stream);
  const int64_t bytes = workspace_bytes, partial_bytes = workspace_bytes - counter_bytes;
  if (args.workspace) {
    if (args.workspace_bytes < std::size_t(bytes)) {
      return invalid_argument(fmt::format(
          "workspace_bytes = {} is smaller than the {} bytes {} needs here (allowed: >= {}, or no workspace, and the "
          "stream's own is used)",
          args.workspace_bytes, bytes, what, bytes));
    }
    if (reinterpret_cast<uintptr_t>(args.workspace) % 16 != 0) {
      return invalid_argument(fmt::format("workspace = {} is not 16-byte aligned (allowed: an address that is; "
                                          "cudaMalloc's are 256-byte aligned)",
                                          args.workspace));
    }
    // The caller may have used the memory for anything since the last launch.
    auto d = driver();
    if (!d) return d.status();
    if (Status s = check((*d)->cuMemsetD32Async(reinterpret_cast<CUdeviceptr>(args.workspace), 0,
                                                std::size_t(counter_bytes) / 4, stream),
                         "cuMemsetD32Async (the caller's workspace counters)");
        !s) {
      return s;
    }
    WorkspaceLease lease;
    lease.counters = args.workspace;
    lease.partials = static_cast<char*>(args.workspace) + counter_bytes;
    return lease;
  }

  std::shared_ptr<SharedWorkspace> ws;
  {
    std::lock_guard lock(mutex_);
    std::shared_ptr<SharedWorkspace>& held = held_[stream];
    if (!held || stream == CU_STREAM_PER_THREAD) {
      auto found = for_stream(stream);
      if (!found) return found.status();
      held = *found;  // per-thread: the calling thread's; the kernel keeps the last one it used alive
    }
    ws = held;
  }
  WorkspaceLease lease;
  lease.lock = std::unique_lock(ws->mutex);
  const int64_t zone = ws->counter_zone;
  if (zone < counter_bytes || int64_t(ws->buffer.size()) - zone < partial_bytes) {
    // Grow both parts to what any kernel has asked of this stream so far. The counters stay at the start, and no
    // kernel's partials ever lie in the zone, so every kernel finds its counters zero.
    const int64_t new_zone = (std::max(zone, counter_bytes) + 255) / 256 * 256;  // the partials on 256 bytes
    const int64_t new_partials = std::max(int64_t(ws->buffer.size()) - zone, partial_bytes);
    auto d = driver();
    if (!d) return d.status();
    if (ws->buffer.size() > 0) {
      // Launches on this stream may still read the old one.
      if (Status s = check((*d)->cuStreamSynchronize(stream), "cuStreamSynchronize (growing the workspace)"); !s) {
        return s;
      }
    }
    auto fresh = DeviceBuffer::allocate(std::size_t(new_zone + new_partials));
    if (!fresh) {
      return Status(fresh.status().code(), fmt::format("{}: the split-K/stream-K workspace of {} bytes: {}", what,
                                                       new_zone + new_partials, fresh.status().message()));
    }
    // Synchronous (the legacy stream, then the context), so that no stream, blocking or not, sees it unzeroed.
    if (Status s = check((*d)->cuMemsetD32(fresh->get(), 0, std::size_t(new_zone + new_partials) / 4),
                         "cuMemsetD32 (workspace)");
        !s) {
      return s;
    }
    if (Status s = check((*d)->cuCtxSynchronize(), "cuCtxSynchronize (workspace)"); !s) return s;
    ws->buffer = std::move(*fresh);
    ws->counter_zone = new_zone;
  }
  lease.counters = ws->buffer.data();
  lease.partials = static_cast<char*>(ws->buffer.data()) + ws->counter_zone;
  return lease;
}

}  // namespace tileforge::cuda

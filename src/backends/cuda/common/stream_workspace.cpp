// The per-stream or caller-supplied workspace of split-K and stream-K kernels (stream_workspace.hpp).
#include "backends/cuda/common/stream_workspace.hpp"

#include <fmt/format.h>

namespace tileforge::cuda {

Expected<void*> StreamWorkspaces::get(const GemmArgs& args, int64_t bytes, int64_t counter_bytes,
                                      const std::string& what) const {
  if (!args.workspace) return owned(static_cast<CUstream>(args.stream), bytes, what);
  if (args.workspace_bytes < std::size_t(bytes)) {
    return invalid_argument(fmt::format(
        "workspace_bytes = {} is smaller than the {} bytes {} needs here (allowed: >= {}, or no workspace, and the "
        "kernel keeps its own per stream)",
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
                                              std::size_t(counter_bytes) / 4, static_cast<CUstream>(args.stream)),
                       "cuMemsetD32Async (the caller's workspace counters)");
      !s) {
    return s;
  }
  return args.workspace;
}

Expected<void*> StreamWorkspaces::owned(CUstream stream, int64_t bytes, const std::string& what) const {
  std::lock_guard lock(mutex_);
  DeviceBuffer& buf = buffers_[stream];
  if (int64_t(buf.size()) >= bytes) return buf.data();
  auto d = driver();
  if (!d) return d.status();
  if (buf.size() > 0) {
    // Launches on this stream may still read the old one.
    if (Status s = check((*d)->cuStreamSynchronize(stream), "cuStreamSynchronize (growing the workspace)"); !s) return s;
  }
  auto fresh = DeviceBuffer::allocate(std::size_t(bytes));
  if (!fresh) {
    return Status(fresh.status().code(), fmt::format("{}: the split-K/stream-K workspace of {} bytes: {}", what, bytes,
                                                     fresh.status().message()));
  }
  // Synchronous (the legacy stream, then the context), so that no stream, blocking or not, sees it unzeroed.
  if (Status s = check((*d)->cuMemsetD32(fresh->get(), 0, std::size_t(bytes) / 4), "cuMemsetD32 (workspace)"); !s) {
    return s;
  }
  if (Status s = check((*d)->cuCtxSynchronize(), "cuCtxSynchronize (workspace)"); !s) return s;
  buf = std::move(*fresh);
  return buf.data();
}

}  // namespace tileforge::cuda

// The split-K / stream-K workspace of a prepared CUDA kernel: one per stream, kept by the kernel and grown as
// needed, or the caller's own (GemmArgs::workspace), whose counters are zeroed in stream order before each launch.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "backends/backend.hpp"
#include "hw/cuda_driver.hpp"

namespace tileforge::cuda {

class StreamWorkspaces {
 public:
  // The first `counter_bytes` of the workspace are counters that every launch leaves zero; `what` names the kernel
  // in errors. With args.workspace set, the caller's memory (large enough, 16-byte aligned) with its counters
  // zeroed on args.stream; else this stream's own buffer, zeroed once when allocated. Launches that may run at once
  // (other streams) never share one.
  Expected<void*> get(const GemmArgs& args, int64_t bytes, int64_t counter_bytes, const std::string& what) const;

 private:
  Expected<void*> owned(CUstream stream, int64_t bytes, const std::string& what) const;

  mutable std::mutex mutex_;
  mutable std::map<CUstream, DeviceBuffer> buffers_;
};

}  // namespace tileforge::cuda

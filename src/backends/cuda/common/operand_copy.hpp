// COPY_AB's operand copy, shared by the sm80 and sm90 kernels: padded copies of A and B made by one launch of the
// tf_copy_u16 utility kernel on the caller's stream, which the GEMM then reads instead of the caller's operands.
#pragma once

#include <cstddef>
#include <map>
#include <mutex>
#include <utility>

#include "backends/backend.hpp"
#include "hw/cuda_driver.hpp"

namespace tileforge::cuda::detail {

// COPY_AB's padded copies of A and B and the copy kernel, owned by a prepared kernel of either family: the buffers
// grow as needed, the kernel is loaded once (run() must not pay a cache lookup per call: every microsecond the host
// spends between launches is GPU time in a timed rep).
class OperandCopy {
 public:
  explicit OperandCopy(int ordinal) : ordinal_(ordinal) {}

  // The copies launched on `stream`: one pair per stream, so that calls on other streams, which may run at the same
  // time, never write the buffers this stream's kernel reads.
  Expected<std::pair<void*, void*>> buffers(CUstream stream, std::size_t a_bytes, std::size_t b_bytes) const;

  Expected<void*> copier() const;

 private:
  int ordinal_;
  mutable std::mutex mutex_;
  mutable std::map<CUstream, std::pair<DeviceBuffer, DeviceBuffer>> buffers_;
  mutable void* copier_ = nullptr;
};

// Which operands a config lets COPY_AB copy: sm80's COPY_AB = 1 and sm90's 1 both, sm90's 2 A only and 3 B only.
struct CopyWhich {
  bool a, b;
};
CopyWhich copy_which(const Config& c);
// Device bytes of the padded copies COPY_AB makes for a normalized problem, at most (every operand `which` allows
// copied): the memory budget's share of them (KernelFamily::workspace_bytes).
uint64_t copy_bytes(const Problem& p, CopyWhich which);

// Copies those of A and B that `which` allows and that need it (needs_copy) into buffers whose rows are 128-byte
// aligned; `launch_p` gets their leading dimensions and the returned pointers are the ones to read.
Expected<std::pair<const void*, const void*>> copy_operands(const OperandCopy& copy, const Problem& p,
                                                            const GemmArgs& args, CopyWhich which,
                                                            Problem& launch_p);

}  // namespace tileforge::cuda::detail

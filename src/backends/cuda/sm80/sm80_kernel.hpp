// The sm80 family's prepared kernel in the cuda backend: its instances compiled per load width and checked against
// their resource estimates, and its launch. The sm90 kernel falls back to it for pointers TMA cannot read.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "backends/backend.hpp"
#include "backends/cuda/common/operand_copy.hpp"
#include "backends/cuda/common/stream_workspace.hpp"
#include "backends/cuda/sm80/sm80_family.hpp"
#include "jit/loader.hpp"

namespace tileforge::cuda::detail {

// The load width prepare() compiles an instance for: 16 bytes after COPY_AB, else the config's VEC_BYTES.
int prepared_vec(const Config& config);

class CudaKernel final : public Kernel {
 public:
  CudaKernel(Config config, int ordinal, std::string arch)
      : Kernel(std::move(config)), ordinal_(ordinal), arch_(std::move(arch)), copy_(ordinal) {}

  struct Instance {
    jit::LoadedKernel loaded;
    GeneratedKernel generated;
  };

  int ordinal() const { return ordinal_; }
  // The instance for (vec, epilogue vec), compiled on first use: a pointer narrower than the config assumed
  // gets a narrower instance instead of a fault.
  Expected<const Instance*> instance(const Problem& p, int vec, int epi) const;

  const OperandCopy& operand_copy() const { return copy_; }
  // SPLIT_K's or STREAM_K's counters and partial tiles: the caller's workspace or the stream's own
  // (stream_workspace.hpp).
  const StreamWorkspaces& workspaces() const { return workspaces_; }
  std::size_t workspace_bytes(const Problem& p) const override {
    return std::size_t(sm80_workspace(p, config(), workers_).workspace_bytes);
  }
  // STREAM_K: the blocks of the persistent grid, the device's SMs times the compiled kernel's resident blocks (set
  // once by prepare_sm80); 0 otherwise.
  int64_t workers() const { return workers_; }
  void set_workers(int64_t workers) { workers_ = workers; }

  mutable std::vector<std::string> warnings;

 private:
  Status check_resources(const jit::LoadedKernel& k, const GeneratedKernel& gen) const;

  int ordinal_;
  std::string arch_;  // the NVRTC target, for the register estimate
  mutable std::mutex mutex_;
  mutable std::map<std::pair<int, int>, Instance> instances_;
  OperandCopy copy_;
  StreamWorkspaces workspaces_;
  int64_t workers_ = 0;
};

Expected<std::unique_ptr<CudaKernel>> prepare_sm80(const Problem& p, const Config& config, int ordinal,
                                                   const std::string& arch);

// `p` normalized, m and n > 0; the pointers checked.
Status run_sm80(const CudaKernel& kernel, const Problem& p, const GemmArgs& args);

}  // namespace tileforge::cuda::detail

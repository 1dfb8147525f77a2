// The sm90 family's prepared kernel in the cuda backend: tensor maps built per call, thread-block clusters, the
// split-K workspace and the cooperative launch of the shared sum, with the sm80 kernel behind it for pointers
// TMA cannot read.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backends/backend.hpp"
#include "backends/cuda/common/operand_copy.hpp"
#include "backends/cuda/common/stream_workspace.hpp"
#include "backends/cuda/sm80/sm80_kernel.hpp"
#include "backends/cuda/sm90/sm90_family.hpp"
#include "hw/cuda_driver.hpp"
#include "hw/hw_profile.hpp"
#include "jit/loader.hpp"

namespace tileforge::cuda::detail {

// Mirrors tf::sm90::TmaDesc (kernels/sm90/ptx.cuh) and tf::sm90::Params (kernels/sm90/config.cuh) field for field:
// the tensor maps travel by value in the kernel's parameter space (__grid_constant__), where the TMA unit reads them.
struct alignas(64) Sm90TmaDesc {
  unsigned long long v[16];
};
struct Sm90Params {
  Sm90TmaDesc a, b, c;
  void* c_ptr;
  int m, n, k;
  long long ldc;
  float alpha, beta;
  int* counters;
  float* partials;
  float* sums;
  int sk_tiles;
  int shared_sum;
  int c_staged_stores;
};
static_assert(sizeof(Sm90TmaDesc) == sizeof(CUtensorMap), "a tensor map is 128 bytes");

class Sm90Kernel final : public Kernel {
 public:
  Sm90Kernel(Config config, int ordinal, jit::LoadedKernel loaded, Sm90Source source, int max_clusters,
             hw::HwProfile profile, std::string arch)
      : Kernel(std::move(config)),
        copy_(ordinal),
        ordinal_(ordinal),
        loaded_(std::move(loaded)),
        source_(std::move(source)),
        max_clusters_(max_clusters),
        profile_(std::move(profile)),
        arch_(std::move(arch)) {}

  int ordinal() const { return ordinal_; }
  // Split-K tiles are summed by their last slice even where every slice could sum its share.
  void keep_last_slice_sum() { shared_sum_refused_ = true; }
  void launch_uncooperatively() { cooperative_ = false; }

  Status run(const Problem& p, const GemmArgs& args) const;

  std::size_t workspace_bytes(const Problem& p) const override {
    return std::size_t(sm90_schedule(p, config(), max_clusters_).workspace_bytes);
  }

  const Sm90Source& source() const { return source_; }
  const jit::LoadedKernel& loaded() const { return loaded_; }
  const OperandCopy& operand_copy() const { return copy_; }

 private:
  bool same_shape(const Problem& p) const;
  Status build_params(const Problem& p, const void* a, const void* b, void* c) const;
  // The sm80 family's heuristic config for the problem, prepared on first use, runs what this kernel cannot.
  Status run_fallback(const Problem& p, const GemmArgs& args, const std::string& why) const;

  OperandCopy copy_;
  int ordinal_;
  jit::LoadedKernel loaded_;
  Sm90Source source_;
  int max_clusters_;
  hw::HwProfile profile_;
  std::string arch_;
  mutable std::mutex mutex_;
  mutable Sm90Params params_{};
  mutable bool cached_ = false;
  mutable const void* cached_a_ = nullptr;
  mutable const void* cached_b_ = nullptr;
  mutable const void* cached_c_ = nullptr;
  mutable Problem cached_p_;
  mutable std::unique_ptr<CudaKernel> fallback_;
  mutable std::vector<std::string> warnings_;
  mutable bool shared_sum_refused_ = false;
  bool cooperative_ = true;
  StreamWorkspaces workspaces_;
};

// The L2 promotion of an operand's tensor map, in bytes (0: none): 256 where its rows start on 128-byte lines (the
// base and ld * element size on multiples of 128), 128 where they do not. A 128-byte box row off the lines straddles
// two, and 256-byte promotion fetched around both: on an H100 (bench/results/h100/2026-12-05e-l2-promotion),
// 128-byte promotion ran 3000^3 11% faster (0.873 to 0.981 of cuBLAS in one call) and 1000^3 11% (0.841 to 0.885),
// and cut the sectors that cross the L2's two partitions by 17% at 1000^3; the aligned shapes keep 256. A non-null
// `override_value` of none, 64, 128 or 256 (TILEFORGE_SM90_L2_PROMOTION, for measurements) sets it instead; any other
// value keeps the choice.
int sm90_l2_promotion_bytes(uintptr_t base, int64_t ld, DType type, const char* override_value);

// Why a compiled sm90 instance must not run: spills, serialized wgmma, too few threads; "" when it may.
std::string sm90_refusal(const Config& config, const jit::FunctionResources* r,
                         const std::vector<std::string>& warnings);

Expected<std::unique_ptr<Kernel>> prepare_sm90(const Problem& p, const Config& config, const Device& device,
                                               const std::string& arch);

}  // namespace tileforge::cuda::detail

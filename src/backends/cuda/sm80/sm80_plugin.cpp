// The sm80 family as a plug-in: which chips and problems it serves, the space the planner tries, its cost model,
// decision log and ahead-of-time compile, registered once.
#include <cstdint>

#include <fmt/format.h>

#include "backends/cuda/common/operand_copy.hpp"
#include "backends/cuda/cuda_jit_family.hpp"
#include "backends/cuda/sm80/sm80_cost_model.hpp"
#include "backends/cuda/sm80/sm80_decisions.hpp"
#include "backends/cuda/sm80/sm80_family.hpp"
#include "plan/kernel_family.hpp"

namespace tileforge::cuda {
namespace {

struct Sm80Scratch : plan::CostScratch {
  DramCache dram;
};

class Sm80Family final : public CudaJitFamily {
 public:
  std::string_view name() const override { return "sm80"; }
  int version() const override { return kSm80Version; }
  int preference() const override { return 100; }

  plan::FamilyFit fit(const hw::HwProfile& p) const override {
    const bool nvidia = p.kind == "gpu" && p.vendor == "nvidia";
    const int sm = p.nvidia_sm();
    if (nvidia && sm >= 80) {
      return plan::FamilyFit::yes(fmt::format(
          "NVIDIA {}: cp.async, ldmatrix and mma.sync (sm_80 and later) run the sm80 family{}", p.arch,
          p.has("wgmma") ? "; on this chip it serves the problems the sm90 family (TMA + wgmma) does not take" : ""));
    }
    plan::FamilyFit f;
    f.refusal = fmt::format("family sm80 plans for NVIDIA GPUs of sm_80 or later; {} is a {} {} ({})", p.name,
                            p.vendor, p.kind, p.arch);
    if (nvidia) {
      f.relevant = true;
      f.reason = fmt::format("no tileforge backend serves {} ({} {}, {}) yet",
                             p.display_name.empty() ? p.name : p.display_name, p.vendor, p.kind, p.arch);
      f.needed = fmt::format(
          "a CUDA family for {} (the sm80 family needs cp.async and mma.sync.m16n8k16 of sm_80), or a Triton backend",
          p.arch);
    }
    return f;
  }

  plan::SupportGap supports(const Problem& p) const override {
    const Precision& pr = p.precision;
    if (pr.input != DType::f16 && pr.input != DType::bf16) {
      return {fmt::format("the sm80 family takes f16 or bf16 inputs (mma.sync.m16n8k16), not {}", to_string(pr.input)),
              "a TF32 (mma.sync.m16n8k8) or SIMT f32 family for NVIDIA GPUs"};
    }
    if (pr.accum != DType::f32) {
      return {"the sm80 family accumulates in f32, and the planner never changes the precision policy",
              "an f16-accumulator variant of the sm80 family (mma.sync with f16 accumulators)"};
    }
    // The kernel indexes with 32-bit ints and puts one batch entry per grid row (sm80/sm80_kernel.cpp).
    if (p.m > INT32_MAX || p.n > INT32_MAX || p.k > INT32_MAX) {
      return {"the sm80 family needs M, N and K to fit a 32-bit int", "64-bit indexing in the sm80 kernel"};
    }
    if (p.batch > 65535) {
      return {"the sm80 family runs at most 65535 batch entries (one grid row each)", "a batch loop in the sm80 launch"};
    }
    return {};
  }

  plan::FamilySpace candidates(const Problem& q, const hw::HwProfile& profile, int) const override {
    plan::FamilySpace f =
        plan::full_product(sm80_space(q, profile), sm80_heuristic(q, profile), "the sm80 heuristic",
                           "the sm80 heuristic: the largest tile that still gives every SM a block, BLOCK_K 32, as "
                           "many stages (up to 4) as shared memory holds, GROUP_M 8, the widest legal vector");
    // The tile first (sm80_cost_bound needs it), then what the occupancy reads, GROUP_M (the L2 simulation's) last.
    f.search_order = {"BLOCK_M",  "BLOCK_N", "BLOCK_K",   "WARPS_M",   "WARPS_N",
                      "STAGES",   "COPY_AB", "VEC_BYTES", "FRAG_PIPE", "GROUP_M"};
    // sm80_cost_bound prices nothing of a tile until its three sides are set, and the warps only as a pair.
    f.bound_skips = {"BLOCK_M", "BLOCK_N", "WARPS_M"};
    // SPLIT_K and STREAM_K (where declared) before everything: they decide the problem the bound prices
    // (sm80_slice_problem) and the work per SM.
    if (f.space.find("STREAM_K")) f.search_order.insert(f.search_order.begin(), "STREAM_K");
    if (f.space.find("SPLIT_K")) f.search_order.insert(f.search_order.begin(), "SPLIT_K");
    return f;
  }

  double cost_bound(const Problem& problem, const hw::HwProfile& profile, const Config& partial, int,
                    plan::CostScratch*, double) const override {
    return sm80_cost_bound(problem, profile, partial);
  }

  std::unique_ptr<plan::CostScratch> make_scratch() const override { return std::make_unique<Sm80Scratch>(); }

  // COPY_AB's padded copies of A and B, and SPLIT_K's or STREAM_K's counters and partial tiles.
  uint64_t workspace_bytes(const Problem& problem, const hw::HwProfile& profile, const Config& config,
                           int) const override {
    const int64_t workers = sm80_stream_k(config) ? sm80_stream_k_workers(config, profile) : 0;
    return detail::copy_bytes(problem.normalized(), detail::copy_which(config)) +
           uint64_t(sm80_workspace(problem, config, workers).workspace_bytes);
  }

  plan::Cost cost(const Problem& problem, const hw::HwProfile& profile, const Config& config, int,
                  plan::CostScratch* scratch) const override {
    auto* s = dynamic_cast<Sm80Scratch*>(scratch);
    return sm80_cost(problem, profile, config, s ? &s->dram : nullptr);
  }

  std::string violation_detail(std::string_view t, const Config& c, const hw::HwProfile& profile) const override {
    auto has = [&](std::string_view w) { return t.find(w) != std::string_view::npos; };
    if (has("shared memory")) {
      if (profile.smem_per_block_bytes <= 0)
        return fmt::format("needs {} B of shared memory per block; {} records no smem_per_block_bytes",
                           sm80_smem_bytes(c), profile.name);
      return fmt::format("needs {} B > {} B of shared memory per block on {}", sm80_smem_bytes(c),
                         profile.smem_per_block_bytes, profile.name);
    }
    if (has("registers") && has("per thread")) {
      return fmt::format("needs an estimated {} registers per thread > 255", sm80_register_estimate(c, profile.arch));
    }
    if (has("registers") && has("per SM")) {
      const int64_t needs = int64_t(sm80_register_estimate(c, profile.arch)) * sm80_threads(c);
      if (profile.registers_per_core <= 0)
        return fmt::format("needs an estimated {} registers per block; {} records no registers_per_core", needs,
                           profile.name);
      return fmt::format("needs an estimated {} registers x {} threads = {} > {} registers per SM on {}",
                         sm80_register_estimate(c, profile.arch), sm80_threads(c), needs, profile.registers_per_core,
                         profile.name);
    }
    if (has("32 * WARPS_M * WARPS_N")) return fmt::format("needs {} threads > 512 per block", sm80_threads(c));
    return KernelFamily::violation_detail(t, c, profile);
  }

  void explain(plan::Plan& plan) const override { sm80_explain(plan); }
};

const plan::FamilyRegistration kRegistration{std::make_unique<Sm80Family>()};

}  // namespace
}  // namespace tileforge::cuda

// The sm90 family as a plug-in: which chips and problems it serves, the space the planner tries, its cost model,
// decision log and ahead-of-time compile, registered once. The cuda backend generates, compiles and launches it.
#include <climits>
#include <cstdint>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include "backends/cuda/common/operand_copy.hpp"
#include "backends/cuda/cuda_jit_family.hpp"
#include "backends/cuda/sm90/sm90_cost_model.hpp"
#include "backends/cuda/sm90/sm90_decisions.hpp"
#include "backends/cuda/sm90/sm90_family.hpp"
#include "plan/kernel_family.hpp"

namespace tileforge::cuda {
namespace {

struct Sm90Scratch : plan::CostScratch {
  Sm90CostCache cache;
};

// The instructions the family's kernels use, as chip records name them in "features".
constexpr const char* kNeeded[] = {"wgmma", "tma", "setmaxnreg"};

class Sm90Family final : public CudaJitFamily {
 public:
  std::string_view name() const override { return "sm90"; }
  int version() const override { return kSm90Version; }
  // Above sm80 (100): where a chip has wgmma, this family runs it.
  int preference() const override { return 200; }

  plan::FamilyFit fit(const hw::HwProfile& p) const override {
    const bool nvidia = p.kind == "gpu" && p.vendor == "nvidia";
    std::string missing;
    for (const char* f : kNeeded) {
      if (!p.has(f)) missing += (missing.empty() ? "" : ", ") + std::string(f);
    }
    if (nvidia && missing.empty()) {
      return plan::FamilyFit::yes(fmt::format(
          "NVIDIA {}: TMA, wgmma and setmaxnreg (the chip record's features) run the sm90 family: warp-specialized, "
          "persistent, wgmma with f32 accumulators (f16 ones under the opt-in policy){}",
          p.arch, p.has("cluster") ? ", clusters with TMA multicast" : ""));
    }
    plan::FamilyFit f;
    f.refusal = nvidia ? fmt::format("family sm90 needs wgmma, TMA and setmaxnreg; the chip record {} ({}) lacks {}",
                                     p.name, p.arch, missing)
                       : fmt::format("family sm90 plans for NVIDIA GPUs with wgmma and TMA; {} is a {} {} ({})", p.name,
                                     p.vendor, p.kind, p.arch);
    // Not `relevant`: an NVIDIA chip without wgmma is the sm80 family's to explain.
    return f;
  }

  Support runs_on(const Device& device) const override {
#if defined(TILEFORGE_HAVE_CUDA_TOOLKIT)
    if (device.kind != "cuda") return Support::yes();
    auto arch = target_arch(device);
    if (!arch) return Support::no(arch.status().message());
    if (*arch != "sm_90a") {
      return Support::no(fmt::format("the sm90 family's kernels are built for sm_90a (wgmma, setmaxnreg); this GPU "
                                     "compiles for {}",
                                     *arch));
    }
    return Support::yes();
#else
    if (device.kind == "cuda") return Support::no("this build has no CUDA toolkit");
    return Support::yes();
#endif
  }

  plan::SupportGap supports(const Problem& problem) const override {
    const Problem p = problem.normalized();
    const Precision& pr = p.precision;
    if (pr.input != DType::f16 && pr.input != DType::bf16) {
      return {fmt::format("the sm90 family takes f16 or bf16 inputs (wgmma.m64nNk16), not {}", to_string(pr.input)),
              "a TF32 wgmma (m64nNk8) variant of the sm90 family for f32 inputs"};
    }
    if (pr.accum != DType::f32 && !(pr.accum == DType::f16 && pr.input == DType::f16)) {
      return {fmt::format("the sm90 family accumulates in f32, or in f16 with f16 inputs, not in {} with {} inputs",
                          to_string(pr.accum), to_string(pr.input)),
              "another accumulator type in the sm90 kernel"};
    }
    if (p.m > INT32_MAX || p.n > INT32_MAX || p.k > INT32_MAX) {
      return {"the sm90 family needs M, N and K to fit a 32-bit int", "64-bit tile coordinates in the sm90 kernel"};
    }
    if (p.k == 0 || p.alpha == 0.0) {
      return {"the sm90 kernel needs K >= 1 and alpha != 0 (C = beta C, which reads neither A nor B, is left to the "
              "sm80 family)",
              "a C = beta C path in the sm90 kernel"};
    }
    if (p.batch > 1) {
      return {fmt::format("the sm90 kernel runs one matrix per launch, not a batch of {}", p.batch),
              "a batch coordinate in the sm90 tile scheduler (3-D tensor maps)"};
    }
    // Leading dimensions TMA cannot take are the space's (COPY_AB), an ldc TMA cannot store the epilogue's (its own
    // stores, staged or direct).
    return {};
  }

  plan::FamilySpace candidates(const Problem& q, const hw::HwProfile& profile, int) const override {
    ParamSpace space = sm90_space(q, profile, sm90_space_options());
    Config pick = sm90_heuristic(q, profile, space);
    plan::FamilySpace f =
        plan::full_product(std::move(space), std::move(pick), "the sm90 heuristic",
                           "the sm90 heuristic: the tile (128x256 with two consumer warpgroups down to 64x64 "
                           "with one) and SPLIT_K (1 to 16) with the least work-units-per-SM x k-blocks per unit "
                           "x area / measured efficiency, as many stages as fit (up to 8), the TMA-store epilogue "
                           "with stmatrix, GROUP_M 8, no cluster");
    // The tile and cluster first (sm90_cost_bound needs them), then the schedule, then what scales terms of it;
    // GROUP_M last, since the bound simulates the L2 for each raster it meets once GROUP_M is set.
    f.search_order = {"BLOCK_K",  "BLOCK_M", "BLOCK_N", "CLUSTER_M", "CLUSTER_N", "SPLIT_K",  "STREAM_K",
                      "CONSUMERS", "COPY_AB", "STAGES",  "EPILOGUE",  "EPI_SPLIT", "STMATRIX", "GROUP_M"};
    // sm90_cost_bound prices nothing of a tile until all five of its parameters are set, and the schedule only
    // with SPLIT_K and STREAM_K both: asking for the bound before those would repeat the parent's.
    f.bound_skips = {"BLOCK_K", "BLOCK_M", "BLOCK_N", "CLUSTER_M", "SPLIT_K"};
    // SWAP_AB (where declared) before everything: it decides which problem the rest of the config is priced on.
    if (f.space.find("SWAP_AB")) {
      f.search_order.insert(f.search_order.begin(), "SWAP_AB");
      f.bound_skips.push_back("SWAP_AB");
    }
    // REDUCE first of all: under the deterministic policy its value 1 is refused at once, the half of the product
    // below it never walked; its price term waits for SPLIT_K and STREAM_K.
    if (f.space.find("REDUCE")) {
      f.search_order.insert(f.search_order.begin(), "REDUCE");
      f.bound_skips.push_back("REDUCE");
    }
    return f;
  }

  std::unique_ptr<plan::CostScratch> make_scratch() const override { return std::make_unique<Sm90Scratch>(); }

  // The split-K / stream-K workspace of the schedule on every SM, and COPY_AB's padded copies.
  uint64_t workspace_bytes(const Problem& problem, const hw::HwProfile& profile, const Config& config,
                           int) const override {
    const Problem q = problem.normalized();
    const int64_t clusters = sm90_resident_clusters(profile, sm90_launch_cluster(config));
    return uint64_t(std::max<int64_t>(0, sm90_schedule(q, config, clusters).workspace_bytes)) +
           detail::copy_bytes(q, detail::copy_which(config));
  }

  plan::Cost cost(const Problem& problem, const hw::HwProfile& profile, const Config& config, int,
                  plan::CostScratch* scratch) const override {
    auto* s = dynamic_cast<Sm90Scratch*>(scratch);
    return sm90_cost(problem, profile, config, s ? &s->cache : nullptr, s ? s->notes : true);
  }

  double cost_bound(const Problem& problem, const hw::HwProfile& profile, const Config& partial, int,
                    plan::CostScratch* scratch, double enough) const override {
    auto* s = dynamic_cast<Sm90Scratch*>(scratch);
    return sm90_cost_bound(problem, profile, partial, s ? &s->cache : nullptr, enough);
  }

  std::string violation_detail(std::string_view t, const Config& c, const hw::HwProfile& profile) const override {
    // The shared-memory limit's own text starts so; other constraints mention shared memory in passing.
    if (t.starts_with("shared memory")) {
      if (profile.smem_per_block_bytes <= 0) {
        return fmt::format("needs {} B of shared memory per block; {} records no smem_per_block_bytes",
                           sm90_smem_bytes(c), profile.name);
      }
      return fmt::format("needs {} B > {} B of shared memory per block on {}", sm90_smem_bytes(c),
                         profile.smem_per_block_bytes, profile.name);
    }
    // The accumulator and register limits by their own texts' starts: the three-consumer rules name both in passing.
    if (t.starts_with("(BLOCK_M / CONSUMERS / 64)")) {
      return fmt::format("needs {} f32 accumulators per consumer thread > {}", sm90_accumulators(c),
                         sm90_max_accumulators(c));
    }
    if (t.starts_with("registers")) {
      if (profile.registers_per_core <= 0) {
        return fmt::format("needs {} registers per CTA; {} records no registers_per_core", sm90_register_budget(c),
                           profile.name);
      }
      return fmt::format("needs {} registers > {} per SM on {}", sm90_register_budget(c), profile.registers_per_core,
                         profile.name);
    }
    return KernelFamily::violation_detail(t, c, profile);
  }

  // REDUCE 1's float atomics add a tile's slices in the order they arrive.
  std::optional<Constraint> determinism(const ParamSpace& space) const override {
    if (!space.find("REDUCE")) return std::nullopt;
    return Constraint{Layer::data_scheduling,
                      "REDUCE == 0 (deterministic results, the default: REDUCE 1 sums a tile's slices by float atomics "
                      "in the order they arrive; --nondeterministic or Options::deterministic = false allows it)",
                      [](const Config& c) { return c.get("REDUCE").value_or(0) == 0; },
                      {"REDUCE"}};
  }

  void explain(plan::Plan& plan) const override { sm90_explain(plan); }
};

const plan::FamilyRegistration kRegistration{std::make_unique<Sm90Family>()};

}  // namespace
}  // namespace tileforge::cuda

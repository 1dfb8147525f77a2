// The sm80_skinny family as a plug-in with code of its own: which chips and problems it serves (NVIDIA GPUs from
// sm_80 on; M up to 16, RR), the space the planner tries, its cost model and decision log, and its prepare / run /
// ahead-of-time compile (the cuda backend hands it the configs named sm80_skinny).
#include <algorithm>
#include <cstdint>
#include <mutex>

#include <fmt/format.h>

#include "backends/cuda/cuda_jit_family.hpp"
#include "backends/cuda/sm80_skinny/sm80_skinny_family.hpp"
#include "backends/cuda/sm90/sm90_family.hpp"
#include "plan/explain_helpers.hpp"
#include "plan/format.hpp"
#include "plan/kernel_family.hpp"
#include "plan/planner.hpp"

#if defined(TILEFORGE_HAVE_CUDA_TOOLKIT)
#include "backends/cuda/common/stream_workspace.hpp"
#include "backends/cuda/sm80/sm80_family.hpp"
#include "hw/cuda_driver.hpp"
#endif

namespace tileforge::cuda {
namespace {

#if defined(TILEFORGE_HAVE_CUDA_TOOLKIT)
// Mirrors tf::skinny::Params in kernels/sm80_skinny/gemm.cuh field for field.
struct SkinnyParams {
  const void* a;
  const void* b;
  void* c;
  int m, n, k;
  long long lda, ldb, ldc;
  float alpha, beta;
  int k_per_split;
  int* counters;
  float* partials;
};

class SkinnyKernel final : public Kernel {
 public:
  SkinnyKernel(Config config, Device device, jit::LoadedKernel loaded, SkinnySource source)
      : Kernel(std::move(config)), device_(std::move(device)), loaded_(std::move(loaded)), source_(std::move(source)) {}

  std::size_t workspace_bytes(const Problem& p) const override {
    return std::size_t(skinny_grid(p, config()).workspace_bytes);
  }

  Status run(const Problem& p, const GemmArgs& args) const {
    auto ctx = activate(device_.ordinal);
    if (!ctx) return ctx.status();
    if (Status s = check_device_pointer(args.a, "A"); !s) return s;
    if (Status s = check_device_pointer(args.b, "B"); !s) return s;
    if (Status s = check_device_pointer(args.c, "C"); !s) return s;
    // Every copy is a whole 16-byte chunk of A or B.
    if (reinterpret_cast<uintptr_t>(args.a) % 16 != 0 || reinterpret_cast<uintptr_t>(args.b) % 16 != 0 ||
        reinterpret_cast<uintptr_t>(args.c) % size_of(p.precision.output) != 0) {
      return run_fallback(p, args, fmt::format("A or B is not 16-byte aligned (or C not aligned to its element) for {}",
                                               config().describe()));
    }
    const SkinnyGrid g = skinny_grid(p, config());
    SkinnyParams params{args.a, args.b, args.c, int(p.m), int(p.n), int(p.k), p.lda, p.ldb, p.ldc,
                        float(p.alpha), float(p.beta), int(g.k_per_split), nullptr, nullptr};
    // Held until the launch is issued: the stream's workspace is shared with other kernels.
    Expected<WorkspaceLease> lease = WorkspaceLease{};
    if (g.workspace_bytes > 0) {
      lease = workspaces_.get(args, g.workspace_bytes, g.counter_bytes, config().describe());
      if (!lease) return lease.status();
      params.counters = static_cast<int*>(lease->counters);
      params.partials = static_cast<float*>(lease->partials);
    }
    void* kernel_args[] = {&params};
    LaunchDims dims;
    dims.grid[0] = unsigned(g.strips);
    dims.grid[1] = unsigned(g.split_k);
    dims.block[0] = unsigned(source_.threads);
    dims.dynamic_smem_bytes = unsigned(source_.smem_bytes);
    dims.stream = static_cast<CUstream>(args.stream);
    return launch(loaded_.function, dims, kernel_args, source_.entry);
  }

 private:
  // The sm80 family's heuristic config runs what this kernel cannot (misaligned pointers), prepared on first use.
  Status run_fallback(const Problem& p, const GemmArgs& args, const std::string& why) const {
    Backend* cuda = find_backend("cuda");
    if (!cuda) return unsupported(why + ", and no cuda backend is built to run the sm80 family instead");
    std::lock_guard lock(mutex_);
    if (!fallback_) {
      const Config c = sm80_heuristic(p, device_.profile);
      auto prepared = cuda->prepare(p, c, device_);
      if (!prepared) {
        return Status(prepared.status().code(), fmt::format("{}, and the sm80 fallback could not be prepared: {}", why,
                                                            prepared.status().message()));
      }
      fallback_ = std::move(*prepared);
      std::fprintf(stderr, "tileforge: warning: %s: running the sm80 family's %s instead\n", why.c_str(),
                   fallback_->config().describe().c_str());
    }
    return cuda->run(*fallback_, p, args);
  }

  Device device_;
  jit::LoadedKernel loaded_;
  SkinnySource source_;
  StreamWorkspaces workspaces_;
  mutable std::mutex mutex_;
  mutable std::unique_ptr<Kernel> fallback_;
};
#endif

void skinny_explain(plan::Plan& plan) {
  using namespace plan;
  const Candidate& best = plan.ranked.front();
  const Config& c = best.config;
  const Cost& cost = best.cost;
  const Problem& q = plan.problem;
  const SkinnyGrid g = skinny_grid(q, c);
  const std::string L0(kLayers[0]), L1(kLayers[1]), L2(kLayers[2]);
  plan.log.add(L0, "mma.sync m16n8k16 on one 16-row tile, 16-byte cp.async into each warp's own ring",
               fmt::format("M = {} needs one m16 tile: the problem reads {} of B once and does {:.1f} FLOP per byte, "
                           "so HBM bounds it, not the tensor cores; each warp streams its own steps without a CTA "
                           "barrier",
                           q.m, fmtx::bytes(double(q.k) * double(q.n) * double(size_of(q.precision.input))),
                           2.0 * double(q.m) * double(q.n) * double(q.k) / std::max(1.0, cost.dram_bytes)),
               fmt::format("HBM term {}, latency term {} (bound: {})", fmtx::time(cost.levels.empty() ? 0 : cost.levels[0].seconds),
                           fmtx::time(cost.latency_s), cost.bound));
  plan.log.add(L0, fmt::format("WARPS={}", c.at("WARPS")),
               fmt::format("{} CTAs of {} threads, {} per SM ({}), {} warps reading at once", g.strips * g.split_k,
                           skinny_threads(c), cost.occupancy, cost.occupancy_limit,
                           std::min<int64_t>(g.strips * g.split_k, int64_t(cost.waves.slots)) * c.at("WARPS")),
               neighbours_of(plan, {"WARPS"}));
  plan.log.add(L1, fmt::format("SPLIT_K={}", g.split_k),
               g.split_k > 1 ? fmt::format("{} strips of 64 columns x {} slices of {} rows: every SM gets work; the "
                                           "slices' f32 sums are added in slice order by the CTA that ends last "
                                           "(deterministic), {} of workspace",
                                           g.strips, g.split_k, g.k_per_split, fmtx::bytes(double(g.workspace_bytes)))
                             : fmt::format("{} strips of 64 columns over the whole K: enough CTAs without slices",
                                           g.strips),
               neighbours_of(plan, {"SPLIT_K"}));
  plan.log.add(L2, fmt::format("STAGES={}", c.at("STAGES")),
               fmt::format("{} steps of 16 rows ahead per warp: {} of B in flight per resident warp", c.at("STAGES") - 1,
                           fmtx::bytes(double((c.at("STAGES") - 1) * kSkinnyStepK * kSkinnyStripN *
                                              int64_t(size_of(q.precision.input))))),
               neighbours_of(plan, {"STAGES"}));
}

class SkinnyFamily final : public CudaJitFamily {
 public:
  std::string_view name() const override { return "sm80_skinny"; }
  int version() const override { return kSkinnyVersion; }
  // Above sm90 (200): it takes only the few-row problems where it was measured faster.
  int preference() const override { return 300; }
  bool specialist() const override { return true; }

  plan::FamilyFit fit(const hw::HwProfile& p) const override {
    const bool nvidia = p.kind == "gpu" && p.vendor == "nvidia";
    if (nvidia && p.nvidia_sm() >= 80) {
      return plan::FamilyFit::yes(fmt::format("NVIDIA {}: cp.async and mma.sync (sm_80 and later) run the "
                                              "sm80_skinny family for GEMMs of up to {} rows",
                                              p.arch, kSkinnyMaxM));
    }
    plan::FamilyFit f;
    f.refusal = fmt::format("family sm80_skinny plans for NVIDIA GPUs of sm_80 or later; {} is a {} {} ({})", p.name,
                            p.vendor, p.kind, p.arch);
    return f;
  }

  plan::SupportGap supports(const Problem& problem) const override {
    std::string why = skinny_refusal(problem);
    if (why.empty()) return {};
    return {why, "the sm90 or sm80 family"};
  }

  std::string yields(const hw::HwProfile& p, const Problem& problem) const override {
    const int64_t m = problem.normalized().m;
    if (p.nvidia_sm() < 90 || m <= kSkinnyLeadMOnWgmma) return {};
    // Without the transposed run (beta != 0, an f32 C, TILEFORGE_SM90_SWAP_AB=0) sm90 rounds M up to 64 rows.
    if (!sm90_transposes(problem)) return {};
    return fmt::format("on {} the sm90 family's transposed run (M along the wgmma's N) was measured faster from {} "
                       "rows up; M = {}",
                       p.arch, kSkinnyLeadMOnWgmma + 1, m);
  }

  plan::FamilySpace candidates(const Problem& q, const hw::HwProfile& profile, int) const override {
    return plan::full_product(skinny_space(q, profile), skinny_heuristic(q, profile), "the sm80_skinny heuristic",
                              "the sm80_skinny heuristic: 8 warps, 4 stages, the least SPLIT_K (up to 8) that gives "
                              "every SM a CTA");
  }

  plan::Cost cost(const Problem& problem, const hw::HwProfile& profile, const Config& config, int,
                  plan::CostScratch*) const override {
    return skinny_cost(problem, profile, config);
  }

  // The split-K workspace.
  uint64_t workspace_bytes(const Problem& problem, const hw::HwProfile&, const Config& config, int) const override {
    return uint64_t(std::max<int64_t>(0, skinny_grid(problem.normalized(), config).workspace_bytes));
  }

  void explain(plan::Plan& plan) const override { skinny_explain(plan); }

  Expected<std::unique_ptr<Kernel>> prepare(const Problem& problem, const Config& config,
                                            const Device& device) const override {
#if defined(TILEFORGE_HAVE_CUDA_TOOLKIT)
    const Problem p = problem.normalized();
    if (Status s = skinny_space(p, device.profile).check(config); !s) return s;
    const SkinnySource src = skinny_source(p, config);
    auto loaded = load_generated(src.entry, src.source, device.ordinal, config, src.threads);
    if (!loaded) return loaded.status();
    return std::unique_ptr<Kernel>(std::make_unique<SkinnyKernel>(config, device, std::move(*loaded), src));
#else
    (void)problem, (void)config, (void)device;
    return unsupported("this build has no CUDA toolkit");
#endif
  }

  Status run(const Kernel& kernel, const Problem& problem, const GemmArgs& args) const override {
#if defined(TILEFORGE_HAVE_CUDA_TOOLKIT)
    const auto* k = dynamic_cast<const SkinnyKernel*>(&kernel);
    if (!k) return invalid_argument("kernel was not prepared by the sm80_skinny family");
    return k->run(problem.normalized(), args);
#else
    (void)kernel, (void)problem, (void)args;
    return unsupported("this build has no CUDA toolkit");
#endif
  }

  Expected<plan::AheadCompile> compile_ahead(const Problem& problem, const Config& config, std::string_view arch,
                                             jit::KernelCache* cache) const override {
#if defined(TILEFORGE_HAVE_CUDA_TOOLKIT)
    const Problem p = problem.normalized();
    if (Status s = p.validate(); !s) return s;
    const SkinnySource src = skinny_source(p, config);
    auto r = compile_generated(src.entry, src.source, std::string(arch), cache);
    if (!r) return r.status();
    return plan::AheadCompile{r->cache_hit, r->registers};
#else
    (void)problem, (void)config, (void)arch, (void)cache;
    return unsupported("this build has no CUDA toolkit: NVRTC compiles are not available");
#endif
  }
};

const plan::FamilyRegistration kRegistration{std::make_unique<SkinnyFamily>()};

}  // namespace
}  // namespace tileforge::cuda

// The triton family as a plug-in: which chips and problems it serves (NVIDIA sm_80 on and AMD CDNA for planning;
// NVIDIA GPUs to run), its space, cost model and decision log, and its prepare / run / ahead-of-time compile: the
// cubin Triton made is loaded and launched through the driver API on the caller's buffers, without Python.
#include <cstdint>
#include <cstdio>
#include <map>
#include <mutex>
#include <vector>

#include <fmt/format.h>

#include "backends/cuda/triton/triton_compiler.hpp"
#include "backends/cuda/triton/triton_family.hpp"
#include "plan/explain_helpers.hpp"
#include "plan/format.hpp"
#include "plan/kernel_family.hpp"
#include "plan/planner.hpp"

#if defined(TILEFORGE_HAVE_CUDA_TOOLKIT)
#include "hw/cuda_driver.hpp"
#include "jit/kernel_cache.hpp"
#endif

namespace tileforge::cuda {
namespace {

#if defined(TILEFORGE_HAVE_CUDA_TOOLKIT)
// Triton's cubins loaded into a device, by cache key and ordinal; kept for the life of the process like the NVRTC
// kernels' modules.
Expected<CUfunction> load_function(const triton::Binary& b, int ordinal) {
  static std::mutex mutex;
  static std::map<std::pair<std::string, int>, CUmodule> modules;
  auto ctx = activate(ordinal);
  if (!ctx) return ctx.status();
  auto d = driver();
  if (!d) return d.status();
  std::lock_guard lock(mutex);
  CUmodule& m = modules[{b.key, ordinal}];
  if (!m) {
    if (Status s = check((*d)->cuModuleLoadData(&m, b.data.data()), fmt::format("cuModuleLoadData(triton {})", b.name));
        !s) {
      m = nullptr;
      return s;
    }
  }
  CUfunction f = nullptr;
  if (Status s = check((*d)->cuModuleGetFunction(&f, m, b.name.c_str()), fmt::format("cuModuleGetFunction({})", b.name));
      !s) {
    return s;
  }
  return f;
}

class TritonKernel final : public Kernel {
 public:
  TritonKernel(Config config, Device device, triton::Binary binary, CUfunction function, triton::Request request)
      : Kernel(std::move(config)), device_(std::move(device)), binary_(std::move(binary)), function_(function),
        request_(std::move(request)) {}

  Status run(const Problem& p, const GemmArgs& args) const {
    auto ctx = activate(device_.ordinal);
    if (!ctx) return ctx.status();
    if (Status s = check_device_pointer(args.a, "A"); !s) return s;
    if (Status s = check_device_pointer(args.b, "B"); !s) return s;
    if (Status s = check_device_pointer(args.c, "C"); !s) return s;
    const bool aligned = reinterpret_cast<uintptr_t>(args.a) % 16 == 0 &&
                         reinterpret_cast<uintptr_t>(args.b) % 16 == 0 && reinterpret_cast<uintptr_t>(args.c) % 16 == 0;
    if (!aligned && !request_.divisible.empty() && request_.divisible.front().first == "a_ptr") {
      return run_unaligned(p, args);
    }
    // The arguments in the signature's order, then Triton's two scratch pointers (unused: both sizes are 0).
    const void* a = args.a;
    const void* b = args.b;
    void* c = args.c;
    int32_t m = int32_t(p.m), n = int32_t(p.n), k = int32_t(p.k);
    int32_t lda = int32_t(p.lda), ldb = int32_t(p.ldb), ldc = int32_t(p.ldc);
    int64_t sa = p.batch > 1 ? p.stride_a : 0, sb = p.batch > 1 ? p.stride_b : 0, sc = p.batch > 1 ? p.stride_c : 0;
    float alpha = float(p.alpha), beta = float(p.beta);
    void* global_scratch = nullptr;
    void* profile_scratch = nullptr;
    void* params[] = {&a,  &b,  &c,  &m,     &n,    &k,    &lda,           &ldb,
                      &ldc, &sa, &sb, &sc, &alpha, &beta, &global_scratch, &profile_scratch};
    const int64_t bm = config().at("BLOCK_M"), bn = config().at("BLOCK_N");
    LaunchDims dims;
    dims.grid[0] = unsigned((p.m + bm - 1) / bm * ((p.n + bn - 1) / bn));
    dims.grid[1] = unsigned(p.batch);
    dims.block[0] = unsigned(binary_.num_warps * 32);
    dims.dynamic_smem_bytes = unsigned(binary_.shared_bytes);
    dims.stream = static_cast<CUstream>(args.stream);
    return launch(function_, dims, params, fmt::format("triton {}", config().describe()));
  }

 private:
  // A, B or C off 16 bytes: the same config compiled without the pointers' divisibility, on first use.
  Status run_unaligned(const Problem& p, const GemmArgs& args) const {
    std::lock_guard lock(mutex_);
    if (!unaligned_) {
      const triton::Request r = triton_request(p, config(), triton_target(device_.profile), false);
      auto b = triton::compile(r);
      if (!b) return b.status();
      auto f = load_function(*b, device_.ordinal);
      if (!f) return f.status();
      unaligned_ = std::make_unique<TritonKernel>(config(), device_, std::move(*b), *f, r);
      std::fprintf(stderr, "tileforge: note: triton %s: A, B or C is not 16-byte aligned; running the same config "
                   "compiled without that assumption\n", config().describe().c_str());
    }
    return unaligned_->run(p, args);
  }

  Device device_;
  triton::Binary binary_;
  CUfunction function_ = nullptr;
  triton::Request request_;
  mutable std::mutex mutex_;
  mutable std::unique_ptr<TritonKernel> unaligned_;
};
#endif

void triton_explain(plan::Plan& plan) {
  using namespace plan;
  const Candidate& best = plan.ranked.front();
  const Config& c = best.config;
  const Cost& cost = best.cost;
  const Problem& q = plan.problem;
  const TritonTarget t = triton_target(plan.profile);
  const TritonResources r = triton_resources(q, t, c);
  const std::string L0(kLayers[0]), L1(kLayers[1]), L2(kLayers[2]), L3(kLayers[3]);
  plan.log.add(L0, fmt::format("BLOCK_M={} BLOCK_N={} WARPS={}", c.at("BLOCK_M"), c.at("BLOCK_N"), c.at("WARPS")),
               fmt::format("{} programs of {} threads on {} {}s, {} per SM ({}); Triton lowers the dot to {} on {}",
                           cost.waves.tiles, c.at("WARPS") * t.warp_size, cost.waves.cores,
                           t.backend == "hip" ? "CU" : "SM", cost.occupancy, cost.occupancy_limit,
                           r.wgmma ? "warpgroup MMA (wgmma)" : (t.backend == "hip" ? "MFMA" : "mma.sync"),
                           to_string(t)),
               neighbours_of(plan, {"BLOCK_M", "BLOCK_N", "WARPS"}));
  plan.log.add(L1, fmt::format("GROUP_M={}", c.at("GROUP_M")),
               fmt::format("{} tile rows walk their columns together: {} of A and B from DRAM", c.at("GROUP_M"),
                           fmtx::bytes(cost.dram_bytes)),
               neighbours_of(plan, {"GROUP_M"}));
  plan.log.add(L2, fmt::format("BLOCK_K={} STAGES={}", c.at("BLOCK_K"), c.at("STAGES")),
               fmt::format("{} copies of a {}-deep k-step in shared memory ({}); bound: {}", r.buffers,
                           c.at("BLOCK_K"), fmtx::bytes(double(r.smem_bytes)), cost.bound),
               neighbours_of(plan, {"BLOCK_K", "STAGES"}));
  plan.log.add(L3, "alignment hints and specialisation",
               fmt::format("{}; K {} a multiple of BLOCK_K (the last k-step {}masked)",
                           triton_operands_aligned(q) ? "leading dimensions on 16 bytes: divisibility hints, 16-byte "
                                                        "loads and async copies"
                                                      : "a leading dimension off 16 bytes: no divisibility hint, "
                                                        "narrow loads",
                           q.k % c.at("BLOCK_K") == 0 ? "is" : "is not", q.k % c.at("BLOCK_K") == 0 ? "not " : ""),
               "");
}

class TritonFamily final : public plan::KernelFamily {
 public:
  std::string_view name() const override { return "triton"; }
  int version() const override { return kTritonVersion; }
  std::string_view backend() const override { return "cuda"; }
  // Below the CUDA C++ families on NVIDIA chips (they are faster there): chosen where no other family plans for
  // the chip (AMD), or when asked for by name.
  int preference() const override { return 50; }
  bool compiled_at_run_time() const override { return true; }

  plan::FamilyFit fit(const hw::HwProfile& p) const override {
    const TritonTarget t = triton_target(p);
    if (!t.backend.empty()) {
      return plan::FamilyFit::yes(fmt::format("{} {}: Triton compiles tl.dot for {}", p.vendor == "amd" ? "AMD" : "NVIDIA",
                                              p.arch, to_string(t)));
    }
    plan::FamilyFit f;
    f.relevant = p.kind == "gpu";
    f.reason = fmt::format("Triton has no backend for {} ({} {})", p.name, p.vendor, p.arch);
    f.refusal = fmt::format("family triton plans for NVIDIA GPUs of sm_80 or later and AMD CDNA GPUs (gfx90a, gfx942, "
                            "gfx950); {} is a {} {} ({})",
                            p.name, p.vendor, p.kind, p.arch);
    f.needed = "a Triton backend for the chip";
    return f;
  }

  Support runs_on(const Device& device) const override {
    const TritonTarget t = triton_target(device.profile);
    if (t.backend != "cuda") return Support::no("tileforge launches Triton kernels on NVIDIA GPUs only");
#if defined(TILEFORGE_HAVE_CUDA_TOOLKIT)
    auto tc = triton::toolchain();
    if (!tc) return Support::no(tc.status().message());
    if (!tc->has("nvidia")) return Support::no(fmt::format("Triton {} has no NVIDIA backend", tc->version));
    return Support::yes();
#else
    return Support::no("this build has no CUDA toolkit: Triton kernels are launched through the CUDA driver");
#endif
  }

  plan::SupportGap supports(const Problem& problem) const override {
    std::string why = triton_refusal(problem);
    if (why.empty()) return {};
    return {why, "the sm90 or sm80 family"};
  }

  plan::FamilySpace candidates(const Problem& q, const hw::HwProfile& profile, int) const override {
    return plan::full_product(triton_space(q, profile), triton_heuristic(q, profile), "the triton heuristic",
                              "the Triton tutorial's pick: 128x128x64 tiles, 8 warps, 3 stages, group of 8, smaller "
                              "tiles where they give more SMs a program");
  }

  plan::Cost cost(const Problem& problem, const hw::HwProfile& profile, const Config& config, int,
                  plan::CostScratch*) const override {
    return triton_cost(problem, profile, config);
  }

  void explain(plan::Plan& plan) const override { triton_explain(plan); }

  std::vector<plan::ConfigPeer> config_peers(const Problem& problem, const hw::HwProfile& profile) const override {
    if (!triton_refusal(problem).empty() || triton_target(profile).backend.empty()) return {};
    plan::ConfigPeer peer;
    peer.name = "triton-autotune";
    peer.what = "Triton's autotune over its tutorial's 17 configs, each timed, the fastest kept";
    const std::vector<Config> list = triton_tutorial_configs();
    peer.listed = int(list.size());
    const ParamSpace limits = triton_limits(problem.normalized(), profile);
    for (const Config& c : list) {
      if (limits.admits(c)) peer.configs.push_back(c);
    }
    return {peer};
  }

  Expected<std::string> compile_target(const Device& device) const override {
    const TritonTarget t = triton_target(device.profile);
    if (t.backend.empty()) return unsupported(fmt::format("Triton has no backend for {}", device.profile.arch));
    return to_string(t);
  }

  Expected<plan::AheadCompile> compile_ahead(const Problem& problem, const Config& config, std::string_view arch,
                                             jit::KernelCache* cache) const override {
#if defined(TILEFORGE_HAVE_CUDA_TOOLKIT)
    const Problem p = problem.normalized();
    if (Status s = p.validate(); !s) return s;
    auto t = parse_target(arch);
    if (!t) return t.status();
    auto b = triton::compile(triton_request(p, config, *t), cache ? cache->dir() : std::string());
    if (!b) return b.status();
    return plan::AheadCompile{b->cache_hit, b->registers};
#else
    (void)problem, (void)config, (void)arch, (void)cache;
    return unsupported("this build has no CUDA toolkit: the kernel cache Triton's binaries go to is not built");
#endif
  }

  Expected<std::unique_ptr<Kernel>> prepare(const Problem& problem, const Config& config,
                                            const Device& device) const override {
#if defined(TILEFORGE_HAVE_CUDA_TOOLKIT)
    const Problem p = problem.normalized();
    if (std::string why = triton_refusal(p); !why.empty()) return unsupported(why);
    // The limits only: a tile larger than the problem runs (wastefully), as it does under Triton's own autotune.
    if (Status s = triton_limits(p, device.profile).check(config); !s) return s;
    if (Support s = runs_on(device); !s) return unsupported(s.reason);
    const TritonTarget t = triton_target(device.profile);
    const triton::Request r = triton_request(p, config, t);
    auto b = triton::compile(r);
    if (!b) return b.status();
    if (b->global_scratch_bytes > 0 || b->profile_scratch_bytes > 0) {
      return unsupported(fmt::format("triton {}: the kernel asks for {} bytes of global scratch, which tileforge does "
                                     "not give Triton kernels yet",
                                     config.describe(), b->global_scratch_bytes + b->profile_scratch_bytes));
    }
    if (b->shared_bytes > device.profile.smem_per_block_bytes && device.profile.smem_per_block_bytes > 0) {
      return unsupported(fmt::format("triton {}: Triton allocated {} bytes of shared memory, over the chip's {} per "
                                     "block",
                                     config.describe(), b->shared_bytes, device.profile.smem_per_block_bytes));
    }
    auto f = load_function(*b, device.ordinal);
    if (!f) return f.status();
    return std::unique_ptr<Kernel>(std::make_unique<TritonKernel>(config, device, std::move(*b), *f, r));
#else
    (void)problem, (void)config, (void)device;
    return unsupported("this build has no CUDA toolkit: Triton kernels are launched through the CUDA driver");
#endif
  }

  Status run(const Kernel& kernel, const Problem& problem, const GemmArgs& args) const override {
#if defined(TILEFORGE_HAVE_CUDA_TOOLKIT)
    const auto* k = dynamic_cast<const TritonKernel*>(&kernel);
    if (!k) return invalid_argument("kernel was not prepared by the triton family");
    return k->run(problem.normalized(), args);
#else
    (void)kernel, (void)problem, (void)args;
    return unsupported("this build has no CUDA toolkit");
#endif
  }
};

const plan::FamilyRegistration kRegistration{std::make_unique<TritonFamily>()};

}  // namespace
}  // namespace tileforge::cuda

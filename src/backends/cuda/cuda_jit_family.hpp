// What every CUDA kernel family shares: its instances are generated and compiled at run time by the cuda backend
// (NVRTC into the kernel cache), so the tuner's ahead-of-time compile and its target are the backend's.
#pragma once

#include <string>
#include <string_view>

#include "plan/kernel_family.hpp"

#if defined(TILEFORGE_HAVE_CUDA_TOOLKIT)
#include "backends/cuda/cuda_backend.hpp"
#endif

namespace tileforge::cuda {

class CudaJitFamily : public plan::KernelFamily {
 public:
  std::string_view backend() const override { return "cuda"; }
  bool compiled_at_run_time() const override { return true; }

  Expected<std::string> compile_target(const Device& device) const override {
#if defined(TILEFORGE_HAVE_CUDA_TOOLKIT)
    return target_arch(device);
#else
    return unsupported("this build has no CUDA toolkit: NVRTC compiles are not available");
#endif
  }

  // compile_instance generates the source of the config's own family.
  Expected<plan::AheadCompile> compile_ahead(const Problem& problem, const Config& config, std::string_view arch,
                                             jit::KernelCache* cache) const override {
#if defined(TILEFORGE_HAVE_CUDA_TOOLKIT)
    auto r = compile_instance(problem, config, std::string(arch), cache);
    if (!r) return r.status();
    return plan::AheadCompile{r->cache_hit, r->registers};
#else
    return unsupported("this build has no CUDA toolkit: NVRTC compiles are not available");
#endif
  }
};

}  // namespace tileforge::cuda

// tileforge's own CUDA backend: the sm80 and sm90 families generated per Config, compiled with NVRTC, cached,
// launched. The family that runs a problem is plan::family_for("cuda", ...)'s; TILEFORGE_CUDA_FAMILY=sm80|sm90
// forces one that fits, runs here and takes the problem (to compare the families in one run).
#pragma once

#include <memory>
#include <string>

#include "backends/backend.hpp"

#include "jit/loader.hpp"

namespace tileforge::jit {
class KernelCache;
}

namespace tileforge::cuda {

std::unique_ptr<Backend> make_cuda_backend();

// Compiles (or finds in the kernel cache) and loads the small device utilities: the reference check, the L2
// scrub and the operand copy. `entry` is one of "tf_reference_check_<in>_<out>_<layout>",
// "tf_reference_store_<in>_<out>_<layout>", "tf_reference_compare_<out>", "tf_scrub_l2", "tf_scrub_l2_read",
// "tf_spin", "tf_copy_u16". Used by the GPU bench and the device-side verification.
struct UtilityKernel {
  void* function = nullptr;  // CUfunction
};
Expected<UtilityKernel> utility_kernel(const std::string& entry, int ordinal);

// The NVRTC target for a device: the present GPU's own ("sm_90a" on an H200), or, for planning without one, the
// arch of its NVIDIA profile.
Expected<std::string> target_arch(const Device& device);

// One sm80 or sm90 instance compiled for `arch` into the kernel cache without a device (nothing is loaded): exactly the
// source and options prepare() would compile, so that a later prepare() of the same problem and config on a GPU
// of that arch only loads it. Thread-safe; the tuner runs one per host core. `cache` nullptr = the shared cache
// (the one prepare() reads). A spilling instance is refused as prepare() refuses it.
struct CompiledInstance {
  std::string entry;          // the kernel's extern "C" name
  bool cache_hit = false;     // found in the cache: no NVRTC run
  double compile_seconds = 0; // NVRTC time of this call (0 on a hit)
  int registers = 0;          // per thread, from ptxas
  std::string cache_entry;    // the cache file
};
Expected<CompiledInstance> compile_instance(const Problem& problem, const Config& config, const std::string& arch,
                                            jit::KernelCache* cache = nullptr);

// For families with code of their own (plan::KernelFamily::prepare/run): one generated source compiled with NVRTC
// through the kernel cache, with the same headers and options as the built-in families, and loaded on a GPU;
// refused, as the built-in families' instances are, when it spills or its registers allow fewer than `threads`
// threads per block. (launch() raises the dynamic shared memory limit when a launch needs it.)
Expected<jit::LoadedKernel> load_generated(const std::string& entry, const std::string& source, int ordinal,
                                           const Config& config, int threads);
// The same compile without a device (compile_ahead), refused like prepare() when the instance spills.
Expected<CompiledInstance> compile_generated(const std::string& entry, const std::string& source,
                                             const std::string& arch, jit::KernelCache* cache = nullptr);
// The SM count of a GPU, queried once per ordinal.
Expected<int> sm_count(int ordinal);

}  // namespace tileforge::cuda

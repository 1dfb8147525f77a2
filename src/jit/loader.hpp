// Compiled kernels loaded into a device: an in-process map from cache key to module, and per-kernel timings.
#pragma once

#include <cuda.h>  // types only

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/expected.hpp"
#include "jit/kernel_cache.hpp"

namespace tileforge::jit {

// Where the time of preparing one kernel went, for bench rows and the CLI.
struct JitTiming {
  std::string key;
  bool cache_hit = false;       // the cubin came from the disk cache (no NVRTC run)
  bool module_reused = false;   // the module was already loaded in this process (nothing read or loaded)
  double context_seconds = 0;   // making the device's primary context current (its creation, the first time)
  double lookup_seconds = 0;    // hashing the request and reading the cache entry
  double compile_seconds = 0;   // NVRTC, 0 on a hit
  double load_seconds = 0;      // cuModuleLoadData + cuModuleGetFunction
  double total_seconds = 0;
};
// "compile 0.412 s (cache miss), load 0.003 s" / "cache hit (0.0005 s), load 0.002 s" / "module already loaded",
// with ", context 0.230 s" when creating the device context took a noticeable share.
std::string describe(const JitTiming& timing);

// A kernel function ready to launch on one device, with the compiler's report on it.
struct LoadedKernel {
  CUmodule module = nullptr;           // owned by the process-wide module map; never unloaded
  CUfunction function = nullptr;
  std::string symbol;                  // the mangled or extern "C" name
  int device = 0;                      // ordinal
  FunctionResources resources;         // registers, spills, static smem, from ptxas
  std::vector<std::string> warnings;   // ptxas warnings of the whole compile
  int driver_registers = 0;            // CU_FUNC_ATTRIBUTE_NUM_REGS, as the driver sees it
  int driver_static_smem_bytes = 0;    // CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES
  int driver_local_bytes = 0;          // CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES (stack and spills, per thread)
  int max_threads_per_block = 0;       // CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK
  JitTiming timing;
};

// Compiles `request` through `cache` (KernelCache::shared() when null), loads it into device `ordinal`'s primary
// context (made current on this thread) and returns `kernel`: an extern "C" name or one of the request's name
// expressions. A second call with the same request in this process loads nothing. `key`: the request's cache_key(),
// when the caller keeps it (empty: worked out here, which hashes the source and every header).
Expected<LoadedKernel> load_kernel(const CompileRequest& request, std::string_view kernel, int ordinal = 0,
                                   KernelCache* cache = nullptr, std::string_view key = {});

// The kernel of the module this process loaded under `key` (a LoadedKernel's timing.key) into device `ordinal`, as
// load_kernel gives it a second time (the context made current), without a request; nothing when no module is
// loaded under that key.
Expected<std::optional<LoadedKernel>> find_loaded(std::string_view key, std::string_view kernel, int ordinal = 0);

// Modules currently held by the in-process map (for tests and diagnostics).
std::size_t loaded_module_count();

}  // namespace tileforge::jit

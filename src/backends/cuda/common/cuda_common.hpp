// What the cuda backend's parts share inside the library (cuda_backend.cpp, sm80/sm80_kernel.cpp,
// sm90/sm90_kernel.cpp): the device's properties and NVRTC target, one compile request for every path, and the checks
// and warnings of a loaded instance. Not exported: detail:: is the backend's own.
#pragma once

#include <string>
#include <vector>

#include "backends/backend.hpp"
#include "hw/cuda_device.hpp"
#include "jit/loader.hpp"
#include "jit/nvrtc.hpp"

namespace tileforge::cuda::detail {

// The device's properties, queried once per ordinal (family_for asks on every space() and heuristic() call).
Expected<DeviceProperties> properties_of(int ordinal);

Expected<std::string> arch_of(int ordinal);

// One request for every path that compiles a kernel (prepare, utilities, compile-only), so that a kernel compiled
// ahead of time is found in the cache by the same key when prepare() later asks for it.
jit::CompileRequest request_for(const std::string& name, const std::string& source, const std::string& arch);

// The kernel cache's key of request_for(any name, source, arch) (jit::cache_key; the name is not part of it): the
// headers and options are the same for every source, so the key is worked out once per (arch, source) and process.
std::string kernel_key(const std::string& source, const std::string& arch, const jit::Nvrtc& nvrtc);

Expected<jit::LoadedKernel> compile_and_load(const std::string& name, const std::string& source,
                                             const std::string& entry, int ordinal);

// Lets `function` launch with `bytes` of dynamic shared memory (the driver refuses more than 48 KB without it): set
// before an occupancy query, which reads the function's own limit; `entry` names it in the error.
Status allow_dynamic_smem(CUfunction function, int64_t bytes, const std::string& entry);

// Why a loaded instance must not run: its registers allow fewer threads per block than it launches; "" when not.
std::string threads_refusal(const jit::LoadedKernel& k, int threads, const Config& config);

// Prints `text` as a warning unless `said` already holds it, and remembers it there.
void note_once(std::vector<std::string>& said, std::string text);

}  // namespace tileforge::cuda::detail

// Reads a CUDA device's properties through the run-time-loaded driver and turns them into a HwProfile.
#include "hw/cuda_device.hpp"

#include <fmt/format.h>

#include "hw/cuda_driver.hpp"

namespace tileforge::cuda {

int cuda_device_count() { return device_count(); }

Expected<DeviceProperties> query_device(int ordinal) {
  auto d = driver();
  if (!d) return d.status();
  const DriverApi& api = **d;
  int count = device_count();
  if (ordinal < 0 || ordinal >= count)
    return invalid_argument(fmt::format("cuda:{}: no such CUDA device ({} present)", ordinal, count));
  CUdevice dev = 0;
  if (Status s = check(api.cuDeviceGet(&dev, ordinal), fmt::format("cuDeviceGet({})", ordinal), Code::not_available); !s)
    return s;

  DeviceProperties p;
  p.ordinal = ordinal;
  p.driver_version = api.driver_version;
  char name[256] = {};
  if (Status s = check(api.cuDeviceGetName(name, int(sizeof(name)) - 1, dev), "cuDeviceGetName", Code::not_available); !s)
    return s;
  p.name = name;
  std::size_t total = 0;
  if (api.cuDeviceTotalMem(&total, dev) == CUDA_SUCCESS) p.total_memory_bytes = int64_t(total);

  // A refused attribute leaves its field 0 with a note, rather than failing detection: newer drivers retire
  // attributes (the SM clock is deprecated in CUDA 13) and the profile can do without one.
  auto attr = [&](CUdevice_attribute a, const char* label) -> int {
    int v = 0;
    CUresult r = api.cuDeviceGetAttribute(&v, a, dev);
    if (r != CUDA_SUCCESS) {
      p.notes.push_back(fmt::format("{}: {}", label, error_name(r)));
      return 0;
    }
    return v;
  };
  p.cc_major = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, "compute capability major");
  p.cc_minor = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, "compute capability minor");
  p.sm_count = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "multiprocessor count");
  p.clock_khz = attr(CU_DEVICE_ATTRIBUTE_CLOCK_RATE, "clock rate");
  p.memory_clock_khz = attr(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, "memory clock rate");
  p.memory_bus_bits = attr(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, "memory bus width");
  p.l2_bytes = attr(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, "L2 cache size");
  p.smem_per_sm_bytes = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, "shared memory per SM");
  p.smem_per_block_bytes = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, "shared memory per block");
  p.smem_per_block_optin_bytes = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, "shared memory per block (opt-in)");
  p.smem_reserved_per_block_bytes = attr(CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK, "reserved shared memory per block");
  p.registers_per_sm = attr(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, "registers per SM");
  p.registers_per_block = attr(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, "registers per block");
  p.max_threads_per_sm = attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, "threads per SM");
  p.max_blocks_per_sm = attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR, "blocks per SM");
  p.max_threads_per_block = attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, "threads per block");
  p.warp_size = attr(CU_DEVICE_ATTRIBUTE_WARP_SIZE, "warp size");
  if (p.cc_major == 0) return not_available(fmt::format("cuda:{} ({}): the driver reports no compute capability", ordinal, p.name));
  return p;
}

std::string nvrtc_arch(int cc_major, int cc_minor) {
  // Hopper, Blackwell and later have arch-specific instructions (wgmma, setmaxnreg, tcgen05) that only the
  // 'a' target accepts; a cubin for it runs on exactly that compute capability, which is what a JIT wants.
  bool arch_specific = cc_major >= 9;
  return fmt::format("sm_{}{}{}", cc_major, cc_minor, arch_specific ? "a" : "");
}

std::string builtin_profile_for(std::string_view name, int cc_major, int cc_minor) {
  hw::GpuProperties gpu;
  gpu.name = std::string(name);
  gpu.cc_major = cc_major;
  gpu.cc_minor = cc_minor;
  return hw::gpu_profile_name(gpu).value_or("");
}

hw::GpuProperties to_gpu_properties(const DeviceProperties& p) {
  hw::GpuProperties g;
  g.name = p.name;
  g.vendor = "nvidia";
  g.cc_major = p.cc_major;
  g.cc_minor = p.cc_minor;
  g.sm_count = p.sm_count;
  g.clock_ghz = p.clock_khz / 1e6;
  g.smem_per_sm_bytes = p.smem_per_sm_bytes;
  g.smem_per_block_bytes = p.smem_per_block_optin_bytes > 0 ? p.smem_per_block_optin_bytes : p.smem_per_block_bytes;
  g.registers_per_sm = p.registers_per_sm;
  g.max_threads_per_sm = p.max_threads_per_sm;
  g.max_blocks_per_sm = p.max_blocks_per_sm;
  g.l2_bytes = p.l2_bytes;
  // Double data rate: two transfers per reported memory clock across the whole bus.
  if (p.memory_clock_khz > 0 && p.memory_bus_bits > 0)
    g.mem_bandwidth_gbps = 2.0 * p.memory_clock_khz * 1e3 * (p.memory_bus_bits / 8.0) / 1e9;
  return g;
}

hw::HwProfile profile_from_properties(const DeviceProperties& p) {
  return hw::gpu_profile_from_properties(to_gpu_properties(p));
}

Expected<hw::HwProfile> detect_profile(int ordinal) {
  auto p = query_device(ordinal);
  if (!p) return p.status();
  return profile_from_properties(*p);
}

}  // namespace tileforge::cuda

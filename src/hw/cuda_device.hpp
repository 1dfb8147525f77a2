// CUDA GPUs as the driver reports them: properties, the NVRTC target, the matching builtin profile, a HwProfile.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/expected.hpp"
#include "hw/hw.hpp"
#include "hw/hw_profile.hpp"

namespace tileforge::cuda {

// What cuDeviceGetAttribute and friends say about one device. 0 means "not reported".
struct DeviceProperties {
  int ordinal = 0;
  std::string name;                  // "NVIDIA H200"
  int cc_major = 0, cc_minor = 0;    // compute capability
  int sm_count = 0;
  int clock_khz = 0;                 // CU_DEVICE_ATTRIBUTE_CLOCK_RATE (deprecated upstream; 0 when refused)
  int memory_clock_khz = 0;
  int memory_bus_bits = 0;
  int64_t l2_bytes = 0;
  int64_t smem_per_sm_bytes = 0;
  int64_t smem_per_block_bytes = 0;        // default per-block limit (48 KB)
  int64_t smem_per_block_optin_bytes = 0;  // largest per-block allocation after opting in (227 KB on Hopper)
  int64_t smem_reserved_per_block_bytes = 0;
  int registers_per_sm = 0;
  int registers_per_block = 0;
  int max_threads_per_sm = 0;
  int max_blocks_per_sm = 0;         // resident thread blocks per SM
  int max_threads_per_block = 0;
  int warp_size = 0;
  int64_t total_memory_bytes = 0;
  int driver_version = 0;            // 13000 for CUDA 13.0
  std::vector<std::string> notes;    // attributes the driver refused, and why the field is 0
};

// Devices the driver sees; 0 without a driver or device (driver() says why).
int cuda_device_count();
// Reads every property of device `ordinal`; refuses a missing driver or an ordinal out of range.
Expected<DeviceProperties> query_device(int ordinal);

// The NVRTC target for a compute capability: "sm_90a" for 9.0 (wgmma and setmaxnreg need the arch-specific
// target), "sm_100a" for 10.0, "sm_80", "sm_86", "sm_89" for Ampere and Ada.
std::string nvrtc_arch(int cc_major, int cc_minor);
// The compiled-in profile for a device by its reported name and compute capability ("NVIDIA H200", 9, 0 ->
// "h200"), or "" when no record's match list names it (hw::gpu_profile_name decides).
std::string builtin_profile_for(std::string_view device_name, int cc_major, int cc_minor);

// The properties as the hardware layer's GpuProperties (clock in GHz, bandwidth = 2 x memory clock x bus width).
hw::GpuProperties to_gpu_properties(const DeviceProperties& props);
// The profile to plan for: the matching compiled-in record with the device's own numbers where they differ, or,
// for a GPU no record names, one built from the reported properties and labelled so (hw::gpu_profile_from_properties).
hw::HwProfile profile_from_properties(const DeviceProperties& props);
// query_device + profile_from_properties.
Expected<hw::HwProfile> detect_profile(int ordinal);

}  // namespace tileforge::cuda

// Reads a CUDA device's properties through the run-time-loaded driver and turns them into a HwProfile.
#include "hw/cuda_device.hpp"

#include <cctype>

#include <fmt/format.h>

#include "hw/cuda_driver.hpp"

namespace tileforge::cuda {
namespace {

// Lower-case words joined by '-': "NVIDIA GeForce RTX 4090" -> "nvidia-geforce-rtx-4090".
std::string slug(std::string_view text) {
  std::string s;
  for (char c : text) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      s += char(std::tolower(static_cast<unsigned char>(c)));
    } else if (!s.empty() && s.back() != '-') {
      s += '-';
    }
  }
  while (!s.empty() && s.back() == '-') s.pop_back();
  return s;
}

bool contains(std::string_view haystack, std::string_view needle) {
  return haystack.find(needle) != std::string_view::npos;
}

// Dense FLOPs per SM per clock. Only rates that are the same on every chip of the architecture are listed
// (GeForce and workstation Ada halve FP32-accumulated tensor rates on some parts, so 8.6/8.9 have none).
double fp32_flops_per_sm_clock(int major, int minor) {
  if (major == 8 && minor == 0) return 128;  // 64 FP32 lanes x FMA
  if (major == 7) return 128;
  if (major >= 8) return 256;                // 128 FP32 lanes x FMA (8.6, 8.9, 9.0, 10.x, 12.x)
  return 0;
}
double tensor_f16_flops_per_sm_clock(int major, int minor) {
  if (major == 8 && minor == 0) return 2048;  // A100: 312 TFLOP/s = 108 SMs x 1.41 GHz x 2048
  if (major == 9 && minor == 0) return 4096;  // H100 SXM: 989 TFLOP/s = 132 SMs x 1.83 GHz x 4096
  return 0;
}

}  // namespace

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
  // Matched on the names drivers print for these parts, and on the compute capability, so that a renamed
  // variant with other silicon (a PCIe H100, an A100 40GB) is not taken for the part a profile describes.
  int cc = cc_major * 10 + cc_minor;
  if (cc == 90) {
    if (name == "NVIDIA H200" || contains(name, "H200 SXM")) return "h200";
    if (contains(name, "H100 80GB HBM3") || contains(name, "H100 SXM")) return "h100-sxm";
  }
  if (cc == 80 && contains(name, "A100-SXM4-80GB")) return "a100-sxm";
  if (cc == 89) {
    if (contains(name, "L40S")) return "l40s";
    if (contains(name, "GeForce RTX 4090")) return "rtx-4090";
  }
  return {};
}

hw::HwProfile profile_from_properties(const DeviceProperties& p) {
  hw::HwProfile h;
  const std::string origin = fmt::format("reported by the CUDA driver ({}.{}) for device {}", p.driver_version / 1000,
                                         p.driver_version % 1000 / 10, p.ordinal);
  h.name = "detected-" + slug(p.name);
  h.display_name = p.name;
  h.kind = "gpu";
  h.vendor = "nvidia";
  h.arch = nvrtc_arch(p.cc_major, p.cc_minor);
  h.cores = p.sm_count;
  h.boost_clock_ghz = p.clock_khz / 1e6;
  h.vector_bits = 0;
  h.smem_per_core_bytes = p.smem_per_sm_bytes;
  h.smem_per_block_bytes = p.smem_per_block_optin_bytes > 0 ? p.smem_per_block_optin_bytes : p.smem_per_block_bytes;
  h.registers_per_core = p.registers_per_sm;
  h.max_threads_per_core = p.max_threads_per_sm;
  h.measured = true;
  h.sources["profile"] = "built from the device's reported properties (no compiled-in profile matches '" + p.name + "')";
  for (const char* f : {"cores", "smem_per_core_bytes", "smem_per_block_bytes", "registers_per_core", "max_threads_per_core"})
    h.sources[f] = origin;
  h.sources["boost_clock_ghz"] = p.clock_khz > 0 ? origin + " (CU_DEVICE_ATTRIBUTE_CLOCK_RATE)" : "unknown: the driver reports no SM clock";

  int cc = p.cc_major * 10 + p.cc_minor;
  if (cc >= 80) {
    for (const char* f : {"mma.sync", "ldmatrix", "cp.async", "bf16"}) h.features.push_back(f);
    h.matrix_units.push_back({"mma.sync.m16n8k16", 16, 8, 16, DType::f16, DType::f32});
    h.matrix_units.push_back({"mma.sync.m16n8k16", 16, 8, 16, DType::bf16, DType::f32});
  }
  if (p.cc_major == 9 && p.cc_minor == 0) {
    for (const char* f : {"tma", "wgmma", "cluster", "setmaxnreg"}) h.features.push_back(f);
    h.matrix_units.push_back({"wgmma.m64nNk16", 64, 256, 16, DType::f16, DType::f32});
    h.matrix_units.push_back({"wgmma.m64nNk16", 64, 256, 16, DType::bf16, DType::f32});
  }
  if (p.l2_bytes > 0) {
    h.caches.push_back({2, "unified", p.l2_bytes, 0, 128, p.sm_count > 0 ? p.sm_count : 1});
    h.sources["caches"] = origin;
  }
  if (p.memory_clock_khz > 0 && p.memory_bus_bits > 0) {
    // Double data rate: two transfers per reported memory clock across the whole bus.
    h.mem_bandwidth_gbps = 2.0 * p.memory_clock_khz * 1e3 * (p.memory_bus_bits / 8.0) / 1e9;
    h.sources["mem_bandwidth_gbps"] = fmt::format("estimated: 2 x memory clock {} MHz x {}-bit bus ({})",
                                                  p.memory_clock_khz / 1000, p.memory_bus_bits, origin);
  }
  double ghz = p.clock_khz / 1e6;
  if (ghz > 0 && p.sm_count > 0) {
    if (double r = fp32_flops_per_sm_clock(p.cc_major, p.cc_minor); r > 0)
      h.peaks.push_back({DType::f32, DType::f32, p.sm_count * ghz * r / 1e3,
                         fmt::format("estimated: {} SMs x {:.3f} GHz x {} FLOP/clock/SM", p.sm_count, ghz, r)});
    if (double r = tensor_f16_flops_per_sm_clock(p.cc_major, p.cc_minor); r > 0) {
      for (DType in : {DType::f16, DType::bf16})
        h.peaks.push_back({in, DType::f32, p.sm_count * ghz * r / 1e3,
                           fmt::format("estimated: {} SMs x {:.3f} GHz x {} tensor FLOP/clock/SM (dense)", p.sm_count, ghz, r)});
    }
  }
  return h;
}

Expected<hw::HwProfile> detect_profile(int ordinal) {
  auto p = query_device(ordinal);
  if (!p) return p.status();
  return profile_from_properties(*p);
}

}  // namespace tileforge::cuda

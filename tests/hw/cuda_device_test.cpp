// Device naming, NVRTC targets and the profile built from reported properties; detection itself on a GPU.
#include <gtest/gtest.h>

#include <algorithm>

#include "hw/cuda_device.hpp"
#include "hw/cuda_driver.hpp"

namespace tileforge::cuda {
namespace {

bool has_feature(const hw::HwProfile& p, const std::string& f) {
  return std::find(p.features.begin(), p.features.end(), f) != p.features.end();
}

TEST(CudaDevice, NvrtcTargetPerComputeCapability) {
  EXPECT_EQ(nvrtc_arch(8, 0), "sm_80");
  EXPECT_EQ(nvrtc_arch(8, 6), "sm_86");
  EXPECT_EQ(nvrtc_arch(8, 9), "sm_89");
  EXPECT_EQ(nvrtc_arch(9, 0), "sm_90a");
  EXPECT_EQ(nvrtc_arch(10, 0), "sm_100a");
  EXPECT_EQ(nvrtc_arch(12, 0), "sm_120a");
  EXPECT_EQ(nvrtc_arch(7, 5), "sm_75");
}

TEST(CudaDevice, BuiltinProfileByNameAndCapability) {
  EXPECT_EQ(builtin_profile_for("NVIDIA H200", 9, 0), "h200");
  EXPECT_EQ(builtin_profile_for("NVIDIA H100 80GB HBM3", 9, 0), "h100-sxm");
  EXPECT_EQ(builtin_profile_for("NVIDIA A100-SXM4-80GB", 8, 0), "a100-sxm");
  EXPECT_EQ(builtin_profile_for("NVIDIA L40S", 8, 9), "l40s");
  EXPECT_EQ(builtin_profile_for("NVIDIA GeForce RTX 4090", 8, 9), "rtx-4090");
  // Other silicon under a similar name, or the right name with another compute capability, gets no record.
  EXPECT_EQ(builtin_profile_for("NVIDIA H100 PCIe", 9, 0), "");
  EXPECT_EQ(builtin_profile_for("NVIDIA H200", 8, 0), "");
  EXPECT_EQ(builtin_profile_for("NVIDIA GeForce RTX 3090", 8, 6), "");
}

DeviceProperties h200_like() {
  // As the driver reported them on the H200 this project measures on (driver 580, 2026-11-29).
  DeviceProperties p;
  p.name = "NVIDIA H200";
  p.cc_major = 9;
  p.cc_minor = 0;
  p.sm_count = 132;
  p.clock_khz = 1980000;
  p.memory_clock_khz = 3201000;
  p.memory_bus_bits = 6016;
  p.l2_bytes = 62914560;
  p.smem_per_sm_bytes = 233472;
  p.smem_per_block_bytes = 49152;
  p.smem_per_block_optin_bytes = 232448;
  p.registers_per_sm = 65536;
  p.max_threads_per_sm = 2048;
  p.driver_version = 13000;
  return p;
}

TEST(CudaDevice, PropertiesForTheHardwareLayer) {
  hw::GpuProperties g = to_gpu_properties(h200_like());
  EXPECT_EQ(g.name, "NVIDIA H200");
  EXPECT_EQ(g.vendor, "nvidia");
  EXPECT_EQ(g.cc_major, 9);
  EXPECT_EQ(g.sm_count, 132);
  EXPECT_DOUBLE_EQ(g.clock_ghz, 1.98);
  EXPECT_EQ(g.smem_per_block_bytes, 232448) << "the opt-in limit is what a kernel can use";
  EXPECT_EQ(g.l2_bytes, 62914560);
  EXPECT_NEAR(g.mem_bandwidth_gbps, 2 * 3.201 * 752, 0.5);  // 2 x 3201 MHz x 752 bytes
  DeviceProperties no_clock = h200_like();
  no_clock.clock_khz = 0;
  no_clock.memory_clock_khz = 0;
  hw::GpuProperties g2 = to_gpu_properties(no_clock);
  EXPECT_EQ(g2.clock_ghz, 0) << "an attribute the driver refused stays unknown";
  EXPECT_EQ(g2.mem_bandwidth_gbps, 0);
}

TEST(CudaDevice, KnownGpuGetsItsRecordUnknownOneIsBuiltFromProperties) {
  hw::HwProfile h = profile_from_properties(h200_like());
  EXPECT_EQ(h.name, "h200");
  EXPECT_EQ(h.arch, "sm_90a");
  EXPECT_EQ(h.cores, 132);
  EXPECT_TRUE(has_feature(h, "wgmma"));

  DeviceProperties p = h200_like();
  p.name = "NVIDIA Future GPU";
  p.cc_major = 8;
  p.cc_minor = 6;
  hw::HwProfile d = profile_from_properties(p);
  EXPECT_EQ(d.name, "detected-nvidia-future-gpu");
  EXPECT_EQ(d.display_name, "NVIDIA Future GPU");
  EXPECT_EQ(d.kind, "gpu");
  EXPECT_TRUE(d.measured);
  EXPECT_NE(d.notes.find("reported properties"), std::string::npos) << d.notes;
  EXPECT_EQ(d.cores, 132);
  EXPECT_FALSE(has_feature(d, "wgmma"));
}

TEST(CudaDeviceGpu, DetectsTheDevice) {
  auto d = driver();
  if (!d || device_count() == 0)
    GTEST_SKIP() << "SKIPPED: no CUDA device" << (d ? "" : " (" + d.status().message() + ")");
  EXPECT_EQ(query_device(device_count()).status().code(), Code::invalid_argument);
  auto p = query_device(0);
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  std::printf("[ info ] %s: cc %d.%d, %d SMs, clock %d kHz, memory %d kHz x %d bits, L2 %lld B, smem/SM %lld, "
              "optin %lld, regs/SM %d, threads/SM %d, %lld bytes, driver %d\n",
              p->name.c_str(), p->cc_major, p->cc_minor, p->sm_count, p->clock_khz, p->memory_clock_khz,
              p->memory_bus_bits, (long long)p->l2_bytes, (long long)p->smem_per_sm_bytes,
              (long long)p->smem_per_block_optin_bytes, p->registers_per_sm, p->max_threads_per_sm,
              (long long)p->total_memory_bytes, p->driver_version);
  for (const auto& n : p->notes) std::printf("[ info ] note: %s\n", n.c_str());
  EXPECT_GT(p->sm_count, 0);
  EXPECT_GT(p->l2_bytes, 0);
  EXPECT_GT(p->smem_per_block_optin_bytes, 0);
  EXPECT_GT(p->registers_per_sm, 0);
  EXPECT_GT(p->total_memory_bytes, 0);
  EXPECT_EQ(p->warp_size, 32);
  auto prof = detect_profile(0);
  ASSERT_TRUE(prof.ok());
  EXPECT_EQ(prof->arch, nvrtc_arch(p->cc_major, p->cc_minor));
  std::printf("[ info ] planning profile: %s (%s)\n", prof->name.c_str(), prof->display_name.c_str());
  if (p->name == "NVIDIA H200") {
    EXPECT_EQ(builtin_profile_for(p->name, p->cc_major, p->cc_minor), "h200");
    EXPECT_EQ(prof->name, "h200");
    EXPECT_EQ(p->sm_count, 132);
    EXPECT_EQ(prof->arch, "sm_90a");
  }
}

}  // namespace
}  // namespace tileforge::cuda

// Tests of mapping a detected GPU to its chip record, and of the profile built for a GPU no record names.
#include <gtest/gtest.h>

#include <cctype>

#include "hw/hw.hpp"

namespace tileforge::hw {
namespace {

GpuProperties gpu(const std::string& name, int major, int minor) {
  GpuProperties g;
  g.name = name;
  g.cc_major = major;
  g.cc_minor = minor;
  return g;
}

HwProfile load(const std::string& name) { return load_profile(name).value(); }

TEST(HwGpuProfile, DriverNamesMapToRecords) {
  EXPECT_EQ(gpu_profile_name(gpu("NVIDIA H200", 9, 0)), "h200");
  EXPECT_EQ(gpu_profile_name(gpu("NVIDIA H100 80GB HBM3", 9, 0)), "h100-sxm");
  EXPECT_EQ(gpu_profile_name(gpu("NVIDIA A100-SXM4-80GB", 8, 0)), "a100-sxm");
  EXPECT_EQ(gpu_profile_name(gpu("NVIDIA L40S", 8, 9)), "l40s");
  EXPECT_EQ(gpu_profile_name(gpu("NVIDIA GeForce RTX 4090", 8, 9)), "rtx-4090");
  // Case and spacing are not meaningful.
  EXPECT_EQ(gpu_profile_name(gpu("  nvidia   h200 ", 9, 0)), "h200");
}

TEST(HwGpuProfile, WrongComputeCapabilityOrUnknownNameDoesNotMatch) {
  EXPECT_FALSE(gpu_profile_name(gpu("NVIDIA H200", 8, 0)).has_value());
  EXPECT_FALSE(gpu_profile_name(gpu("NVIDIA H100 PCIe", 9, 0)).has_value());
  EXPECT_FALSE(gpu_profile_name(gpu("", 9, 0)).has_value());
  GpuProperties amd = gpu("NVIDIA H200", 9, 0);
  amd.vendor = "amd";  // a vendor's record never matches another vendor's device
  EXPECT_FALSE(gpu_profile_name(amd).has_value());
}

TEST(HwGpuProfile, EveryRecordsDeviceNamesMapBackToIt) {
  for (const std::string& name : builtin_profile_names()) {
    HwProfile p = load(name);
    for (const std::string& device : p.match_names) {
      GpuProperties g;
      g.name = device;
      g.vendor = p.vendor;
      if (p.arch.rfind("sm_", 0) == 0) {  // "sm_90a": major 9, minor 0
        std::string digits;
        for (char c : p.arch.substr(3))
          if (std::isdigit(static_cast<unsigned char>(c))) digits.push_back(c);
        g.cc_major = std::stoi(digits.substr(0, digits.size() - 1));
        g.cc_minor = digits.back() - '0';
      }
      EXPECT_EQ(gpu_profile_name(g), name) << device;
    }
  }
}

TEST(HwGpuProfile, MatchedDeviceWithTheRecordsNumbersKeepsTheRecord) {
  const HwProfile record = load("h200");
  GpuProperties g = gpu("NVIDIA H200", 9, 0);
  g.sm_count = record.cores;
  g.clock_ghz = record.boost_clock_ghz;
  g.smem_per_sm_bytes = record.smem_per_core_bytes;
  g.smem_per_block_bytes = record.smem_per_block_bytes;
  g.l2_bytes = record.cache(2)->size_bytes;
  HwProfile p = gpu_profile_from_properties(g);
  EXPECT_EQ(p.name, "h200");
  EXPECT_EQ(p.peaks, record.peaks);
  EXPECT_EQ(p.cores, record.cores);
  EXPECT_NE(p.sources.at("match").find("NVIDIA H200"), std::string::npos);
}

TEST(HwGpuProfile, MigSliceScalesPeaksBySms) {
  const HwProfile record = load("h100-sxm");
  GpuProperties g = gpu("NVIDIA H100 80GB HBM3", 9, 0);
  g.sm_count = record.cores / 2;
  g.l2_bytes = 25 << 20;
  HwProfile p = gpu_profile_from_properties(g);
  EXPECT_EQ(p.cores, record.cores / 2);
  EXPECT_EQ(p.cache(2)->size_bytes, 25 << 20);
  EXPECT_NEAR(*p.peak_tflops(DType::f16, DType::f32), *record.peak_tflops(DType::f16, DType::f32) / 2, 1e-6);
  EXPECT_NE(p.sources.at("cores").find("device properties"), std::string::npos);
}

TEST(HwGpuProfile, UnknownGpuOfAKnownArchitectureIsScaledFromItsFamily) {
  const HwProfile family = load("h100-sxm");
  GpuProperties g = gpu("NVIDIA H100 PCIe", 9, 0);
  g.sm_count = 114;
  g.clock_ghz = 1.755;
  g.smem_per_sm_bytes = 233472;
  g.smem_per_block_bytes = 232448;
  g.registers_per_sm = 65536;
  g.max_threads_per_sm = 2048;
  g.l2_bytes = 50 << 20;
  g.mem_bandwidth_gbps = 2039;
  HwProfile p = gpu_profile_from_properties(g);
  EXPECT_EQ(p.name, "detected-nvidia-h100-pcie");
  EXPECT_EQ(p.display_name, "NVIDIA H100 PCIe");
  EXPECT_TRUE(p.measured);
  EXPECT_EQ(p.cores, 114);
  EXPECT_DOUBLE_EQ(p.mem_bandwidth_gbps, 2039);
  EXPECT_TRUE(p.has("wgmma"));
  const double scale = 114.0 / family.cores * 1.755 / family.boost_clock_ghz;
  EXPECT_NEAR(*p.peak_tflops(DType::bf16, DType::f32), *family.peak_tflops(DType::bf16, DType::f32) * scale, 1e-6);
  EXPECT_NE(p.peaks[0].source.find("estimated"), std::string::npos);
  // What no driver reports comes from the record of the same architecture, said so.
  EXPECT_EQ(p.max_blocks_per_core, family.max_blocks_per_core);
  EXPECT_DOUBLE_EQ(p.l2_bytes_per_core_cycle, family.l2_bytes_per_core_cycle);
  EXPECT_DOUBLE_EQ(p.smem_bytes_per_core_cycle, family.smem_bytes_per_core_cycle);
  EXPECT_EQ(p.sources.at("l2_bytes_per_core_cycle").rfind("from h100-sxm", 0), 0u) << p.sources.at("l2_bytes_per_core_cycle");
  EXPECT_EQ(p.sources.at("max_blocks_per_core").rfind("from h100-sxm", 0), 0u);
  EXPECT_EQ(p.fma_pipes, 0);
  auto again = parse_profile(to_json(p), "detected");
  ASSERT_TRUE(again.ok()) << again.status().to_string();
  EXPECT_EQ(again->peaks, p.peaks);
}

TEST(HwGpuProfile, UnknownArchitectureGetsOnlyAnFp32Estimate) {
  GpuProperties g = gpu("NVIDIA Future GPU", 12, 0);
  g.sm_count = 100;
  g.clock_ghz = 2.0;
  g.l2_bytes = 64 << 20;
  HwProfile p = gpu_profile_from_properties(g);
  EXPECT_EQ(p.arch, "sm_120");
  EXPECT_NEAR(*p.peak_tflops(DType::f32, DType::f32), 100 * 128 * 2 * 2.0 / 1e3, 1e-9);
  EXPECT_FALSE(p.peak_tflops(DType::f16, DType::f32).has_value()) << "no tensor rate is invented";
  ASSERT_NE(p.cache(2), nullptr);
  EXPECT_EQ(p.cache(2)->size_bytes, 64 << 20);
  // No record of compute capability 12.0 gives the L2 or shared-memory rates: they stay unknown, labelled so (the
  // cost model names them rather than assuming a number), while what the driver reports is used.
  EXPECT_EQ(p.l2_bytes_per_core_cycle, 0);
  EXPECT_EQ(p.smem_bytes_per_core_cycle, 0);
  EXPECT_EQ(p.sources.at("l2_bytes_per_core_cycle").rfind("unknown", 0), 0u) << p.sources.at("l2_bytes_per_core_cycle");
  EXPECT_EQ(p.max_blocks_per_core, 0);
  g.max_blocks_per_sm = 32;
  EXPECT_EQ(gpu_profile_from_properties(g).max_blocks_per_core, 32);
  EXPECT_EQ(gpu_profile_from_properties(g).sources.at("max_blocks_per_core"), "device properties");
}

TEST(HwGpuProfile, ReportedBlocksPerSmReplaceTheRecords) {
  GpuProperties g = gpu("NVIDIA H200", 9, 0);
  g.max_blocks_per_sm = 32;  // what the H200 reports: the record's number stays, its source too
  HwProfile same = gpu_profile_from_properties(g);
  EXPECT_EQ(same.max_blocks_per_core, 32);
  EXPECT_EQ(same.sources.at("max_blocks_per_core"), load("h200").sources.at("max_blocks_per_core"));
  g.max_blocks_per_sm = 16;
  HwProfile other = gpu_profile_from_properties(g);
  EXPECT_EQ(other.max_blocks_per_core, 16);
  EXPECT_NE(other.sources.at("max_blocks_per_core").find("device properties"), std::string::npos);
}

}  // namespace
}  // namespace tileforge::hw

// The device bandwidth a bench run measures: the copy's arithmetic on the CPU timer, the buffer size rule, the
// refusal on a CPU device, and (on a GPU) a copy of twice the L2 within the chip's memory bandwidth.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include "backends/backend.hpp"
#include "measure/bandwidth.hpp"

namespace tileforge::measure {
namespace {

Contract quick_contract() {
  Contract c;
  c.min_reps = 5;
  c.min_time_s = 0;
  c.warmup_time_s = 0;
  c.max_time_s = 1;
  return c;
}

// Every byte is read once and written once: the rate counts both, over the median rep.
TEST(MeasureBandwidth, CopyCountsReadAndWriteOverTheMedian) {
  CpuTimer timer;
  const std::size_t bytes = std::size_t(4) << 20;
  auto bw = measure_copy_bandwidth(timer, quick_contract(), bytes);
  ASSERT_TRUE(bw) << bw.status().to_string();
  EXPECT_EQ(bw->bytes, bytes);
  EXPECT_GE(bw->timing.reps, 5);
  ASSERT_GT(bw->timing.median_ms, 0);
  EXPECT_DOUBLE_EQ(bw->gbps, 2.0 * double(bytes) / (bw->timing.median_ms * 1e-3) / 1e9);
  EXPECT_LE(bw->timing.min_ms, bw->timing.median_ms);
  EXPECT_GE(bw->timing.max_ms, bw->timing.median_ms);
}

TEST(MeasureBandwidth, RefusesAnEmptyCopy) {
  CpuTimer timer;
  auto bw = measure_copy_bandwidth(timer, quick_contract(), 0);
  ASSERT_FALSE(bw);
  EXPECT_EQ(bw.status().code(), Code::invalid_argument);
}

// Twice the L2 in whole MiB, as the timer's scrub buffer; 64 MiB assumed when the L2 is unknown.
TEST(MeasureBandwidth, CopyIsTwiceTheL2InWholeMiB) {
  EXPECT_EQ(bandwidth_copy_bytes(int64_t(50) << 20), std::size_t(100) << 20);
  EXPECT_EQ(bandwidth_copy_bytes(60'000'000), std::size_t(115) << 20);  // 120e6 bytes = 114.4 MiB, rounded up
  EXPECT_EQ(bandwidth_copy_bytes(0), std::size_t(128) << 20);
}

// A bench run on a CPU measures no bandwidth: asked anyway, it says why.
TEST(MeasureBandwidth, NotMeasuredOnACpu) {
  Device cpu;
  CpuTimer timer;
  auto bw = measure_device_bandwidth(cpu, timer, quick_contract());
  ASSERT_FALSE(bw);
  EXPECT_EQ(bw.status().code(), Code::not_available);
  EXPECT_NE(bw.status().message().find("CUDA devices only"), std::string::npos) << bw.status().message();
}

// On a GPU: the copy is at least twice the L2 (so DRAM, not the cache, is measured) and its rate lies between half
// the chip's memory bandwidth and that bandwidth (counting only the reads would halve it; the L2 serving part of the
// copy would push it above).
TEST(MeasureBandwidth, DeviceCopyOfTwiceTheL2OnAGpu) {
  auto device = open_device("cuda");
  if (!device) GTEST_SKIP() << "SKIPPED: " << device.status().message();
  auto timer = make_timer(*device);
  ASSERT_TRUE(timer) << timer.status().to_string();
  Contract contract;  // the bench defaults: 10 warm-up reps and 0.1 s, then 30 reps and 0.1 s
  auto bw = measure_device_bandwidth(*device, **timer, contract);
  ASSERT_TRUE(bw) << bw.status().to_string();
  int64_t l2 = 0;
  for (const hw::CacheLevel& c : device->profile.caches) l2 = std::max(l2, c.size_bytes);
  EXPECT_GE(int64_t(bw->bytes), 2 * l2);
  EXPECT_GE(bw->timing.reps, contract.min_reps);
  EXPECT_NE(bw->method.find("cuMemcpyDtoDAsync"), std::string::npos) << bw->method;
  const double peak = device->profile.mem_bandwidth_gbps;
  std::printf("[ info ] %s: %.1f GB/s (%zu MiB copied, %d reps, median %.4f ms; profile's peak %.0f GB/s)\n",
              device->name.c_str(), bw->gbps, bw->bytes >> 20, bw->timing.reps, bw->timing.median_ms, peak);
  if (peak > 0) {
    EXPECT_LE(bw->gbps, 1.02 * peak);
    EXPECT_GE(bw->gbps, peak / 2);
  }
}

}  // namespace
}  // namespace tileforge::measure

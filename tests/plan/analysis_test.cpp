// Roofline, waves, tail waste and load paths against numbers derived by hand.
#include <gtest/gtest.h>

#include "hw/hw.hpp"
#include "plan/analysis.hpp"
#include "support/test_support.hpp"

namespace tileforge::plan {
namespace {

using testing::profile;

Problem f16(int64_t m, int64_t n, int64_t k) { return testing::make_problem(m, n, k, Layout::RR, DType::f16, DType::f16); }

TEST(PlanAnalysis, Square4096F16OnH200IsComputeBound) {
  const Roofline r = analyze_roofline(f16(4096, 4096, 4096), profile("h200"));
  const double n = 4096.0;
  EXPECT_DOUBLE_EQ(r.flops, 2 * n * n * n);
  EXPECT_DOUBLE_EQ(r.bytes_a, n * n * 2);
  EXPECT_DOUBLE_EQ(r.bytes_b, n * n * 2);
  EXPECT_DOUBLE_EQ(r.bytes_c_write, n * n * 2);
  EXPECT_DOUBLE_EQ(r.bytes_c_read, 0);
  EXPECT_DOUBLE_EQ(r.min_bytes, 3 * n * n * 2);
  EXPECT_NEAR(r.intensity, 4096.0 / 3.0, 1e-9);  // 2n^3 / 6n^2
  ASSERT_TRUE(r.ridge.has_value());
  EXPECT_NEAR(*r.ridge, 989.4e12 / 4800e9, 1e-9);  // 206 FLOP/B
  EXPECT_TRUE(r.compute_bound);
  EXPECT_NEAR(r.compute_floor_s, 2 * n * n * n / 989.4e12, 1e-12);
  EXPECT_NEAR(r.memory_floor_s, 6 * n * n / 4800e9, 1e-12);
  EXPECT_DOUBLE_EQ(r.floor_s, r.compute_floor_s);
}

TEST(PlanAnalysis, SkinnyDecodeShapeIsMemoryBound) {
  const Roofline r = analyze_roofline(f16(16, 4096, 4096), profile("h200"));
  // A 16x4096 + B 4096x4096 + C 16x4096, 2 bytes each: about 16 FLOP per byte, far below the ridge of 206.
  const double bytes = (16.0 * 4096 + 4096.0 * 4096 + 16.0 * 4096) * 2;
  EXPECT_DOUBLE_EQ(r.min_bytes, bytes);
  EXPECT_NEAR(r.intensity, 2.0 * 16 * 4096 * 4096 / bytes, 1e-9);
  EXPECT_LT(r.intensity, 16.0);
  EXPECT_FALSE(r.compute_bound);
  EXPECT_DOUBLE_EQ(r.floor_s, r.memory_floor_s);
  EXPECT_GT(r.memory_floor_s, r.compute_floor_s);
}

TEST(PlanAnalysis, BetaReadsCOnce) {
  Problem p = f16(1024, 512, 256);
  p.beta = 0.5;
  const Roofline r = analyze_roofline(p, profile("a100-sxm"));
  EXPECT_DOUBLE_EQ(r.bytes_c_read, 1024.0 * 512 * 2);
  EXPECT_DOUBLE_EQ(r.min_bytes, r.bytes_a + r.bytes_b + 2 * r.bytes_c_write);
}

TEST(PlanAnalysis, MissingPeakLeavesNoRidge) {
  hw::HwProfile p = profile("a100-sxm");
  p.peaks.clear();
  const Roofline r = analyze_roofline(f16(256, 256, 256), p);
  EXPECT_FALSE(r.peak.tflops.has_value());
  EXPECT_FALSE(r.ridge.has_value());
  EXPECT_FALSE(r.compute_bound);
  EXPECT_NE(r.peak.note.find("no peak"), std::string::npos);
}

TEST(PlanAnalysis, CpuSixteenBitInputsUseTheF32Rate) {
  hw::HwProfile p = profile("generic-avx2");
  std::erase_if(p.peaks, [](const hw::PeakRate& r) { return r.input != DType::f32; });
  const PeakChoice c = peak_for(f16(64, 64, 64), p);
  ASSERT_TRUE(c.tflops.has_value());
  EXPECT_DOUBLE_EQ(*c.tflops, *p.peak_tflops(DType::f32, DType::f32));
  EXPECT_NE(c.note.find("converted to f32"), std::string::npos);
}

TEST(PlanAnalysis, WavesOf128TilesAt4096On132Sms) {
  const WaveAnalysis w = analyze_waves(f16(4096, 4096, 4096), 132, 1, 128, 128, 32);
  EXPECT_EQ(w.tiles_m, 32);
  EXPECT_EQ(w.tiles_n, 32);
  EXPECT_EQ(w.tiles, 1024);
  EXPECT_EQ(w.k_steps, 128);
  EXPECT_EQ(w.slots, 132);
  EXPECT_EQ(w.waves, 8);  // 7 full waves of 132 = 924, then 100 tiles
  EXPECT_NEAR(w.waves_exact, 1024.0 / 132.0, 1e-12);
  EXPECT_NEAR(w.last_wave_fill, 100.0 / 132.0, 1e-12);
  EXPECT_NEAR(w.wave_efficiency, 1024.0 / (8 * 132), 1e-12);
  EXPECT_EQ(w.max_tiles_per_core, 8);
  EXPECT_DOUBLE_EQ(w.waste_m, 0);
  EXPECT_DOUBLE_EQ(w.padded_work_share, 0);
}

TEST(PlanAnalysis, OccupancyMultipliesTheSlots) {
  const WaveAnalysis w = analyze_waves(f16(4096, 4096, 4096), 132, 2, 128, 128, 32);
  EXPECT_EQ(w.slots, 264);
  EXPECT_EQ(w.waves, 4);
  EXPECT_NEAR(w.last_wave_fill, (1024.0 - 3 * 264) / 264, 1e-12);
  EXPECT_EQ(w.max_tiles_per_core, 8);  // the busiest SM still runs ceil(1024 / 132) tiles
}

TEST(PlanAnalysis, TailWasteOf4095With128Tiles) {
  const WaveAnalysis w = analyze_waves(f16(4095, 4097, 4093), 132, 1, 128, 128, 32);
  EXPECT_EQ(w.tiles_m, 32);  // 4095 -> 4096
  EXPECT_EQ(w.tiles_n, 33);  // 4097 -> 4224
  EXPECT_NEAR(w.waste_m, 1.0 / 4096, 1e-15);
  EXPECT_NEAR(w.waste_n, 127.0 / 4224, 1e-15);
  EXPECT_NEAR(w.waste_k, 3.0 / 4096, 1e-15);  // 4093 -> 4096
  EXPECT_NEAR(w.padded_work_share, 1.0 - (4095.0 * 4097 * 4093) / (4096.0 * 4224 * 4096), 1e-12);
}

TEST(PlanAnalysis, BatchMultipliesTiles) {
  Problem p = f16(256, 256, 64);
  p.batch = 3;
  const WaveAnalysis w = analyze_waves(p, 4, 1, 128, 128, 32);
  EXPECT_EQ(w.tiles, 12);
  EXPECT_EQ(w.waves, 3);
  EXPECT_DOUBLE_EQ(w.last_wave_fill, 1.0);
}

TEST(PlanAnalysis, RowAlignment) {
  EXPECT_EQ(row_alignment_bytes(4096, 0, 2), 16);
  EXPECT_EQ(row_alignment_bytes(4093, 0, 2), 2);
  EXPECT_EQ(row_alignment_bytes(4094, 0, 2), 4);
  EXPECT_EQ(row_alignment_bytes(4092, 0, 2), 8);
  EXPECT_EQ(row_alignment_bytes(4096, 4096 * 4096 + 2, 2), 4);  // a batch stride breaks the alignment
  EXPECT_EQ(row_alignment_bytes(1001, 0, 4), 4);                // never below one element
}

TEST(PlanAnalysis, TmaNeeds16ByteStridesAndTheFeature) {
  const PathAnalysis aligned = analyze_paths(f16(4096, 4096, 4096), profile("h200"));
  EXPECT_TRUE(aligned.tma_on_chip);
  EXPECT_TRUE(aligned.tma_legal);
  EXPECT_EQ(aligned.vector_bytes, 16);

  const PathAnalysis odd = analyze_paths(f16(4095, 4097, 4093), profile("h200"));
  EXPECT_TRUE(odd.tma_on_chip);
  EXPECT_FALSE(odd.tma_legal);
  EXPECT_NE(odd.tma_reason.find("lda = 4093"), std::string::npos) << odd.tma_reason;
  EXPECT_NE(odd.tma_reason.find("ldb = 4097"), std::string::npos) << odd.tma_reason;
  EXPECT_EQ(odd.vector_bytes, 2);

  const PathAnalysis ampere = analyze_paths(f16(4096, 4096, 4096), profile("a100-sxm"));
  EXPECT_FALSE(ampere.tma_on_chip);
  EXPECT_FALSE(ampere.tma_legal);
  EXPECT_NE(ampere.tma_reason.find("no TMA on a100-sxm"), std::string::npos);

  const PathAnalysis cpu = analyze_paths(f16(100, 100, 100), profile("generic-avx512"));
  EXPECT_FALSE(cpu.tma_legal);
  EXPECT_NE(cpu.vector_reason.find("64-byte SIMD"), std::string::npos) << cpu.vector_reason;
}

}  // namespace
}  // namespace tileforge::plan

// The blocking model never divides by zero or overflows, whatever the profile says: parse_profile refuses such
// records, but a detected profile or one built in code reaches the model unparsed.
#include <gtest/gtest.h>

#include <climits>

#include "backends/cpu/blocking.hpp"

namespace tileforge::cpu {
namespace {

hw::HwProfile cpu_with(std::vector<hw::CacheLevel> caches) {
  hw::HwProfile p;
  p.name = "odd";
  p.kind = "cpu";
  p.cores = 2;
  p.fma_pipes = 2;
  p.fma_latency_cycles = 4;
  p.caches = std::move(caches);
  return p;
}

void expect_usable(const BlockSizes& b, const char* what) {
  EXPECT_GT(b.mr, 0) << what;
  EXPECT_GT(b.nr, 0) << what;
  EXPECT_GT(b.kc, 0) << what;
  EXPECT_GT(b.mc, 0) << what;
  EXPECT_GT(b.nc, 0) << what;
  EXPECT_LE(b.nc, 16384) << what;
  EXPECT_EQ(b.reasons.size(), 4u) << what;
}

TEST(BlockingBounds, CachesWithoutASetAreTreatedAsAbsent) {
  // 256 bytes with 8 ways of 64-byte lines has no set: sets() is 0, and the model divided by it (SIGFPE).
  const hw::HwProfile tiny = cpu_with({{1, "data", 256, 8, 64, 1}, {2, "unified", 256, 8, 64, 1},
                                       {3, "unified", 256, 8, 64, 2}});
  for (const char* family : {"cpu-avx2", "cpu-avx512", "cpu-generic"}) {
    const BlockSizes b = analytic_block_sizes(tiny, family, 2);
    expect_usable(b, family);
    EXPECT_EQ(b.kc, 256) << family;  // the documented default without a usable L1
    EXPECT_NE(b.reasons[1].find("no usable L1"), std::string::npos) << b.reasons[1];
  }
  // Unknown ways (0) default to 8: a 1 KiB cache of 256-byte lines then has no set either.
  const hw::HwProfile wide_lines = cpu_with({{1, "data", 1024, 0, 256, 1}, {2, "unified", 1024, 0, 256, 1}});
  expect_usable(analytic_block_sizes(wide_lines, "cpu-avx2", 2), "wide lines");
}

TEST(BlockingBounds, HugeCachesAndThreadCountsDoNotOverflow) {
  // 2^62-byte caches, every one shared by INT_MAX cores, and INT_MAX threads.
  const int64_t huge = int64_t(1) << 62;
  const hw::HwProfile p = cpu_with({{1, "data", huge, 8, 64, 1}, {2, "unified", huge, 8, 64, 1},
                                    {3, "unified", huge, 16, 64, INT_MAX}});
  expect_usable(analytic_block_sizes(p, "cpu-avx2", INT_MAX), "2^62-byte caches");
  // Ways and lines past their bounds likewise.
  const hw::HwProfile q = cpu_with({{1, "data", 32 << 10, INT_MAX, 64, 1}, {2, "unified", 512 << 10, 8, INT_MAX, 1},
                                    {3, "unified", 32 << 20, 16, 64, 2}});
  expect_usable(analytic_block_sizes(q, "cpu-avx2", 2), "ways and lines out of bounds");
}

}  // namespace
}  // namespace tileforge::cpu

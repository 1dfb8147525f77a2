// The sm90 kernel's host-side choices that need no GPU: the L2 promotion of each operand's tensor map.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>

#include "backends/cuda/sm90/sm90_kernel.hpp"

namespace tileforge::cuda::detail {
namespace {

TEST(Sm90Kernel, RowsOffTheLinesArePromotedBy128BytesAndAlignedRowsBy256) {
  // 1000^3 and 3000^3 in f16: 2000- and 6000-byte rows, off the 128-byte lines (measured faster with 128).
  EXPECT_EQ(sm90_l2_promotion_bytes(0x10000, 1000, DType::f16, nullptr), 128);
  EXPECT_EQ(sm90_l2_promotion_bytes(0x10000, 3000, DType::f16, nullptr), 128);
  // 4096-element rows on a 256-byte aligned base keep 256; the same rows from a base off the lines do not.
  EXPECT_EQ(sm90_l2_promotion_bytes(0x10000, 4096, DType::f16, nullptr), 256);
  EXPECT_EQ(sm90_l2_promotion_bytes(0x10010, 4096, DType::bf16, nullptr), 128);
  // Random leading dimensions and bases: 256 exactly where both the rows and the base are on 128-byte lines.
  std::mt19937_64 rng(5);
  for (int i = 0; i < 1000; ++i) {
    const int64_t ld = 1 + int64_t(rng() % 20000);
    const uintptr_t base = uintptr_t(rng() % (1u << 20)) * 16;
    const bool on_lines = (ld * 2) % 128 == 0 && base % 128 == 0;
    EXPECT_EQ(sm90_l2_promotion_bytes(base, ld, DType::f16, nullptr), on_lines ? 256 : 128) << ld << " " << base;
  }
}

TEST(Sm90Kernel, PromotionOverrideTakesItsFourValuesAndIgnoresOthers) {
  for (const char* aligned_or_not : {"aligned", "off"}) {
    const int64_t ld = aligned_or_not[0] == 'a' ? 4096 : 1000;
    const int kept = ld == 4096 ? 256 : 128;
    EXPECT_EQ(sm90_l2_promotion_bytes(0x10000, ld, DType::f16, "none"), 0);
    EXPECT_EQ(sm90_l2_promotion_bytes(0x10000, ld, DType::f16, "64"), 64);
    EXPECT_EQ(sm90_l2_promotion_bytes(0x10000, ld, DType::f16, "128"), 128);
    EXPECT_EQ(sm90_l2_promotion_bytes(0x10000, ld, DType::f16, "256"), 256);
    for (const char* other : {"", "32", "512", "L2_128B", "128 "}) {
      EXPECT_EQ(sm90_l2_promotion_bytes(0x10000, ld, DType::f16, other), kept) << "'" << other << "'";
    }
  }
}

}  // namespace
}  // namespace tileforge::cuda::detail

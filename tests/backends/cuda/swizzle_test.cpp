// The shared-memory swizzle of the sm80 kernels: every ldmatrix phase (8 rows of one 16-byte column) of every
// tile shape the family uses touches 32 distinct banks, i.e. it is free of bank conflicts.
#include <gtest/gtest.h>

#include <functional>
#include <set>

#include "backends/cuda/kernels/common/swizzle.cuh"

namespace {

// Banks hit by one ldmatrix phase: rows r0..r0+7 at element column c of a tile with `cols` 16-bit elements per
// row; each row gives 16 bytes = 4 consecutive 4-byte banks.
int distinct_banks(const std::function<unsigned(unsigned)>& swizzle, int cols, int r0, int c) {
  std::set<unsigned> banks;
  for (int r = r0; r < r0 + 8; ++r) {
    const unsigned offset = swizzle(unsigned((r * cols + c) * 2));
    for (unsigned w = 0; w < 4; ++w) banks.insert(((offset + 4 * w) / 4) % 32);
  }
  return int(banks.size());
}

// Every tile the family lays out in shared memory: [BM][BK], [BK][BM], [BN][BK], [BK][BN] with BM, BN in
// 16..256 and BK in 16..64, i.e. rows of 16 to 256 elements.
template <unsigned kRowBytes>
unsigned swz(unsigned o) {
  return tf::swizzle_128b<kRowBytes>(o);
}

std::function<unsigned(unsigned)> swizzle_for(int cols) {
  switch (cols * 2) {
    case 32: return swz<32>;
    case 64: return swz<64>;
    case 128: return swz<128>;
    case 256: return swz<256>;
    default: return swz<512>;
  }
}

TEST(Sm80Swizzle, LdmatrixPhasesAreConflictFreeForEveryTileShape) {
  for (int cols : {16, 32, 64, 128, 256}) {
    const auto swz = swizzle_for(cols);
    for (int rows : {16, 32, 64, 128, 256}) {
      for (int r0 = 0; r0 < rows; r0 += 8) {
        for (int c = 0; c < cols; c += 8) {
          ASSERT_EQ(distinct_banks(swz, cols, r0, c), 32) << "tile " << rows << "x" << cols << " rows " << r0 << ".."
                                                           << r0 + 7 << " column " << c;
        }
      }
    }
  }
}

TEST(Sm80Swizzle, WithoutItTheSameReadsConflict) {
  // The identity layout puts rows of 64, 128 or 256 bytes on the same banks: the test above can fail.
  const auto identity = [](unsigned o) { return o; };
  for (int cols : {32, 64, 128}) EXPECT_LT(distinct_banks(identity, cols, 0, 0), 32) << cols;
}

TEST(Sm80Swizzle, IsAPermutationOfChunksWithinEach128ByteLine) {
  // Same bytes, other places: a bijection that moves only whole 16-byte chunks and stays in its 128-byte line,
  // so a 128-byte-aligned tile stays where it was allocated.
  for (int cols : {16, 32, 64, 128, 256}) {
    const auto swz = swizzle_for(cols);
    std::set<unsigned> seen;
    for (unsigned o = 0; o < 16384; o += 2) {
      const unsigned s = swz(o);
      EXPECT_EQ(s / 128, o / 128);
      EXPECT_EQ(s % 16, o % 16);
      EXPECT_TRUE(seen.insert(s).second) << o;
    }
  }
}

}  // namespace

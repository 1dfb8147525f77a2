// sm90/staging.cuh on the host: every consumer lane's staging writes (stmatrix, stmatrix .trans with its x2 tail,
// st.shared.b32), taking the accumulator fragment and stmatrix's 8x8 matrices as PTX defines them, followed by the
// TMA store's 128-byte swizzled boxes of C or by the warpgroups' own staged stores, put every element of the tile at
// its place in C, row-major and column-major, for every BLOCK_N the family declares and its staging rounds.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "backends/cuda/kernels/sm90/staging.cuh"
#include "backends/cuda/sm90/sm90_family.hpp"

namespace tileforge::cuda {
namespace {

using tf::sm90::pair_offset;
using tf::sm90::staged_offset;
using tf::sm90::stmatrix_col_offset;
using tf::sm90::stmatrix_row_offset;

// The tile's element (row, col) as a unique non-zero value (rows and columns below 512).
int32_t value(int row, int col) { return row * 512 + col + 1; }

// One consumer warpgroup's tile of wg_m rows x bn columns, staged in `rounds` rounds, C row- or column-major.
struct Tile {
  int wg_m, bn, rounds;
  bool col;
  int group_cols() const { return bn / rounds; }
};

// The staging region after the four warps' writes of round g (16-bit slots, -1 where nothing was written).
std::vector<int32_t> staged(const Tile& t, int g, bool stmatrix) {
  const int gc = t.group_cols(), jg = gc / 8, m_iters = t.wg_m / 64;
  std::vector<int32_t> smem(size_t(t.wg_m) * size_t(gc), -1);
  auto put = [&](unsigned byte, int row, int col) {
    ASSERT_EQ(byte % 2, 0u);
    ASSERT_LT(byte / 2, smem.size()) << "row " << row << " col " << col;
    EXPECT_EQ(smem[byte / 2], -1) << "written twice: row " << row << " col " << col;
    smem[byte / 2] = value(row, g * gc + col);
  };
  for (int warp = 0; warp < 4; ++warp) {
    for (int mi = 0; mi < m_iters; ++mi) {
      const int row0 = mi * 64 + warp * 16;  // the warp's 16 rows of m64 block mi
      if (t.col) {
        // stmatrix .x4 .trans (.x2 for an odd last block): lane 8b + k gives the line of column k of matrix b, which
        // receives that column's 8 rows; matrix b is rows + 8 (b % 2) of column block jj + b / 2.
        for (int jj = 0; jj < jg; jj += 2) {
          const int matrices = jj + 1 < jg ? 4 : 2;
          for (int b = 0; b < matrices; ++b) {
            for (int k = 0; k < 8; ++k) {
              const unsigned line = stmatrix_col_offset(gc, warp, 8 * b + k, mi, jj);
              for (int r = 0; r < 8; ++r) put(line + 2 * r, row0 + 8 * (b % 2) + r, (jj + b / 2) * 8 + k);
            }
          }
        }
      } else if (stmatrix) {
        // stmatrix .x4: lane 8b + k gives the line of row k of matrix b, which receives that row's 8 columns.
        for (int jj = 0; jj < jg; jj += 2) {
          for (int b = 0; b < 4; ++b) {
            for (int k = 0; k < 8; ++k) {
              const unsigned line = stmatrix_row_offset(t.wg_m, warp, 8 * b + k, mi, jj);
              for (int c = 0; c < 8; ++c) put(line + 2 * c, row0 + 8 * (b % 2) + k, (jj + b / 2) * 8 + c);
            }
          }
        }
      } else {
        // st.shared.b32: the lane's pair, columns 2 (lane % 4) and + 1 of rows lane / 4 and + 8.
        for (int jj = 0; jj < jg; ++jj) {
          for (int lane = 0; lane < 32; ++lane) {
            for (int h = 0; h < 2; ++h) {
              const unsigned at = pair_offset(t.wg_m, warp, lane, mi, jj, h);
              for (int e = 0; e < 2; ++e) put(at + 2 * e, row0 + lane / 4 + 8 * h, jj * 8 + 2 * (lane % 4) + e);
            }
          }
        }
      }
    }
  }
  return smem;
}

// Round g's staging region read back as the TMA store reads its boxes (128-byte swizzle from a 1024-byte aligned base:
// 16-byte chunk j of box line o at chunk j ^ (o % 8)) and as the staged stores read it (staged_offset), into C.
void expect_placed(const Tile& t, int g, const std::vector<int32_t>& smem) {
  const int gc = t.group_cols();
  const int boxes = t.col ? t.wg_m / 64 : gc / 64, box_lines = t.col ? gc : t.wg_m;
  for (int q = 0; q < boxes; ++q) {
    for (int o = 0; o < box_lines; ++o) {
      for (int x = 0; x < 64; ++x) {
        const size_t byte = size_t(q) * box_lines * 128 + size_t(o) * 128 + size_t(((x / 8) ^ (o % 8)) * 16) + (x % 8) * 2;
        // Row-major boxes: 64 columns x the warpgroup's rows; column-major: 64 rows x the round's columns.
        const int row = t.col ? q * 64 + x : o, col = t.col ? o : q * 64 + x;
        ASSERT_EQ(smem[byte / 2], value(row, g * gc + col)) << "TMA box " << q << " line " << o << " element " << x;
      }
    }
  }
  for (int line = 0; line < box_lines; ++line) {
    for (int e = 0; e < (t.col ? t.wg_m : gc); ++e) {
      const int row = t.col ? e : line, col = t.col ? line : e;
      ASSERT_EQ(smem[staged_offset(box_lines, line, e) / 2], value(row, g * gc + col)) << line << " " << e;
    }
  }
}

TEST(Sm90Staging, EveryLanesWritesPutEveryElementWhereTheStoresOfCReadIt) {
  std::vector<int64_t> widths = sm90_narrow_block_n();
  for (int64_t bn : {64, 128, 192, 256}) widths.push_back(bn);
  int tiles = 0;
  for (bool col : {false, true}) {
    for (int wg_m : {64, 128, 192}) {
      for (int64_t bn : widths) {
        if (!col && bn % 64 != 0) continue;  // row-major staging: whole 64-column boxes
        if (wg_m / 64 * bn / 2 > 128) continue;  // at most 128 accumulators per thread
        for (int64_t split : {1, 2}) {
          const int rounds = int(sm90_epi_rounds(bn, split));
          if (split == 2 && rounds == 1) continue;
          const Tile t{wg_m, int(bn), rounds, col};
          for (bool stmatrix : {true, false}) {
            if (col && !stmatrix) continue;  // a column-major staging tile is written by stmatrix .trans
            for (int g = 0; g < rounds; ++g) {
              const std::vector<int32_t> smem = staged(t, g, stmatrix);
              if (HasFatalFailure()) return;
              expect_placed(t, g, smem);
              if (HasFatalFailure()) {
                ADD_FAILURE() << (col ? "column" : "row") << "-major wg_m " << wg_m << " BLOCK_N " << bn
                              << " rounds " << rounds << (stmatrix ? " stmatrix" : " st.shared.b32");
                return;
              }
            }
            ++tiles;
          }
        }
      }
    }
  }
  EXPECT_GE(tiles, 30);
}

// The row-major writes as store_packed computes them, with the lane's row hoisted out of its loop: the swizzle row
// taken from the lane's bits is the line's.
TEST(Sm90Staging, HoistedRowsSwizzleAsTheirLines) {
  for (int warp = 0; warp < 4; ++warp) {
    for (int mi = 0; mi < 3; ++mi) {
      for (int lane = 0; lane < 32; ++lane) {
        const int m = lane / 8, r = mi * 64 + warp * 16 + (m % 2) * 8 + lane % 8, r0 = mi * 64 + warp * 16 + lane / 4;
        for (int jj = 0; jj < 32; jj += 2) {
          EXPECT_EQ(stmatrix_row_offset(192, warp, lane, mi, jj), staged_offset(192, r, (jj + m / 2) * 8));
          EXPECT_EQ(pair_offset(192, warp, lane, mi, jj, 1), staged_offset(192, r0 + 8, jj * 8 + 2 * (lane % 4)));
        }
      }
    }
  }
}

}  // namespace
}  // namespace tileforge::cuda

// sm90 family: where each element of C lies in the TMA-store epilogues' staging tile, in a header the host compiler
// also reads, so that the bank model (sm90_banks.cpp) and the tests use the kernel's own offsets.
#pragma once

// Host and device, as sm90/schedule.cuh defines it; no include, so that the host's layers that cannot see the kernels'
// include root read this header by its path.
#ifndef TF_SM90_HD
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define TF_SM90_HD __host__ __device__
#else
#define TF_SM90_HD
#endif
#endif

namespace tf::sm90 {

// The staging tile of one consumer warpgroup and round is made of lines of 128 bytes (64 16-bit elements), grouped in
// blocks of `block_lines` lines, each block a box of the map of C, 128-byte swizzled as TMA reads it (16-byte chunk j
// of line l at chunk j ^ (l % 8), counted from a 1024-byte aligned base). A line is a row of the tile (row-major C:
// `block_lines` = the warpgroup's rows, element e = column e of the round) or a column (column-major C:
// `block_lines` = the round's columns, element e = row e of the warpgroup). Byte offset of element e of line `line`.
// `line8` is line % 8, which a caller may know from fewer bits (a lane's) than the compiler can prove.
TF_SM90_HD constexpr unsigned staged_offset(int block_lines, int line, int e, int line8) {
  return static_cast<unsigned>((e / 64) * (block_lines * 128) + line * 128 + ((((e % 64) / 8) ^ line8) << 4) +
                               (e % 8) * 2);
}
TF_SM90_HD constexpr unsigned staged_offset(int block_lines, int line, int e) {
  return staged_offset(block_lines, line, e, line % 8);
}

// The staging writes of consumer warp `warp` (0-3 in its warpgroup), lane `lane`, for its 16 rows of m64 block mi
// (the accumulators' fragment: rows lane / 4 and + 8, columns 2 (lane % 4) and + 1 of each 8-column block). The
// row-major ones are computed by sm90/epilogue.cuh's store_packed in this form with the lane's row hoisted out of
// its loop (which keeps the measured instances' code as it was).

// stmatrix .x4 of 8-column blocks jj and jj + 1 of the round (row-major C): the lane gives row lane % 8 of 8x8 block
// lane / 8, the blocks being (rows 0-7, jj), (rows 8-15, jj), (rows 0-7, jj + 1), (rows 8-15, jj + 1).
TF_SM90_HD constexpr unsigned stmatrix_row_offset(int wg_m, int warp, int lane, int mi, int jj) {
  const int m = lane / 8;
  return staged_offset(wg_m, mi * 64 + warp * 16 + (m % 2) * 8 + lane % 8, (jj + m / 2) * 8, lane % 8);
}

// stmatrix .x4 .trans of the same blocks (column-major C): the lane gives the staging line of column lane % 8 of
// block lane / 8, which receives that column's 8 rows (for .x2, the first two blocks: lanes 0-15).
TF_SM90_HD constexpr unsigned stmatrix_col_offset(int group_cols, int warp, int lane, int mi, int jj) {
  const int m = lane / 8;
  return staged_offset(group_cols, (jj + m / 2) * 8 + lane % 8, mi * 64 + warp * 16 + (m % 2) * 8, lane % 8);
}

// st.shared.b32 of the lane's pair in 8-column block jj, rows + 8 h (row-major C).
TF_SM90_HD constexpr unsigned pair_offset(int wg_m, int warp, int lane, int mi, int jj, int h) {
  return staged_offset(wg_m, mi * 64 + warp * 16 + lane / 4 + 8 * h, jj * 8 + 2 * (lane % 4), (lane / 4) % 8);
}

}  // namespace tf::sm90

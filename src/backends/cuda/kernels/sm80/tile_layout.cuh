// Where each thread of an sm80 kernel copies and reads in a stage's shared-memory tiles: host- and device-side,
// so unit tests can prove, for every tile shape the family allows, that the cheap address forms the kernel uses
// (a per-thread base computed once, plus compile-time offsets) equal the plain swizzled addresses.
#pragma once

#include "common/swizzle.cuh"

namespace tf::sm80 {

// ---- global -> shared copies -------------------------------------------------------------------------------

// A ROWS x COLS tile of 16-bit elements (COLS contiguous) copied in chunks of VEC bytes by THREADS threads:
// chunk i of thread t is chunk t + i * THREADS in row-major order. THREADS and COLS / (VEC / 2) are powers of
// two, so either a row's chunks divide the threads (each thread's chunks share a column, THREADS / CHUNKS_PER_ROW
// rows apart) or the threads divide a row's chunks (a thread's chunks run along one row, THREADS chunks apart,
// then on to the next row). Either way chunk i of every thread sits at (row_off(i), col_off(i)) from the
// thread's first chunk, with offsets that do not depend on the thread.
template <int ROWS, int COLS, int VEC, int THREADS>
struct ChunkMap {
  static constexpr int EPC = VEC / 2;  // elements per chunk
  static constexpr int CHUNKS_PER_ROW = COLS / EPC;
  static constexpr int PER_THREAD = ROWS * CHUNKS_PER_ROW / THREADS;
  static_assert((ROWS * CHUNKS_PER_ROW) % THREADS == 0, "every thread copies the same number of chunks");
  static_assert((CHUNKS_PER_ROW & (CHUNKS_PER_ROW - 1)) == 0 && (THREADS & (THREADS - 1)) == 0,
                "chunks per row and threads are powers of two");

  static TF_HOST_DEVICE constexpr int first_row(int tid) { return tid / CHUNKS_PER_ROW; }
  static TF_HOST_DEVICE constexpr int first_col(int tid) { return (tid % CHUNKS_PER_ROW) * EPC; }
  static TF_HOST_DEVICE constexpr int row_off(int i) {
    return CHUNKS_PER_ROW <= THREADS ? i * (THREADS / CHUNKS_PER_ROW) : i / (CHUNKS_PER_ROW / THREADS);
  }
  static TF_HOST_DEVICE constexpr int col_off(int i) {
    return CHUNKS_PER_ROW <= THREADS ? 0 : (i % (CHUNKS_PER_ROW / THREADS)) * THREADS * EPC;
  }
  // Byte offsets in the unswizzled tile: the thread's first chunk, and chunk i relative to it.
  static TF_HOST_DEVICE constexpr unsigned first_offset(int tid) {
    return static_cast<unsigned>((first_row(tid) * COLS + first_col(tid)) * 2);
  }
  static TF_HOST_DEVICE constexpr unsigned chunk_offset(int i) {
    return static_cast<unsigned>((row_off(i) * COLS + col_off(i)) * 2);
  }
};

// One operand's copy state, as one thread sees it. The stored tile is ROWS x COLS 16-bit elements with COLS
// contiguous in global and shared memory; K runs along its rows (K_ROWS: column-major A, row-major B) or its
// columns. Everything that does not change between k-tiles is computed once: the source address of the thread's
// first chunk (advanced by one tile per k-tile: BK elements, or BK rows), how many matrix rows and columns remain
// from that chunk on, and its swizzled shared-memory address. Chunk i then sits at compile-time offsets from
// these (ChunkMap), and its validity is two compares against the remaining counts: elements outside the matrix
// (M, N, and K past its end in the last k-tile) are zero-filled and never read. The kernel's TileCopy issues the
// copies; tests/backends/cuda/tile_layout_test.cpp replays them on the host against the plain tile.
template <int ROWS, int COLS, int VEC, int THREADS, bool K_ROWS>
struct CopyState {
  using Map = ChunkMap<ROWS, COLS, VEC, THREADS>;
  static constexpr int EPC = Map::EPC, CHUNKS = Map::PER_THREAD;
  static constexpr unsigned ROW_BYTES = COLS * 2;

  const unsigned short* src;  // the thread's first chunk in the k-tile copied next (may lie outside the matrix)
  int rows_left, cols_left;   // matrix rows and columns from that chunk on (<= 0: none)
  unsigned smem;              // shared-memory address of the thread's first chunk in stage 0's tile

  // Tile origin (row0, col0) of the first k-tile in a rows x cols matrix `g` with leading dimension ld; `tile`
  // is the 128-byte-aligned shared-memory address of the operand's tile in stage 0.
  TF_HOST_DEVICE void init(const unsigned short* g, long long ld, int row0, int col0, int rows, int cols,
                           unsigned tile, int tid) {
    const int r = Map::first_row(tid), c = Map::first_col(tid);
    src = g + static_cast<long long>(row0 + r) * ld + (col0 + c);
    rows_left = rows - row0 - r;
    cols_left = cols - col0 - c;
    smem = tile + swizzle_128b<ROW_BYTES>(Map::first_offset(tid));
  }

  // On to the next k-tile.
  TF_HOST_DEVICE void advance(long long ld) {
    if constexpr (K_ROWS) {
      src += ROWS * ld;
      rows_left -= ROWS;
    } else {
      src += COLS;
      cols_left -= COLS;
    }
  }

  // Chunk i: how many of its EPC elements lie inside the matrix (they come first; the rest is zero-filled),
  // where they start in global memory, and where the chunk goes in the stage `stage_off` bytes from stage 0.
  struct Chunk {
    int elements;
    unsigned dst;
    const unsigned short* src;
  };
  TF_HOST_DEVICE Chunk chunk(int i, unsigned stage_off, long long ld) const {
    int n = cols_left - Map::col_off(i);
    n = n < 0 ? 0 : (n > EPC ? EPC : n);
    if (Map::row_off(i) >= rows_left) n = 0;
    const unsigned off = Map::chunk_offset(i);
    const unsigned dst = ((smem + stage_off) ^ swizzle_xor<ROW_BYTES>(off)) + swizzle_add<ROW_BYTES>(off);
    return {n, dst, src + Map::row_off(i) * ld + Map::col_off(i)};
  }
};

// ---- ldmatrix fragment reads ---------------------------------------------------------------------------------

struct RowCol {
  int row, col;
};

// Per-lane coordinates of one ldmatrix.x4 in a warp's operand tile, split into the part fixed for the whole
// kernel (lane and warp: computed once) and the compile-time step (fragment index and k offset):
//   A as [BM][BK] (A_ROW): lanes 0-15 give rows 0-15 at k, lanes 16-31 the same rows at k+8 (ldmatrix);
//   A as [BK][BM]: lanes give k rows 0-7 and 8-15 at m, then the same at m+8 (ldmatrix.trans);
//   B as [BK][BN] (B_ROW): lanes give k rows 0-15 at n, then at n+8 (ldmatrix.trans): two 8-column fragments;
//   B as [BN][BK]: lanes give n rows 0-7 at k and k+8, then n rows 8-15 (ldmatrix): two 8-column fragments.
// `warp_off` is the warp's first row of C (A) or column of C (B) inside the block tile; i counts 16-row A
// fragments, j 8-column B fragments (even: one ldmatrix.x4 serves j and j+1); kk is the k offset (multiple of 16).
TF_HOST_DEVICE constexpr RowCol a_frag_lane(bool a_row, int lane, int warp_off) {
  return a_row ? RowCol{warp_off + (lane & 15), (lane >> 4) << 3}
               : RowCol{(lane & 7) + ((lane >> 4) << 3), warp_off + (((lane >> 3) & 1) << 3)};
}
TF_HOST_DEVICE constexpr RowCol a_frag_step(bool a_row, int i, int kk) {
  return a_row ? RowCol{i * 16, kk} : RowCol{kk, i * 16};
}
TF_HOST_DEVICE constexpr RowCol b_frag_lane(bool b_row, int lane, int warp_off) {
  return b_row ? RowCol{(lane & 7) + (((lane >> 3) & 1) << 3), warp_off + ((lane >> 4) << 3)}
               : RowCol{warp_off + (lane & 7) + ((lane >> 4) << 3), ((lane >> 3) & 1) << 3};
}
TF_HOST_DEVICE constexpr RowCol b_frag_step(bool b_row, int j, int kk) {
  return b_row ? RowCol{kk, j * 8} : RowCol{j * 8, kk};
}

}  // namespace tf::sm80

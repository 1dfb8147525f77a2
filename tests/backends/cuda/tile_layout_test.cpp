// Where the sm80 kernel's threads copy into and read from shared memory (kernels/sm80/tile_layout.cuh), proven
// on the host for every tile shape the family allows: each thread's chunks cover the tile exactly once, and the
// cheap address forms the kernel uses (a per-thread base computed once, then one XOR and an immediate offset per
// access) equal the plain swizzled addresses of the same elements.
#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "sm80/tile_layout.cuh"

namespace {

using tf::swizzle_128b;
using tf::swizzle_add;
using tf::swizzle_xor;

// The swizzle and its split for a row length known only at run time.
struct Swizzle {
  unsigned (*full)(unsigned);
  unsigned (*x)(unsigned);
  unsigned (*add)(unsigned);
  // swizzle(base + offset), as the kernel computes it from swizzle(base), with a 128-byte-aligned tile at `tile`.
  unsigned split(unsigned tile, unsigned base, unsigned offset) const { return ((tile + full(base)) ^ x(offset)) + add(offset); }
};
template <unsigned kRowBytes>
Swizzle swizzle_of() {
  return {swizzle_128b<kRowBytes>, swizzle_xor<kRowBytes>, swizzle_add<kRowBytes>};
}
Swizzle swizzle_for_cols(int cols) {
  switch (cols) {
    case 16: return swizzle_of<32>();
    case 32: return swizzle_of<64>();
    case 64: return swizzle_of<128>();
    case 128: return swizzle_of<256>();
    default: return swizzle_of<512>();
  }
}

std::string fmt(int rows, int cols, int vec, int threads, bool k_rows) {
  return "tile " + std::to_string(rows) + "x" + std::to_string(cols) + " v" + std::to_string(vec) + " t" +
         std::to_string(threads) + (k_rows ? " (K along rows)" : " (K along columns)");
}

constexpr int kSizes[] = {16, 32, 64, 128, 256};  // BLOCK_M, BLOCK_N (and BLOCK_K up to 64)
constexpr unsigned kTileBase = 3 * 1024 + 128;    // any 128-byte-aligned tile address in shared memory

// One chunk map's values, read out of its template: the checks below are plain functions, so that the 500 maps
// cost one instantiation of a few lines each rather than one of the whole check (the file's build time).
struct ChunkMapValues {
  int rows, cols, vec, threads, per_thread, chunks_per_row, epc;
  std::vector<int> first_row, first_col, row_off, col_off;
  std::vector<unsigned> first_offset, chunk_offset;
};

template <int ROWS, int COLS, int VEC, int THREADS>
ChunkMapValues chunk_map_values() {
  using Map = tf::sm80::ChunkMap<ROWS, COLS, VEC, THREADS>;
  ChunkMapValues v{ROWS, COLS, VEC, THREADS, Map::PER_THREAD, Map::CHUNKS_PER_ROW, Map::EPC, {}, {}, {}, {}, {}, {}};
  for (int t = 0; t < THREADS; ++t) {
    v.first_row.push_back(Map::first_row(t));
    v.first_col.push_back(Map::first_col(t));
    v.first_offset.push_back(Map::first_offset(t));
  }
  for (int i = 0; i < Map::PER_THREAD; ++i) {
    v.row_off.push_back(Map::row_off(i));
    v.col_off.push_back(Map::col_off(i));
    v.chunk_offset.push_back(Map::chunk_offset(i));
  }
  return v;
}

void check_chunk_map(const ChunkMapValues& m, int& checked) {
  const Swizzle swz = swizzle_for_cols(m.cols);
  const std::string what = std::to_string(m.rows) + "x" + std::to_string(m.cols) + " v" + std::to_string(m.vec) +
                           " t" + std::to_string(m.threads);
  std::set<std::pair<int, int>> seen;
  for (int t = 0; t < m.threads; ++t) {
    for (int i = 0; i < m.per_thread; ++i) {
      // Chunk t + i * THREADS in row-major order: the order that keeps a warp's copies contiguous.
      const int id = t + i * m.threads;
      const int row = id / m.chunks_per_row, col = (id % m.chunks_per_row) * m.epc;
      ASSERT_EQ(m.first_row[t] + m.row_off[i], row) << what;
      ASSERT_EQ(m.first_col[t] + m.col_off[i], col) << what;
      ASSERT_LT(row, m.rows);
      ASSERT_TRUE(seen.insert({row, col}).second);
      const unsigned plain = kTileBase + swz.full(static_cast<unsigned>((row * m.cols + col) * 2));
      ASSERT_EQ(swz.split(kTileBase, m.first_offset[t], m.chunk_offset[i]), plain)
          << what << " thread " << t << " chunk " << i;
      ++checked;
    }
  }
  EXPECT_EQ(seen.size(), size_t(m.rows * m.chunks_per_row));
}

template <int ROWS, int COLS, int VEC, int THREADS>
void check_if_legal(int& checked) {
  constexpr int chunks = ROWS * COLS * 2 / VEC;
  if constexpr (chunks % THREADS == 0) check_chunk_map(chunk_map_values<ROWS, COLS, VEC, THREADS>(), checked);
}
template <int ROWS, int COLS, int VEC>
void check_threads(int& checked) {
  check_if_legal<ROWS, COLS, VEC, 32>(checked);
  check_if_legal<ROWS, COLS, VEC, 64>(checked);
  check_if_legal<ROWS, COLS, VEC, 128>(checked);
  check_if_legal<ROWS, COLS, VEC, 256>(checked);
  check_if_legal<ROWS, COLS, VEC, 512>(checked);
}
template <int ROWS, int COLS>
void check_vecs(int& checked) {
  check_threads<ROWS, COLS, 2>(checked);
  check_threads<ROWS, COLS, 4>(checked);
  check_threads<ROWS, COLS, 8>(checked);
  check_threads<ROWS, COLS, 16>(checked);
}
template <int ROWS>
void check_cols(int& checked) {
  check_vecs<ROWS, 16>(checked);
  check_vecs<ROWS, 32>(checked);
  check_vecs<ROWS, 64>(checked);
  check_vecs<ROWS, 128>(checked);
  check_vecs<ROWS, 256>(checked);
}

TEST(Sm80TileLayout, CopyChunksCoverEachTileOnceAtTheirSwizzledAddresses) {
  // Every stored tile: [BM][BK], [BK][BM], [BK][BN], [BN][BK] with BM, BN in 16..256 and BK in 16..64, i.e. rows
  // and columns of 16..256 elements; 1 to 16 warps; 2- to 16-byte chunks.
  int checked = 0;
  check_cols<16>(checked);
  check_cols<32>(checked);
  check_cols<64>(checked);
  check_cols<128>(checked);
  check_cols<256>(checked);
  EXPECT_GT(checked, 1000000);
}

// What one thread's chunk() gave: the shared-memory address, the source as an offset into the matrix (-1: none)
// and the elements read.
struct ChunkRecord {
  unsigned dst;
  long long at;
  int elements;
};
struct TileShape {
  int rows, cols, vec, threads, chunks;
  bool k_rows;
};
using RecordFn = std::vector<ChunkRecord> (*)(const unsigned short* g, long long ld, int row0, int col0, int rows,
                                              int cols, unsigned tile, int k_tiles);

// The kernel's side, templated on the tile: every chunk of every thread, k-tile by k-tile (k-tile, thread, chunk).
template <int ROWS, int COLS, int VEC, int THREADS, bool K_ROWS>
std::vector<ChunkRecord> record_copies(const unsigned short* g, long long ld, int row0, int col0, int rows, int cols,
                                       unsigned tile, int k_tiles) {
  using State = tf::sm80::CopyState<ROWS, COLS, VEC, THREADS, K_ROWS>;
  std::vector<State> threads(THREADS);
  for (int t = 0; t < THREADS; ++t) threads[t].init(g, ld, row0, col0, rows, cols, tile, t);
  std::vector<ChunkRecord> out;
  for (int kt = 0; kt < k_tiles; ++kt) {
    for (const State& st : threads) {
      for (int i = 0; i < State::CHUNKS; ++i) {
        const auto chunk = st.chunk(i, 0, ld);
        out.push_back({chunk.dst, chunk.elements > 0 ? chunk.src - g : -1, chunk.elements});
      }
    }
    for (State& st : threads) st.advance(ld);
  }
  return out;
}

// The checks, one plain function for every tile. Replays one operand's copies on the host exactly as each thread
// of the kernel issues them (CopyState: init, then per k-tile the chunk() of every chunk, then advance) into a
// simulated shared-memory tile, and compares it, k-tile by k-tile, with the plain tile: the matrix's elements where the tile lies inside
// the matrix, zeros elsewhere. Every chunk must read only inside the matrix (its padding up to the leading
// dimension holds a marker that must never show up) and every tile element must be written exactly once.
// The stored matrix is rows x cols with leading dimension ld; the block's tile starts at (row0, col0) and moves
// by ROWS rows (K_ROWS) or COLS columns per k-tile.
void check_copies(const TileShape& tile, RecordFn record, int rows, int cols, long long ld, int row0, int col0) {
  const int ROWS = tile.rows, COLS = tile.cols, VEC = tile.vec;  // the names of the kernel's template
  const int EPC = VEC / 2;
  constexpr unsigned kTile = 2048;  // the tile's shared address (128-byte aligned)
  const std::string what = fmt(ROWS, COLS, VEC, tile.threads, tile.k_rows) + " matrix " + std::to_string(rows) + "x" +
                           std::to_string(cols) + " ld " + std::to_string(ld) + " origin " + std::to_string(row0) +
                           "," + std::to_string(col0);
  const int k_extent = tile.k_rows ? rows - row0 : cols - col0;
  const int k_tiles = (k_extent + (tile.k_rows ? ROWS : COLS) - 1) / (tile.k_rows ? ROWS : COLS);
  // Room for the addresses of chunks outside the matrix (computed, never read).
  std::vector<unsigned short> g(std::size_t((rows + 2 * ROWS + 2) * ld + 2 * COLS + 64), 0xDEAD);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) g[std::size_t(r * ld + c)] = static_cast<unsigned short>(1 + (r * 131 + c * 7) % 65000);
  const std::vector<ChunkRecord> chunks = record(g.data(), ld, row0, col0, rows, cols, kTile, k_tiles);
  ASSERT_EQ(chunks.size(), std::size_t(k_tiles) * tile.threads * tile.chunks) << what;
  const Swizzle swz = swizzle_for_cols(COLS);
  std::size_t next = 0;
  for (int kt = 0; kt < k_tiles; ++kt) {
    std::vector<unsigned short> smem(ROWS * COLS, 0xBEEF);
    std::vector<int> writes(ROWS * COLS, 0);
    for (int t = 0; t < tile.threads; ++t) {
      for (int i = 0; i < tile.chunks; ++i) {
        const ChunkRecord& chunk = chunks[next++];
        const int n = chunk.elements;
        const unsigned dst = chunk.dst;
        ASSERT_GE(dst, kTile) << what;
        ASSERT_LT(dst, kTile + ROWS * COLS * 2) << what;
        ASSERT_EQ(dst % VEC, 0u) << what;
        ASSERT_GE(n, 0) << what;
        ASSERT_LE(n, EPC) << what;
        if (n > 0) {
          const long long at = chunk.at;
          ASSERT_GE(at, 0) << what;
          ASSERT_LT(at / ld, rows) << what << " k-tile " << kt << " chunk " << i;
          ASSERT_LE(at % ld + n, cols) << what << " k-tile " << kt << " chunk " << i;
          ASSERT_EQ((at * 2) % VEC, 0) << what << ": a misaligned source";
        }
        for (int e = 0; e < EPC; ++e) {
          const unsigned el = (dst - kTile) / 2 + e;
          smem[el] = e < n ? g[std::size_t(chunk.at + e)] : 0;
          ++writes[el];
        }
      }
    }
    const int tr0 = tile.k_rows ? row0 + kt * ROWS : row0, tc0 = tile.k_rows ? col0 : col0 + kt * COLS;
    for (int r = 0; r < ROWS; ++r) {
      for (int c = 0; c < COLS; ++c) {
        const unsigned el = swz.full(static_cast<unsigned>((r * COLS + c) * 2)) / 2;
        const int gr = tr0 + r, gc = tc0 + c;
        const unsigned short want = gr < rows && gc < cols ? g[std::size_t(gr * ld + gc)] : 0;
        ASSERT_EQ(writes[el], 1) << what << " k-tile " << kt << " element " << r << "," << c;
        ASSERT_EQ(smem[el], want) << what << " k-tile " << kt << " element " << r << "," << c;
      }
    }
  }
}

template <int ROWS, int COLS, int VEC, int THREADS, bool K_ROWS>
void replay_copies(int rows, int cols, long long ld, int row0, int col0) {
  using State = tf::sm80::CopyState<ROWS, COLS, VEC, THREADS, K_ROWS>;
  check_copies({ROWS, COLS, VEC, THREADS, State::CHUNKS, K_ROWS}, &record_copies<ROWS, COLS, VEC, THREADS, K_ROWS>,
               rows, cols, ld, row0, col0);
}

// The four operand roles of one block tile (BM x BN x BK, THREADS) at VEC bytes: A as [BM][BK] (rows M, K along
// the columns) or [BK][BM] (rows K), B as [BK][BN] (rows K) or [BN][BK] (rows N), on M x N x K with leading
// dimensions `pad`-rounded; the block at (m0, n0).
template <int BM, int BN, int BK, int VEC, int THREADS>
void replay_block(int m, int n, int k, int pad, int m0, int n0) {
  auto ld = [pad](int cols) { return (cols + pad - 1) / pad * pad; };
  replay_copies<BM, BK, VEC, THREADS, false>(m, k, ld(k), m0, 0);  // A row-major
  replay_copies<BK, BM, VEC, THREADS, true>(k, m, ld(m), 0, m0);   // A column-major
  replay_copies<BK, BN, VEC, THREADS, true>(k, n, ld(n), 0, n0);   // B row-major
  replay_copies<BN, BK, VEC, THREADS, false>(n, k, ld(k), n0, 0);  // B column-major
}

template <int BM, int BN, int BK, int THREADS>
void replay_widths(int m, int n, int k, int m0, int n0) {
  // Leading dimensions rounded to 8 elements: every width is legal and chunks straddle the ragged edges.
  replay_block<BM, BN, BK, 16, THREADS>(m, n, k, 8, m0, n0);
  replay_block<BM, BN, BK, 8, THREADS>(m, n, k, 4, m0, n0);
  replay_block<BM, BN, BK, 4, THREADS>(m, n, k, 2, m0, n0);
  replay_block<BM, BN, BK, 2, THREADS>(m, n, k, 1, m0, n0);  // tight, odd leading dimensions
}

TEST(Sm80TileLayout, CopiesReplayedOnTheHostFillEachTileWithTheMatrixAndZerosOnly) {
  // 301 x 263 x 517: ragged in M, N and K; the first block and the last (partial) one along M and N.
  for (auto [m0, n0] : {std::pair{0, 0}, std::pair{256, 256}}) {
    replay_widths<128, 256, 64, 256>(301, 263, 517, m0, n0);
    replay_widths<256, 128, 64, 256>(301, 263, 517, m0 == 0 ? 0 : 256, n0 == 0 ? 0 : 256);
    replay_widths<128, 256, 32, 256>(301, 263, 517, m0, n0);
    replay_widths<128, 128, 64, 128>(301, 263, 517, m0, n0);
    replay_widths<64, 128, 32, 128>(301, 263, 517, m0 / 2, n0);
    replay_widths<16, 64, 32, 64>(301, 263, 517, m0, n0);
  }
  // K smaller than one k-tile, and a block whose tile starts past a short matrix's edge in one dimension.
  replay_widths<128, 128, 64, 128>(5, 7, 3, 0, 0);
  replay_widths<64, 64, 64, 128>(130, 70, 33, 128, 64);
}

// One operand's ldmatrix reads: for each warp, lane, fragment and k-step, the kernel's address (the lane's
// first address swizzled once, then XOR and add of the step's split) against the plain swizzle.
void check_fragments(bool is_a, bool row_major, int block, int bk, int warps, int& checked) {
  const int warp_tile = block / warps;
  const int cols = is_a ? (row_major ? bk : block) : (row_major ? block : bk);
  const Swizzle swz = swizzle_for_cols(cols);
  const int frags = is_a ? warp_tile / 16 : warp_tile / 8;
  const int frag_step = is_a ? 1 : 2;  // one ldmatrix.x4 reads two 8-column B fragments
  for (int w = 0; w < warps; ++w) {
    for (int lane = 0; lane < 32; ++lane) {
      const tf::sm80::RowCol l = is_a ? tf::sm80::a_frag_lane(row_major, lane, w * warp_tile)
                                      : tf::sm80::b_frag_lane(row_major, lane, w * warp_tile);
      const unsigned base = static_cast<unsigned>((l.row * cols + l.col) * 2);
      for (int f = 0; f < frags; f += frag_step) {
        for (int kk = 0; kk < bk; kk += 16) {
          const tf::sm80::RowCol s = is_a ? tf::sm80::a_frag_step(row_major, f, kk) : tf::sm80::b_frag_step(row_major, f, kk);
          const int row = l.row + s.row, col = l.col + s.col;
          // Inside the tile, and in the warp's own rows (A) or columns (B) of C.
          ASSERT_LT(row, is_a ? (row_major ? block : bk) : (row_major ? bk : block));
          ASSERT_LT(col, cols);
          const unsigned offset = static_cast<unsigned>((s.row * cols + s.col) * 2);
          const unsigned plain = kTileBase + swz.full(static_cast<unsigned>((row * cols + col) * 2));
          ASSERT_EQ(swz.split(kTileBase, base, offset), plain)
              << (is_a ? "A " : "B ") << (row_major ? "row-major " : "column-major ") << block << "x" << bk << " warps "
              << warps << " warp " << w << " lane " << lane << " fragment " << f << " k " << kk;
          ++checked;
        }
      }
    }
  }
}

TEST(Sm80TileLayout, FragmentReadsMatchThePlainSwizzleForEveryTileShape) {
  int checked = 0;
  for (bool is_a : {true, false}) {
    for (bool row_major : {true, false}) {
      for (int block : kSizes) {
        for (int bk : {16, 32, 64}) {
          for (int warps : {1, 2, 4, 8}) {
            if (block % (16 * warps) != 0) continue;  // the space's whole-fragment constraints
            check_fragments(is_a, row_major, block, bk, warps, checked);
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 50000);
}

TEST(Sm80TileLayout, FragmentLanesAddressTheRowsLdmatrixExpects) {
  // ldmatrix.x4: lanes 8q..8q+7 give the eight row addresses of matrix q. Non-transposed A ([BM][BK]): matrices
  // are (rows 0-7, k 0-7), (rows 8-15, k 0-7), (rows 0-7, k 8-15), (rows 8-15, k 8-15), the mma's a0..a3.
  for (int lane = 0; lane < 32; ++lane) {
    const int q = lane / 8, r = lane % 8;
    const tf::sm80::RowCol a = tf::sm80::a_frag_lane(true, lane, 0);
    EXPECT_EQ(a.row, r + (q & 1) * 8);
    EXPECT_EQ(a.col, (q >> 1) * 8);
    // Transposed A ([BK][BM]): matrix q holds k rows (q >> 1) * 8.. at m columns (q & 1) * 8..
    const tf::sm80::RowCol at = tf::sm80::a_frag_lane(false, lane, 0);
    EXPECT_EQ(at.row, r + (q >> 1) * 8);
    EXPECT_EQ(at.col, (q & 1) * 8);
    // B ([BK][BN], .trans): matrices (k 0-7, n 0-7), (k 8-15, n 0-7), (k 0-7, n 8-15), (k 8-15, n 8-15): b0, b1
    // of fragment j, then of fragment j+1.
    const tf::sm80::RowCol b = tf::sm80::b_frag_lane(true, lane, 0);
    EXPECT_EQ(b.row, r + (q & 1) * 8);
    EXPECT_EQ(b.col, (q >> 1) * 8);
    // B ([BN][BK]): matrices (n 0-7, k 0-7), (n 0-7, k 8-15), (n 8-15, k 0-7), (n 8-15, k 8-15).
    const tf::sm80::RowCol bt = tf::sm80::b_frag_lane(false, lane, 0);
    EXPECT_EQ(bt.row, r + (q >> 1) * 8);
    EXPECT_EQ(bt.col, (q & 1) * 8);
  }
}

}  // namespace

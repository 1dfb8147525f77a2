// The sm80 family's shared-memory addresses for `tileforge banks`: each warp's cp.async copies and ldmatrix reads
// of one k-tile, as kernels/sm80/gemm.cuh computes them.
#include <cstdint>
#include <string>

#include <fmt/format.h>

#include "backends/backend.hpp"
#include "backends/cuda/kernels/common/swizzle.cuh"
#include "plan/bank_conflicts.hpp"

namespace tileforge::cuda {
namespace {

using plan::banks::FamilyAccesses;
using plan::banks::Instruction;
using plan::banks::Issue;
using plan::banks::WarpAccess;
using plan::banks::kWarpSize;

// The kernel's swizzle (common/swizzle.cuh, the very function the kernel calls) for a row length known only at run
// time, with its split into the part XORed into a base and the part added.
struct Swizzle {
  unsigned (*full)(unsigned) = nullptr;
  unsigned (*x)(unsigned) = nullptr;
  unsigned (*add)(unsigned) = nullptr;
};
template <unsigned kRowBytes>
Swizzle swizzle_of() {
  return {tf::swizzle_128b<kRowBytes>, tf::swizzle_xor<kRowBytes>, tf::swizzle_add<kRowBytes>};
}
Expected<Swizzle> swizzle_for(int64_t row_bytes) {
  switch (row_bytes) {
    case 32: return swizzle_of<32>();
    case 64: return swizzle_of<64>();
    case 128: return swizzle_of<128>();
    case 256: return swizzle_of<256>();
    case 512: return swizzle_of<512>();
    default: return invalid_argument(fmt::format("sm80 tiles have rows of 32 to 512 bytes, not {}", row_bytes));
  }
}

// kernels/sm80/tile_layout.cuh's ChunkMap with run-time sizes. That header cannot be included here: it includes
// "common/swizzle.cuh" by its path under kernels/, which this layer's include root does not hold (the tests'
// does). tests/plan/bank_conflicts_test.cpp checks every address below against the header's own functions.
struct ChunkMap {
  int rows, cols, vec, threads;
  int epc() const { return vec / 2; }
  int per_row() const { return cols / epc(); }
  int per_thread() const { return rows * per_row() / threads; }
  int first_row(int tid) const { return tid / per_row(); }
  int first_col(int tid) const { return (tid % per_row()) * epc(); }
  int row_off(int i) const { return per_row() <= threads ? i * (threads / per_row()) : i / (per_row() / threads); }
  int col_off(int i) const { return per_row() <= threads ? 0 : (i % (per_row() / threads)) * threads * epc(); }
  unsigned first_offset(int tid) const { return unsigned((first_row(tid) * cols + first_col(tid)) * 2); }
  unsigned chunk_offset(int i) const { return unsigned((row_off(i) * cols + col_off(i)) * 2); }
};

bool pow2(int v) { return v > 0 && (v & (v - 1)) == 0; }

// tile_layout.cuh's a_frag_lane / a_frag_step / b_frag_lane / b_frag_step.
struct RowCol {
  int row, col;
};
RowCol a_frag_lane(bool a_row, int lane, int warp_off) {
  return a_row ? RowCol{warp_off + (lane & 15), (lane >> 4) << 3}
               : RowCol{(lane & 7) + ((lane >> 4) << 3), warp_off + (((lane >> 3) & 1) << 3)};
}
RowCol a_frag_step(bool a_row, int i, int kk) { return a_row ? RowCol{i * 16, kk} : RowCol{kk, i * 16}; }
RowCol b_frag_lane(bool b_row, int lane, int warp_off) {
  return b_row ? RowCol{(lane & 7) + (((lane >> 3) & 1) << 3), warp_off + ((lane >> 4) << 3)}
               : RowCol{warp_off + (lane & 7) + ((lane >> 4) << 3), ((lane >> 3) & 1) << 3};
}
RowCol b_frag_step(bool b_row, int j, int kk) { return b_row ? RowCol{kk, j * 8} : RowCol{j * 8, kk}; }

std::string copy_instruction(int vec) {
  switch (vec) {
    case 16: return "cp.async.cg 16B";
    case 8: return "cp.async.ca 8B";
    case 4: return "cp.async.ca 4B";
    default: return "st.shared.u16";  // no 2-byte cp.async: a load staged through a register (TileCopy::copy)
  }
}

// Copies (TileCopy::copy / copy_full) of one operand's tile at shared offset `tile` by every warp: chunk i of thread
// tid at its first chunk's swizzled address, XORed and offset by the chunk's compile-time offset, exactly as
// CopyState::chunk forms it.
Instruction chunk_copies(const char* operand, const ChunkMap& m, const Swizzle& swz, unsigned tile, int vec,
                         int warps) {
  Instruction ins{copy_instruction(vec), operand, "main loop, per k-tile", {}};
  for (int w = 0; w < warps; ++w) {
    for (int i = 0; i < m.per_thread(); ++i) {
      Issue issue{w, fmt::format("chunk {}", i), {}};
      issue.access.bytes_per_thread = vec;
      for (int lane = 0; lane < kWarpSize; ++lane) {
        const int tid = w * kWarpSize + lane;
        const unsigned base = tile + swz.full(m.first_offset(tid));
        const unsigned off = m.chunk_offset(i);
        issue.access.address[lane] = int64_t((base ^ swz.x(off)) + swz.add(off));
      }
      ins.issues.push_back(std::move(issue));
    }
  }
  return ins;
}

// How the block's warps split the tile: warp w covers rows (w % warps_m) * wm_rows of A and columns
// (w / warps_m) * wn_cols of B.
struct WarpTiling {
  int warps_m, warps, bk, wm_rows, wn_cols;
};

// One lane's ldmatrix address as the kernel forms it (fragment_bases, then load_fragments): the lane's first address
// `lane` in stage 0 of the tile, swizzled once, then the fragment and k-step's offset `step` as one XOR and an
// immediate offset. `cols`: the row length of the operand's tile in elements.
int64_t fragment_address(RowCol lane, RowCol step, int cols, const Swizzle& swz, unsigned tile) {
  const unsigned frag = tile + swz.full(unsigned((lane.row * cols + lane.col) * 2));
  const unsigned off = unsigned((step.row * cols + step.col) * 2);
  return int64_t((frag ^ swz.x(off)) + swz.add(off));
}

// Fragment reads (load_fragments): the lane's first address in stage 0, swizzled once, then per fragment and k-step
// one XOR and an immediate offset. A is read with .trans when stored [BK][BM], B when stored [BK][BN]. `cols`: the
// row length of the operand's tile in elements, `tile` its shared offset.
Instruction a_fragment_reads(const WarpTiling& t, bool a_row, int cols, const Swizzle& swz, unsigned tile) {
  Instruction ld{a_row ? "ldmatrix.x4" : "ldmatrix.x4.trans", "A", "main loop, per k-tile", {}};
  for (int w = 0; w < t.warps; ++w) {
    const int wm = w % t.warps_m;
    for (int kk = 0; kk < t.bk; kk += 16) {
      for (int i = 0; i < t.wm_rows / 16; ++i) {
        Issue issue{w, fmt::format("fragment i={} kk={}", i, kk), {}};
        issue.access.bytes_per_thread = 16;
        for (int lane = 0; lane < kWarpSize; ++lane) {
          issue.access.address[lane] = fragment_address(a_frag_lane(a_row, lane, wm * t.wm_rows),
                                                        a_frag_step(a_row, i, kk), cols, swz, tile);
        }
        ld.issues.push_back(std::move(issue));
      }
    }
  }
  return ld;
}
// B's, two 8-column fragments per ldmatrix.x4.
Instruction b_fragment_reads(const WarpTiling& t, bool b_row, int cols, const Swizzle& swz, unsigned tile) {
  Instruction ld{b_row ? "ldmatrix.x4.trans" : "ldmatrix.x4", "B", "main loop, per k-tile", {}};
  for (int w = 0; w < t.warps; ++w) {
    const int wn = w / t.warps_m;
    for (int kk = 0; kk < t.bk; kk += 16) {
      for (int j = 0; j < t.wn_cols / 8; j += 2) {
        Issue issue{w, fmt::format("fragments j={},{} kk={}", j, j + 1, kk), {}};
        issue.access.bytes_per_thread = 16;
        for (int lane = 0; lane < kWarpSize; ++lane) {
          issue.access.address[lane] = fragment_address(b_frag_lane(b_row, lane, wn * t.wn_cols),
                                                        b_frag_step(b_row, j, kk), cols, swz, tile);
        }
        ld.issues.push_back(std::move(issue));
      }
    }
  }
  return ld;
}

class Sm80BankModel final : public plan::banks::BankModel {
 public:
  std::string_view family() const override { return "sm80"; }

  Expected<FamilyAccesses> accesses(const Problem& problem, const Config& c) const override {
    for (const char* name : {"BLOCK_M", "BLOCK_N", "BLOCK_K", "WARPS_M", "WARPS_N", "VEC_BYTES"}) {
      if (!c.get(name)) return invalid_argument(fmt::format("the sm80 config lacks {}", name));
    }
    const int bm = int(c.at("BLOCK_M")), bn = int(c.at("BLOCK_N")), bk = int(c.at("BLOCK_K"));
    const int warps_m = int(c.at("WARPS_M")), warps_n = int(c.at("WARPS_N"));
    // COPY_AB copies A and B into 16-byte-aligned buffers first: the kernel is then compiled with 16-byte copies.
    const int vec = c.get("COPY_AB").value_or(0) ? 16 : int(c.at("VEC_BYTES"));
    const int threads = 32 * warps_m * warps_n;
    const bool a_row = a_row_major(problem.layout), b_row = b_row_major(problem.layout);
    const int wm_rows = bm / warps_m, wn_cols = bn / warps_n;
    if (wm_rows % 16 != 0 || wn_cols % 16 != 0 || bk % 16 != 0) {
      return invalid_argument(fmt::format("{} does not split into whole 16x16 warp fragments", c.describe()));
    }

    // Shared memory as gemm.cuh lays it out: stage 0's A tile at the 1024-aligned base, its B tile right after.
    // Tiles keep the global orientation: A as [BM][BK] (row-major) or [BK][BM], B as [BK][BN] or [BN][BK].
    const int a_cols = a_row ? bk : bm, b_cols = b_row ? bn : bk;
    const ChunkMap a_map{a_row ? bm : bk, a_cols, vec, threads}, b_map{b_row ? bk : bn, b_cols, vec, threads};
    const unsigned a_tile = 0, b_tile = unsigned(bm * bk * 2);
    auto a_swz = swizzle_for(a_cols * 2);
    if (!a_swz) return a_swz.status();
    auto b_swz = swizzle_for(b_cols * 2);
    if (!b_swz) return b_swz.status();
    for (const ChunkMap* m : {&a_map, &b_map}) {
      if (!pow2(m->per_row()) || !pow2(threads) || (m->rows * m->per_row()) % threads != 0) {
        return invalid_argument(fmt::format("{}: the copies of a {}x{} tile do not split evenly over {} threads",
                                            c.describe(), m->rows, m->cols, threads));
      }
    }

    FamilyAccesses out;
    const int warps = warps_m * warps_n;
    out.instructions.push_back(chunk_copies("A", a_map, *a_swz, a_tile, vec, warps));
    out.instructions.push_back(chunk_copies("B", b_map, *b_swz, b_tile, vec, warps));
    const WarpTiling tiling{warps_m, warps, bk, wm_rows, wn_cols};
    out.instructions.push_back(a_fragment_reads(tiling, a_row, a_cols, *a_swz, a_tile));
    out.instructions.push_back(b_fragment_reads(tiling, b_row, b_cols, *b_swz, b_tile));

    const int stage_bytes = (bm * bk + bk * bn) * 2;
    out.notes.push_back(fmt::format(
        "stages lie {} bytes apart (a multiple of 128): each maps onto the banks as stage 0, which is simulated",
        stage_bytes));
    out.notes.emplace_back(
        "the epilogue stores C from registers straight to global memory: no shared-memory staging to simulate");
    if (c.get("COPY_AB").value_or(0)) {
      out.notes.emplace_back("COPY_AB = 1: A and B are first copied into 16-byte-aligned buffers, so the kernel copies "
                             "16-byte chunks whatever VEC_BYTES says");
    }
    out.notes.emplace_back("addresses: kernels/sm80/tile_layout.cuh (ChunkMap, CopyState::chunk, a/b_frag_lane and "
                           "_step) with common/swizzle.cuh's swizzle_128b, as gemm.cuh combines them");
    return out;
  }
};

const plan::banks::BankModelRegistration kRegistration{std::make_unique<Sm80BankModel>()};

}  // namespace
}  // namespace tileforge::cuda

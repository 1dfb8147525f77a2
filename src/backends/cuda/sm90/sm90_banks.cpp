// The sm90 family's per-thread shared-memory addresses for `tileforge banks`: the TMA-store epilogue's writes of
// its staging tile (stmatrix, stmatrix .trans for a column-major C, or st.shared.b32) from the kernel's own offsets
// (kernels/sm90/staging.cuh), and the fix-up's flag as kernels/sm90/fixup.cuh computes it.
#include <cstdint>
#include <string>

#include <fmt/format.h>

#include "backends/backend.hpp"
#include "backends/cuda/kernels/sm90/staging.cuh"
#include "backends/cuda/sm90/sm90_family.hpp"
#include "plan/bank_conflicts.hpp"

namespace tileforge::cuda {
namespace {

using plan::banks::FamilyAccesses;
using plan::banks::Instruction;
using plan::banks::Issue;
using plan::banks::kWarpSize;
using tf::sm90::pair_offset;
using tf::sm90::stmatrix_col_offset;
using tf::sm90::stmatrix_row_offset;

// The staging tile of the TMA-store epilogue: at shared offset `base`, one region of wg_m x group_cols per consumer
// warpgroup, written in `rounds` rounds of group_cols columns, m_iters 64-row blocks each; `col`: C column-major
// (SWAP_AB), each column of C a 128-byte staging row per 64-row block.
struct StagingTile {
  unsigned base;
  int consumers, wg_m, m_iters, group_cols, rounds;
  bool col = false;
};

// The column-major staging writes (epilogue.cuh's stmatrix_trans): lane L addresses column L%8 of 8x8 block L/8,
// blocks (rows 0-7 | 8-15 of the warp's 16) x (column blocks jj | jj + 1); an odd last block alone (x2: lanes 0-15).
void staging_stores_col(Instruction& ins, const StagingTile& t, unsigned region, int block_warp, int warp, int g,
                        int mi) {
  const int jg = t.group_cols / 8;
  for (int jj = 0; jj < jg; jj += 2) {
    const bool x2 = jj + 1 == jg;
    Issue issue{block_warp, fmt::format("round {} mi={} jj={}{}", g, mi, jj, x2 ? " (x2)" : ""), {}};
    issue.access.bytes_per_thread = 16;
    for (int lane = 0; lane < kWarpSize; ++lane) {
      if (x2 && lane >= 16) {
        issue.access.address[lane] = -1;  // x2 reads the addresses of lanes 0-15 only
        continue;
      }
      issue.access.address[lane] = int64_t(region + stmatrix_col_offset(t.group_cols, warp, lane, mi, jj));
    }
    ins.issues.push_back(std::move(issue));
  }
}

// The consumer warpgroups' writes of the staging tile (epilogue.cuh's store_packed), 128-byte rows swizzled in
// 16-byte units. Consumer warpgroup cw is the block's warpgroup 1 + cw (warpgroup 0 is the producer); warp `warp`
// inside it.
Instruction staging_stores(const StagingTile& t, bool stmatrix, int epilogue) {
  const int jg = t.group_cols / 8;
  Instruction ins{t.col ? "stmatrix.x4.trans" : stmatrix ? "stmatrix.x4" : "st.shared.b32", "C",
                  epilogue == kSm90EpilogueDeferred ? "deferred epilogue, per output tile" : "epilogue, per output tile",
                  {}};
  for (int cw = 0; cw < t.consumers; ++cw) {
    const unsigned region = t.base + unsigned(cw * (t.wg_m * t.group_cols * 2));
    for (int warp = 0; warp < 4; ++warp) {
      const int block_warp = 4 * (1 + cw) + warp;
      for (int g = 0; g < t.rounds; ++g) {
        for (int mi = 0; mi < t.m_iters; ++mi) {
          if (t.col) {
            staging_stores_col(ins, t, region, block_warp, warp, g, mi);
          } else if (stmatrix) {
            // Lane L addresses row L%8 of 8x8 block L/8 (store_packed's stmatrix branch).
            for (int jj = 0; jj < jg; jj += 2) {
              Issue issue{block_warp, fmt::format("round {} mi={} jj={}", g, mi, jj), {}};
              issue.access.bytes_per_thread = 16;
              for (int lane = 0; lane < kWarpSize; ++lane) {
                issue.access.address[lane] = int64_t(region + stmatrix_row_offset(t.wg_m, warp, lane, mi, jj));
              }
              ins.issues.push_back(std::move(issue));
            }
          } else {
            // One 32-bit pair per thread, rows r0 and r0 + 8 (store_packed's st.shared.b32 branch).
            for (int jj = 0; jj < jg; ++jj) {
              for (int half = 0; half < 2; ++half) {
                Issue issue{block_warp, fmt::format("round {} mi={} jj={} rows +{}", g, mi, jj, 8 * half), {}};
                issue.access.bytes_per_thread = 4;
                for (int lane = 0; lane < kWarpSize; ++lane) {
                  issue.access.address[lane] = int64_t(region + pair_offset(t.wg_m, warp, lane, mi, jj, half));
                }
                ins.issues.push_back(std::move(issue));
              }
            }
          }
        }
      }
    }
  }
  return ins;
}

class Sm90BankModel final : public plan::banks::BankModel {
 public:
  std::string_view family() const override { return "sm90"; }

  Expected<FamilyAccesses> accesses(const Problem&, const Config& c) const override {
    for (const char* name : {"BLOCK_M", "BLOCK_N", "STAGES", "CONSUMERS", "EPILOGUE"}) {
      if (!c.get(name)) return invalid_argument(fmt::format("the sm90 config lacks {}", name));
    }
    const int bm = int(c.at("BLOCK_M")), bn = int(c.at("BLOCK_N")), stages = int(c.at("STAGES"));
    const int consumers = int(c.at("CONSUMERS")), epilogue = int(c.at("EPILOGUE"));
    if (consumers < 1) return invalid_argument(fmt::format("{}: CONSUMERS must be at least 1", c.describe()));
    // Each consumer warpgroup's part of the tile (its rows, or with CONSUMER_COLS 1 its columns) and staging region.
    const int wg_m = int(sm90_consumer_rows(c)), wg_n = int(sm90_consumer_cols(c)), m_iters = wg_m / 64;
    const int epi_rounds = int(sm90_epi_rounds(wg_n, c.get("EPI_SPLIT").value_or(1)));
    const bool stmatrix = c.get("STMATRIX").value_or(0) != 0;
    const bool fixup = c.get("SPLIT_K").value_or(1) > 1 || c.get("STREAM_K").value_or(0) != 0;
    const bool col = sm90_swap_ab(c);  // C staged column by column (stmatrix .trans)
    if (wg_m % 64 != 0 || m_iters < 1 || wg_n % ((col ? 8 : 64) * epi_rounds) != 0) {
      return invalid_argument(fmt::format("{}: each consumer warpgroup needs whole 64-row blocks and the staged "
                                          "column groups whole {}", c.describe(),
                                          col ? "8-column blocks" : "64-column boxes"));
    }
    if (col && epilogue != kSm90EpilogueDirect && !stmatrix) {
      return invalid_argument(fmt::format("{}: SWAP_AB stages C with stmatrix .trans (STMATRIX 1)", c.describe()));
    }

    // Shared memory as gemm.cuh lays it out from its 1024-aligned base: STAGES x [A tile][B tile] (BLOCK_K 64),
    // the C staging tile, then 2 x STAGES mbarriers and the fix-up's flag.
    const unsigned stage_bytes = unsigned((bm + bn) * kSm90BlockK * 2);
    const unsigned c_tile = unsigned(stages) * stage_bytes;
    const unsigned c_bytes = epilogue != kSm90EpilogueDirect ? unsigned(bm * bn * 2 / epi_rounds) : 0u;
    // CONSUMER_K: the second warpgroup's f32 partial tile, handed to the first through shared memory after C's.
    const bool halves = c.get("CONSUMER_K").value_or(0) != 0;
    const unsigned half_tile = c_tile + c_bytes;
    const unsigned flag = half_tile + (halves ? unsigned(bm * bn * 4) : 0u) + 2u * unsigned(stages) * 8u;
    // The warpgroups that hold the finished tile (stage it, read the fix-up's flag): one with CONSUMER_K.
    const int holders = halves ? 1 : consumers;

    FamilyAccesses out;
    out.notes.emplace_back("TMA loads (cp.async.bulk.tensor) write the A and B tiles and wgmma reads them through "
                           "matrix descriptors: no per-thread shared-memory addresses, so the main loop has nothing to "
                           "simulate (the 128-byte swizzle there is the hardware's)");
    out.notes.emplace_back("mbarrier operations are issued by one lane per warp (or one per CTA of the cluster): not "
                           "simulated");

    if (epilogue == kSm90EpilogueDirect) {
      out.notes.emplace_back("EPILOGUE = 0: C is stored from registers straight to global memory, nothing is staged");
    } else {
      const StagingTile staging{c_tile, holders, wg_m, m_iters, wg_n / epi_rounds, epi_rounds, col};
      out.instructions.push_back(staging_stores(staging, stmatrix, epilogue));
      out.notes.emplace_back("the TMA store reads the staging tile without per-thread addresses; with beta != 0 the "
                             "kernel falls back to direct stores at run time (nothing staged)");
    }

    if (fixup) {
      // Split-K / stream-K: thread 0 of consumer warpgroup 0 writes whether this CTA sums the tile, then every
      // consumer thread reads it back: one word for the whole warp (a broadcast).
      Instruction st{"st.shared.u32", "flag", "fix-up, per shared tile", {}};
      Issue one{4, "thread 0 of consumer warpgroup 0", {}};
      one.access.bytes_per_thread = 4;
      one.access.address.fill(-1);
      one.access.address[0] = int64_t(flag);
      st.issues.push_back(std::move(one));
      out.instructions.push_back(std::move(st));
      Instruction ld{"ld.shared.u32", "flag", "fix-up, per shared tile", {}};
      for (int w = 4; w < 4 * (1 + holders); ++w) {
        Issue all{w, "every lane", {}};
        all.access.bytes_per_thread = 4;
        all.access.address.fill(int64_t(flag));
        ld.issues.push_back(std::move(all));
      }
      out.instructions.push_back(std::move(ld));
    }
    if (halves) {
      // The hand-over: accumulator register i of thread t at word i * 128 + t, written by the second warpgroup's
      // warps (8 to 11) and read by the first's (4 to 7), one word per lane (the first register's row of words shown;
      // every other register's is the same pattern 512 bytes on).
      for (const bool store : {true, false}) {
        Instruction in{store ? "st.shared.f32" : "ld.shared.f32", "partial", "CONSUMER_K hand-over, per work unit",
                       {}};
        for (int w = 0; w < 4; ++w) {
          Issue issue{(store ? 8 : 4) + w, "every lane", {}};
          issue.access.bytes_per_thread = 4;
          for (int lane = 0; lane < 32; ++lane) issue.access.address[lane] = int64_t(half_tile) + (w * 32 + lane) * 4;
          in.issues.push_back(std::move(issue));
        }
        out.instructions.push_back(std::move(in));
      }
    }
    out.notes.emplace_back("addresses: the staging offsets of kernels/sm90/staging.cuh, which the kernel's store_packed "
                           "computes, and fixup.cuh's flag as written there");
    return out;
  }
};

const plan::banks::BankModelRegistration kRegistration{std::make_unique<Sm90BankModel>()};

}  // namespace
}  // namespace tileforge::cuda

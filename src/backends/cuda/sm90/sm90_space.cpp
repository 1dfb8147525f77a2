// The sm90 kernel family's parameter space: its parameters and what each decides, and the constraints of the kernel
// template, the problem and the chip record on them.
#include <algorithm>
#include <array>
#include <bit>
#include <cstdlib>
#include <string_view>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "backends/cuda/kernels/sm90/wgmma_ops.cuh"
#include "backends/cuda/sm90/sm90_config_reads.hpp"
#include "backends/cuda/sm90/sm90_family.hpp"
#include "core/int_math.hpp"

namespace tileforge::cuda {

using namespace sm90_detail;

namespace {

// Slice counts that size a grid to one wave of clusters of 4 or 8 (30 and 15 resident on the GH100: 120 CTAs), declared
// and admitted only for such clusters (sm90_params, add_k_sharing_constraints).
constexpr std::array<int64_t, 4> kClusterSlices = {5, 7, 12, 15};
bool is_cluster_slices(int64_t split_k) {
  return std::find(kClusterSlices.begin(), kClusterSlices.end(), split_k) != kClusterSlices.end();
}

// The kernel's M and N for a config: the problem's, exchanged by SWAP_AB.
int64_t kernel_m(const Problem& q, const Config& c) { return swap_of(c) ? q.n : q.m; }
int64_t kernel_n(const Problem& q, const Config& c) { return swap_of(c) ? q.m : q.n; }

// Work units of a config's persistent walk: its cluster tiles (of every batch entry) times SPLIT_K slices. The
// Hilbert rule and the cluster-size rule compare it with the clusters resident at once.
int64_t cluster_units(const Problem& q, const Config& c) {
  return cdiv(kernel_m(q, c), p(c, "BLOCK_M") * p(c, "CLUSTER_M")) *
         cdiv(kernel_n(q, c), p(c, "BLOCK_N") * p(c, "CLUSTER_N")) * q.batch * p(c, "SPLIT_K");
}

// The family's parameters, their values and what each one decides. Clusters of 4 and 8 are declared only where
// `large_clusters` (sm90_space says where they can pay): declared everywhere they would triple the product the
// planner walks. SPLIT_K 5, 7, 12 and 15 (a grid of one wave of such clusters) where `cluster_slices`: declared
// everywhere they would lengthen every plan by half. SWAP_AB where `swap_ab`, and with it the narrow BLOCK_N values
// where `narrow_n` (A row-major: the transposed run's B is K-major; elsewhere every one of them would be refused).
// REDUCE where `reduce`. STAGES 10, 12 and 16 where `deep_stages` (small tiles of memory-bound shapes: cuBLAS runs
// 128x16 with 11 stages and 64x16 with 16 at 16x4096x4096).
std::vector<ParamDecl> sm90_params(bool large_clusters, bool cluster_slices, bool swap_ab, bool narrow_n, bool reduce,
                                   bool deep_stages, bool consumer_cols, bool consumer_k, bool cluster_sum) {
  const ParamValues clusters = large_clusters ? ParamValues{1, 2, 4, 8} : ParamValues{1, 2};
  const ParamValues stages =
      deep_stages ? ParamValues{2, 3, 4, 5, 6, 7, 8, 10, 12, 16} : ParamValues{2, 3, 4, 5, 6, 7, 8};
  std::vector<int64_t> split_k = {1, 2, 3, 4, 6, 8, 16, 32};
  if (cluster_slices) {
    split_k.insert(split_k.end(), kClusterSlices.begin(), kClusterSlices.end());
    std::sort(split_k.begin(), split_k.end());
  }
  std::vector<int64_t> block_n = {64, 128, 192, 256};
  if (swap_ab && narrow_n) {
    const std::vector<int64_t> narrow = sm90_narrow_block_n();
    block_n.insert(block_n.end(), narrow.begin(), narrow.end());
    std::sort(block_n.begin(), block_n.end());
  }
  std::vector<ParamDecl> decls = {
      {"BLOCK_M", {64, 128, 192, 256}, "data scheduling", "rows of C per CTA tile (whole 64-row wgmma blocks)"},
      {"BLOCK_N", block_n, "data scheduling",
       "columns of C per CTA tile (the wgmma N; with SWAP_AB the kernel's, i.e. rows of the caller's C)"},
      {"BLOCK_K", {kSm90BlockK}, "data scheduling", "depth of one stage: one 128-byte swizzle row of 16-bit elements"},
      {"STAGES", stages, "compute pipeline", "shared-memory stages in the TMA ring"},
      {"CONSUMERS", {1, 2, 3}, "parameter adaptation",
       "consumer warpgroups (they split BLOCK_M); one producer beside them"},
      {"CLUSTER_M", clusters, "hardware mapping",
       "CTAs per cluster along M: they share the B tile through TMA multicast (4 and 8 only for operands with rows off "
       "32-byte sectors, on grids that can be one wave of them, as many as the chip record lists resident)"},
      {"CLUSTER_N", clusters, "hardware mapping",
       "CTAs per cluster along N: they share the A tile through TMA multicast (4 and 8 as for CLUSTER_M)"},
      {"GROUP_M", {1, 4, 8, 16, 0}, "data scheduling",
       "tile rows per group of the persistent walk, walked column by column (1: row-major order; 0: no groups, a "
       "generalized Hilbert curve over the whole grid of tiles)"},
      {"EPILOGUE", {kSm90EpilogueDirect, kSm90EpilogueTmaStore, kSm90EpilogueDeferred}, "hardware mapping",
       "0: direct stores from registers; 1: staged in shared memory and written by TMA; 2: as 1, deferred under the "
       "next tile's main loop"},
      {"EPI_SPLIT", {1, 2}, "data scheduling",
       "staging rounds per tile of the TMA-store epilogue (2: half tiles, or thirds of a 192-column tile, whose smaller "
       "staging tile leaves room for another stage)"},
      {"STMATRIX", {0, 1}, "hardware mapping", "1: the TMA-store epilogue writes its staging tile with stmatrix"},
      {"SPLIT_K", split_k, "data scheduling",
       "slices of K per output tile, run by different CTAs and summed in slice order in a workspace (1: none); from "
       "4 slices with every slice on an SM of its own, each sums its share of the tile"},
      {"STREAM_K", {0, 1}, "data scheduling",
       "1: the last partial wave (and one full wave) shared out by k-blocks over every CTA, summed in order"},
      {"COPY_AB", {0, 1, 2, 3}, "hardware mapping",
       "operands copied first into buffers with 128-byte aligned rows, which TMA reads (any leading dimension; an "
       "operand already on 128-byte rows is read in place): 1 A and B, 2 A only, 3 B only"},
  };
  if (consumer_cols) {
    decls.push_back({"CONSUMER_COLS", {0, 1}, "parameter adaptation",
                     "1: the consumer warpgroups split BLOCK_N instead of BLOCK_M, each owning BLOCK_N / CONSUMERS "
                     "columns of every row (a 64-row tile gets a second warpgroup to issue wgmmas while the first "
                     "waits; each reads the whole A tile)"});
  }
  if (consumer_k) {
    decls.push_back({"CONSUMER_K", {0, 1}, "parameter adaptation",
                     "1: two consumer warpgroups each hold the whole tile and take every other k-block of it; the "
                     "second hands its partial tile to the first through shared memory, and the first sums the two "
                     "and writes C (measured no faster than one consumer on the same tile)"});
  }
  if (cluster_sum) {
    decls.push_back({"SPLIT_CLUSTER", {0, 1}, "data scheduling",
                     "1: a tile's SPLIT_K slices run as one cluster of SPLIT_K CTAs and sum the tile through their "
                     "shared memory (each its share, in slice order): no partial tile goes through the L2"});
  }
  if (reduce) {
    decls.push_back({"REDUCE", {0, 1}, "data scheduling",
                     "how the slices of a shared tile (split-K, stream-K) are summed: 0 in slice order from f32 partials "
                     "(bit-identical from run to run); 1 added into one f32 sum tile by float atomics in the order they "
                     "arrive (one tile read back instead of one per slice; only under the non-deterministic policy)"});
  }
  if (swap_ab) {
    decls.push_back({"SWAP_AB", {0, 1}, "parameter adaptation",
                     "1: run C^T = B^T A^T, C written column by column, so that M lies along the wgmma's N (any "
                     "multiple of 8 where A is row-major): BLOCK_M then tiles N and BLOCK_N tiles M"});
  }
  return decls;
}

// COPY_AB's constraints: which operands a copy may name on this problem, and those TMA cannot read in place.
void add_copy_constraints(ParamSpace& s, const Problem& q) {
  // COPY_AB names only copies that happen: an operand on 32-byte sectors is read in place, so a value copying only
  // such operands would be COPY_AB 0 again under another name (and tie with it in every ranking).
  {
    const bool a_off = sm90_rows_off_sectors(q, q.lda), b_off = sm90_rows_off_sectors(q, q.ldb);
    const std::vector<int64_t> useful = a_off && b_off ? std::vector<int64_t>{0, 1, 2, 3}
                                        : a_off        ? std::vector<int64_t>{0, 2}
                                        : b_off        ? std::vector<int64_t>{0, 3}
                                                       : std::vector<int64_t>{0};
    if (useful.size() < 4) {
      s.constraints.push_back(
          {Layer::hardware_mapping,
           fmt::format("COPY_AB in {{{}}}: {} (an operand whose rows start on 32-byte sectors is read in place)",
                       fmt::join(useful, ", "),
                       a_off ? "only A's rows are off 32-byte sectors"
                             : b_off ? "only B's rows are off 32-byte sectors" : "no operand's rows are off 32-byte sectors"),
           [useful](const Config& c) {
             return std::find(useful.begin(), useful.end(), p(c, "COPY_AB")) != useful.end();
           },
           {"COPY_AB"}});
    }
  }
  if (const std::string why = tma_ld_refusal(q, q.lda, "lda"); !why.empty()) {
    s.constraints.push_back({Layer::hardware_mapping, fmt::format("COPY_AB in {{1, 2}} (A copied): {}", why),
                             [](const Config& c) { return p(c, "COPY_AB") == 1 || p(c, "COPY_AB") == 2; },
                             {"COPY_AB"}});
  }
  if (const std::string why = tma_ld_refusal(q, q.ldb, "ldb"); !why.empty()) {
    s.constraints.push_back({Layer::hardware_mapping, fmt::format("COPY_AB in {{1, 3}} (B copied): {}", why),
                             [](const Config& c) { return p(c, "COPY_AB") == 1 || p(c, "COPY_AB") == 3; },
                             {"COPY_AB"}});
  }
}

// How a K-major operand's tile splits over the CTAs of a cluster that share it.
void add_k_major_split_constraints(ParamSpace& s, const Problem& q, bool atom_split) {
  const bool a_row = a_row_major(q.layout), b_row = b_row_major(q.layout);
  const bool swap_declared = s.find("SWAP_AB") != nullptr;
  // A K-major operand's tile is split over the CTAs that share it by rows: whole 8-row swizzle atoms each. An
  // M/N-major one's 64-row boxes are split by whole boxes or, where their count does not divide, each box by K rows
  // (64 / CTAs, at least 8): always whole atoms for clusters of up to 8.
  if (!swap_declared) {
    if (a_row) {
      s.constraints.push_back({Layer::hardware_mapping,
                               "(BLOCK_M / CLUSTER_N) % 8 == 0 (A is row-major: the CTAs that share it copy whole "
                               "8-row swizzle atoms of its tile)",
                               [](const Config& c) { return (p(c, "BLOCK_M") / p(c, "CLUSTER_N")) % 8 == 0; },
                               {"BLOCK_M", "CLUSTER_N"}});
    }
    if (!b_row) {
      s.constraints.push_back({Layer::hardware_mapping,
                               "(BLOCK_N / CLUSTER_M) % 8 == 0 (B is column-major: the CTAs that share it copy whole "
                               "8-row swizzle atoms of its tile)",
                               [](const Config& c) { return (p(c, "BLOCK_N") / p(c, "CLUSTER_M")) % 8 == 0; },
                               {"BLOCK_N", "CLUSTER_M"}});
    }
  } else {
    // The transposed run's A is the caller's B, K-major where B is column-major; its B the caller's A, K-major
    // where A is row-major. Its narrow BLOCK_N (72, 80, ...) do not always split into whole atoms per CTA: with
    // atom_split the CTAs deal the tile's atoms out one 8-row box at a time (sm90/config.cuh's *_K_BOX).
    const std::string how = atom_split ? "each CTA that shares it copies whole 8-row swizzle atoms, one box of "
                                         "them, or one atom at a time where they do not divide evenly"
                                       : "the CTAs that share it copy whole 8-row swizzle atoms";
    auto splits = [atom_split](int64_t rows, int64_t ctas) {
      return atom_split ? rows % 8 == 0 && rows / 8 >= ctas : (rows / ctas) % 8 == 0;
    };
    s.constraints.push_back({Layer::hardware_mapping,
                             fmt::format("{} where the kernel's A is K-major (A row-major, or with SWAP_AB B "
                                         "column-major): {}",
                                         atom_split ? "BLOCK_M / 8 >= CLUSTER_N" : "(BLOCK_M / CLUSTER_N) % 8 == 0", how),
                             [a_row, b_row, splits](const Config& c) {
                               const bool k_major = swap_of(c) ? !b_row : a_row;
                               return !k_major || splits(p(c, "BLOCK_M"), p(c, "CLUSTER_N"));
                             },
                             {"BLOCK_M", "CLUSTER_N", "SWAP_AB"}});
    s.constraints.push_back({Layer::hardware_mapping,
                             fmt::format("{} where the kernel's B is K-major (B column-major, or with SWAP_AB A "
                                         "row-major): {}",
                                         atom_split ? "BLOCK_N / 8 >= CLUSTER_M" : "(BLOCK_N / CLUSTER_M) % 8 == 0", how),
                             [a_row, b_row, splits](const Config& c) {
                               const bool k_major = swap_of(c) ? a_row : !b_row;
                               return !k_major || splits(p(c, "BLOCK_N"), p(c, "CLUSTER_M"));
                             },
                             {"BLOCK_N", "CLUSTER_M", "SWAP_AB"}});
  }
}

// The constraints of the operands' layouts, the epilogue and shared memory.
void add_layout_and_memory_constraints(ParamSpace& s, const Problem& q, const hw::HwProfile& profile,
                                       bool atom_split) {
  const int64_t smem_limit = profile.smem_per_block_bytes;
  const bool a_row = a_row_major(q.layout);
  const bool swap_declared = s.find("SWAP_AB") != nullptr;
  auto with_cols = [&s](std::vector<std::string> reads) {
    if (s.find("CONSUMER_COLS") != nullptr) {
      reads.push_back("CONSUMER_COLS");
      reads.push_back("CONSUMERS");
    }
    if (s.find("CONSUMER_K") != nullptr) reads.push_back("CONSUMER_K");
    return reads;
  };
  add_k_major_split_constraints(s, q, atom_split);
  if (swap_declared && a_row) {  // the narrow values are declared
    s.constraints.push_back(
        {Layer::hardware_mapping,
         fmt::format("BLOCK_N % 64 == 0 unless SWAP_AB == 1 (the transposed run's B, the caller's row-major A, is "
                     "K-major: the wgmma N takes {}; an N-major B tile is whole 128-byte boxes)",
                     fmt::join(sm90_narrow_block_n(), ", ")),
         [](const Config& c) { return p(c, "BLOCK_N") % 64 == 0 || swap_of(c) == 1; }, {"BLOCK_N", "SWAP_AB"}});
  }
  if (swap_declared) {
    s.constraints.push_back({Layer::hardware_mapping,
                             "SWAP_AB == 1 only with the staging epilogue written by stmatrix (EPILOGUE 1 or 2, "
                             "STMATRIX 1): the column-major staging tile is written by stmatrix .trans, and direct "
                             "stores to a column-major C would store one element at a time",
                             [](const Config& c) {
                               return swap_of(c) == 0 ||
                                      (p(c, "EPILOGUE") != kSm90EpilogueDirect && p(c, "STMATRIX") == 1);
                             },
                             {"SWAP_AB", "EPILOGUE", "STMATRIX"}});
  }
  if (const std::string why = tma_store_refusal(q); !why.empty()) {
    s.constraints.push_back({Layer::hardware_mapping, fmt::format("EPILOGUE == 0: {}", why),
                             [](const Config& c) { return p(c, "EPILOGUE") == kSm90EpilogueDirect; }, {"EPILOGUE"}});
  }
  s.constraints.push_back(
      {Layer::data_scheduling,
       "EPI_SPLIT == 1 unless the epilogue stages through shared memory (EPILOGUE 1 or 2), and EPI_SPLIT == 2 only "
       "with BLOCK_N of at least 128 (halves, or thirds of 192, in whole 64-column boxes per round)",
       [](const Config& c) {
         const int64_t split = p(c, "EPI_SPLIT");
         if (p(c, "EPILOGUE") == kSm90EpilogueDirect) return split == 1;
         return split == 1 || sm90_epi_rounds(sm90_consumer_cols(c), split) > 1;
       },
       with_cols({"EPI_SPLIT", "EPILOGUE", "BLOCK_N"})});
  if (!profile.has("stmatrix")) {
    s.constraints.push_back({Layer::hardware_mapping, "STMATRIX == 0 (the chip record lists no stmatrix)",
                             [](const Config& c) { return p(c, "STMATRIX") == 0; }, {"STMATRIX"}});
  }
  s.constraints.push_back({Layer::hardware_mapping,
                           "STMATRIX == 0 unless the epilogue stages through shared memory (EPILOGUE 1 or 2)",
                           [](const Config& c) {
                             return p(c, "STMATRIX") == 0 || p(c, "EPILOGUE") != kSm90EpilogueDirect;
                           },
                           {"STMATRIX", "EPILOGUE"}});
  s.constraints.push_back(
      {Layer::data_scheduling,
       smem_limit > 0
           ? fmt::format("shared memory STAGES * (BLOCK_M + BLOCK_N) * 128 + the C staging tile (BLOCK_M * BLOCK_N * "
                         "2 over its rounds, EPILOGUE 1 or 2){} + barriers + 1024 <= {} bytes per block",
                         s.find("CONSUMER_K") != nullptr ? " + CONSUMER_K's BLOCK_M * BLOCK_N * 4" : "", smem_limit)
           : std::string("shared memory per block: the profile records no smem_per_block_bytes"),
       [smem_limit](const Config& c) { return smem_limit > 0 && sm90_smem_bytes(c) <= smem_limit; },
       with_cols({"BLOCK_M", "BLOCK_N", "BLOCK_K", "STAGES", "EPILOGUE", "EPI_SPLIT"})});
}

// The constraints of the consumer warpgroups: whole m64 blocks each, the accumulators and the rules of three
// consumers (their registers), and the register file.
std::vector<Constraint> consumer_constraints(const hw::HwProfile& profile, bool cols_declared, bool k_declared,
                                             bool a_row, bool b_row, bool swap_declared) {
  // Limits the profile does not record are not assumed: the constraint then admits no config and names the field.
  const int64_t regs_per_sm = profile.registers_per_core;
  std::vector<std::string> shape_reads = {"BLOCK_M", "BLOCK_N", "CONSUMERS"};
  if (cols_declared) shape_reads.push_back("CONSUMER_COLS");
  if (k_declared) shape_reads.push_back("CONSUMER_K");
  std::vector<std::string> rows_reads = {"BLOCK_M", "CONSUMERS"};
  if (cols_declared) rows_reads.push_back("CONSUMER_COLS");
  if (k_declared) rows_reads.push_back("CONSUMER_K");
  std::vector<Constraint> out = {
      {Layer::parameter_adaptation,
       cols_declared || k_declared
           ? "BLOCK_M % (64 * CONSUMERS) == 0, with CONSUMER_COLS 1 or CONSUMER_K 1 BLOCK_M % 64 == 0 (each "
             "consumer warpgroup owns whole 64-row wgmma blocks)"
           : "BLOCK_M % (64 * CONSUMERS) == 0 (each consumer warpgroup owns whole 64-row wgmma blocks)",
       [](const Config& c) { return sm90_consumer_rows(c) % 64 == 0 && p(c, "BLOCK_M") % 64 == 0; }, rows_reads},
      {Layer::parameter_adaptation,
       fmt::format("(BLOCK_M / CONSUMERS / 64) * BLOCK_N / 2 <= 128 f32 accumulators per consumer thread ({} with "
                   "three consumers, whose {} registers hold fewer){}",
                   kMaxAccumulators3, kConsumerRegs3,
                   cols_declared ? std::string("; with CONSUMER_COLS 1 (BLOCK_M / 64) * (BLOCK_N / CONSUMERS) / 2")
                   : k_declared  ? fmt::format("; with CONSUMER_K 1 (BLOCK_M / 64) * BLOCK_N / 2 <= {}",
                                               kMaxAccumulatorsK)
                                 : std::string()),
       [](const Config& c) { return sm90_accumulators(c) <= sm90_max_accumulators(c); }, shape_reads},
      {Layer::parameter_adaptation,
       fmt::format("EPILOGUE != 2 with three consumers (the deferred epilogue's 16-bit tile does not fit beside the "
                   "accumulators in {} registers)",
                   kConsumerRegs3),
       [](const Config& c) { return p(c, "CONSUMERS") < 3 || p(c, "EPILOGUE") != kSm90EpilogueDeferred; },
       {"CONSUMERS", "EPILOGUE"}},
      {Layer::parameter_adaptation,
       fmt::format("SPLIT_K == 1 and STREAM_K == 0 with three consumers (the fix-up's loads spill beside their "
                   "accumulators in {} registers: 56 bytes for 192x128 stream-K)",
                   kConsumerRegs3),
       [](const Config& c) { return p(c, "CONSUMERS") < 3 || (p(c, "SPLIT_K") == 1 && p(c, "STREAM_K") == 0); },
       {"CONSUMERS", "SPLIT_K", "STREAM_K"}},
      {Layer::parameter_adaptation,
       regs_per_sm > 0
           ? fmt::format("registers: 128 x {} (producer) + 128 x CONSUMERS x {} ({} with three; consumers, "
                         "setmaxnreg), or 255 per thread with one consumer, <= {} per SM",
                         kProducerRegs, kConsumerRegs, kConsumerRegs3, regs_per_sm)
           : std::string("registers per SM: the profile records no registers_per_core"),
       [regs_per_sm](const Config& c) { return regs_per_sm > 0 && sm90_register_budget(c) <= regs_per_sm; },
       {"CONSUMERS"}},
  };
  if (k_declared) {
    std::vector<std::string> reads = {"CONSUMER_K", "CONSUMERS", "EPILOGUE"};
    if (cols_declared) reads.push_back("CONSUMER_COLS");
    out.push_back({Layer::parameter_adaptation,
                   "CONSUMER_K == 1 only with two consumers, CONSUMER_COLS 0 and EPILOGUE != 2 (the second "
                   "warpgroup's k-blocks already run beside the first's epilogue)",
                   [](const Config& c) {
                     return consumer_k_of(c) == 0 || (p(c, "CONSUMERS") == 2 && consumer_cols_of(c) == 0 &&
                                                      p(c, "EPILOGUE") != kSm90EpilogueDeferred);
                   },
                   reads});
  }
  if (cols_declared) {
    // The wgmma N of each warpgroup's columns, from B's tile in shared memory: whole 64-column boxes of an N-major B
    // (a descriptor inside a 128-byte swizzle row would need its base offset), 8-row atoms of a K-major one.
    std::vector<std::string> reads = {"CONSUMER_COLS", "CONSUMERS", "BLOCK_N"};
    if (swap_declared) reads.push_back("SWAP_AB");
    out.push_back(
        {Layer::parameter_adaptation,
         "CONSUMER_COLS == 1 only with two or three consumers and BLOCK_N / CONSUMERS a multiple of 64 where the "
         "kernel's B is N-major (whole 128-byte boxes per warpgroup), else a wgmma N (whole 8-row atoms of the K-major "
         "B tile)",
         [a_row, b_row, narrow = sm90_narrow_block_n()](const Config& c) {
           if (consumer_cols_of(c) == 0) return true;
           const int64_t cons = p(c, "CONSUMERS"), bn = p(c, "BLOCK_N");
           if (cons < 2 || bn % cons != 0) return false;
           const int64_t wg_n = bn / cons;
           // The kernel's B: the caller's B, or with SWAP_AB the caller's A transposed (N-major where A is
           // column-major).
           const bool n_major = swap_of(c) ? !a_row : b_row;
           if (wg_n % 64 == 0) return true;
           if (n_major) return false;
           return std::find(narrow.begin(), narrow.end(), wg_n) != narrow.end();
         },
         reads});
  }
  return out;
}

// How a tile's K is shared: one way at a time, the slice counts that size a grid to clusters of four and eight, and
// the float-atomic sums (where declared) only where there are slices to sum.
void add_k_sharing_constraints(ParamSpace& s, bool reduce) {
  s.constraints.push_back({Layer::data_scheduling, "SPLIT_K == 1 when STREAM_K == 1 (one way of sharing K)",
                           [](const Config& c) { return p(c, "STREAM_K") == 0 || p(c, "SPLIT_K") == 1; },
                           {"STREAM_K", "SPLIT_K"}});
  // 5, 7, 12 and 15 slices size a grid to one wave of clusters of 4 or 8, of which the GH100's GPCs hold 30 and 15
  // (120 CTAs): 256x256x16384 in 2x2 clusters of 64x128 with 15 slices ran 17.50 us against 18.05 with 16 and no
  // cluster (bench/results/h100/2026-12-06p-clusters-4-splitk). Without such clusters 4, 6, 8 and 16 fill the SMs,
  // and the planner need not price the others (a plan takes half as long again with them).
  s.constraints.push_back(
      {Layer::data_scheduling, "SPLIT_K 5, 7, 12 or 15 only in clusters of 4 or 8 (one wave of them)",
       [](const Config& c) {
         return !is_cluster_slices(p(c, "SPLIT_K")) || sm90_cluster_size(c) >= 4;
       },
       {"SPLIT_K", "CLUSTER_M", "CLUSTER_N"}});
  if (reduce) {
    s.constraints.push_back({Layer::data_scheduling,
                             "REDUCE == 1 only with SPLIT_K > 1 or STREAM_K == 1 (only shared tiles have slices to sum)",
                             [](const Config& c) {
                               return p(c, "REDUCE") == 0 || p(c, "SPLIT_K") > 1 || p(c, "STREAM_K") == 1;
                             },
                             {"REDUCE", "SPLIT_K", "STREAM_K"}});
  }
}

// SPLIT_CLUSTER: a cluster of the tile's 2, 4 or 8 slices (the portable sizes), which shares no operand, sums its
// partial tiles in the rings it ran (each must hold a BLOCK_M x BLOCK_N f32 tile), writes its shares of C with
// direct stores (no staging tile) and runs neither stream-K, the float-atomic sum nor CONSUMER_K's hand-over.
void add_cluster_sum_constraints(ParamSpace& s) {
  const bool reduce = s.find("REDUCE") != nullptr, halves = s.find("CONSUMER_K") != nullptr;
  std::vector<std::string> reads = {"SPLIT_CLUSTER", "SPLIT_K", "CLUSTER_M", "CLUSTER_N", "STREAM_K",
                                    "BLOCK_M",       "BLOCK_N", "BLOCK_K",   "STAGES",    "EPILOGUE"};
  if (reduce) reads.push_back("REDUCE");
  if (halves) reads.push_back("CONSUMER_K");
  s.constraints.push_back(
      {Layer::data_scheduling,
       "SPLIT_CLUSTER == 1 only with SPLIT_K 2, 4 or 8, CLUSTER_M = CLUSTER_N = 1, STREAM_K == 0, REDUCE == 0, "
       "CONSUMER_K == 0, EPILOGUE == 0 (the shares are stored directly) and STAGES x (BLOCK_M + BLOCK_N) x 128 >= "
       "BLOCK_M x BLOCK_N x 4 (the ring holds the f32 partial tile)",
       [reduce, halves](const Config& c) {
         if (c.get("SPLIT_CLUSTER").value_or(0) == 0) return true;
         const int64_t sk = p(c, "SPLIT_K");
         return (sk == 2 || sk == 4 || sk == 8) && sm90_cluster_size(c) == 1 && p(c, "STREAM_K") == 0 &&
                p(c, "EPILOGUE") == kSm90EpilogueDirect &&
                (!reduce || p(c, "REDUCE") == 0) && (!halves || p(c, "CONSUMER_K") == 0) &&
                sm90_ring_bytes(c) >= p(c, "BLOCK_M") * p(c, "BLOCK_N") * 4;
       },
       reads});
}

}  // namespace

std::vector<int64_t> sm90_narrow_block_n() {
#define TF_SM90_N_VALUE(NN) NN,
  constexpr int64_t kWgmmaN[] = {TF_SM90_WGMMA_SIZES(TF_SM90_N_VALUE)};
#undef TF_SM90_N_VALUE
  std::vector<int64_t> narrow;
  for (const int64_t n : kWgmmaN) {
    if (n % 64 != 0) narrow.push_back(n);
  }
  return narrow;
}

Sm90SpaceOptions sm90_space_options() {
  Sm90SpaceOptions o;
  const char* v = std::getenv("TILEFORGE_SM90_SWAP_AB");
  o.swap_ab = !(v && std::string_view(v) == "0");
  o.reduce = true;
  const char* atoms = std::getenv("TILEFORGE_SM90_ATOM_SPLIT");
  o.atom_split = atoms && std::string_view(atoms) == "1";
  const char* deep = std::getenv("TILEFORGE_SM90_DEEP_STAGES");
  o.deep_stages = deep && std::string_view(deep) == "1";
  o.deep_stages_small = !(deep && std::string_view(deep) == "0");
  const char* cols = std::getenv("TILEFORGE_SM90_CONSUMER_COLS");
  o.consumer_cols = cols && std::string_view(cols) == "1";
  const char* halves = std::getenv("TILEFORGE_SM90_CONSUMER_K");
  o.consumer_k = halves && std::string_view(halves) == "1";
  const char* csum = std::getenv("TILEFORGE_SM90_CLUSTER_SUM");
  o.cluster_sum = csum && std::string_view(csum) == "1";
  return o;
}

Sm90SpaceOptions sm90_space_options_declaring(const Config& config) {
  return Sm90SpaceOptions{.swap_ab = config.get("SWAP_AB").has_value(),
                          .reduce = config.get("REDUCE").has_value(),
                          .atom_split = true,
                          .deep_stages = true,
                          .consumer_cols = config.get("CONSUMER_COLS").has_value(),
                          .consumer_k = config.get("CONSUMER_K").has_value(),
                          .cluster_sum = config.get("SPLIT_CLUSTER").has_value()};
}

ParamSpace sm90_space(const Problem& problem, const hw::HwProfile& profile) {
  return sm90_space(problem, profile, Sm90SpaceOptions{});
}

bool sm90_transposes(const Problem& problem, const Sm90SpaceOptions& options) {
  // SWAP_AB needs the staging epilogue (beta == 0, 16-bit C): direct stores to a column-major C would store one
  // element at a time.
  const Problem q = problem.normalized();
  return options.swap_ab && q.beta == 0.0 && tma_store_refusal(q).empty();
}

ParamSpace sm90_space(const Problem& problem, const hw::HwProfile& profile, const Sm90SpaceOptions& options) {
  const Problem q = problem.normalized();
  ParamSpace s;
  s.family = "sm90";
  s.version = kSm90Version;
  // Clusters of 4 or 8 are declared where they paid: an operand read in place with rows off 32-byte sectors (its
  // TMA rows cost more requests; a wider multicast reads each of them for more CTAs), on a grid that can be one wave
  // of them (the constraint below), i.e. where even the largest tiles, 256 x 256 per CTA, make no more cluster tiles
  // than are resident. Aligned, they measured slower (1024^3: 11.4 us in 4x2 clusters of 64x192 against 9.4).
  auto one_wave_possible = [&](int64_t cs, double slices = 1.0) {
    const int64_t resident = sm90_resident_clusters(profile, cs);
    return resident > 0 &&
           slices * double(q.m) * double(q.n) * double(q.batch) / (256.0 * 256.0 * double(cs)) <= resident;
  };
  const bool rows_off = sm90_rows_off_sectors(q, q.lda) || sm90_rows_off_sectors(q, q.ldb);
  const bool swap_ab = sm90_transposes(q, options);
  // The deep rings where a side of C is a decode step's or a few tiles' (M or N at most 256): small tiles of
  // memory-bound shapes, which they ran 3-16% faster on the H100; elsewhere they would lengthen every plan by a
  // quarter for stage counts the tiles there cannot hold beside a useful tile.
  const bool deep_stages =
      options.deep_stages || (options.deep_stages_small && std::min(q.m, q.n) <= kSm90DeepRingsMaxSide);
  // SPLIT_K 5, 7, 12 and 15 (one wave of clusters of 4 or 8) where at least 5 slices of the largest tiles fit one.
  const bool cluster_slices = profile.has("cluster") && (one_wave_possible(4, 5.0) || one_wave_possible(8, 5.0));
  s.params = sm90_params(profile.has("cluster") && rows_off && (one_wave_possible(4) || one_wave_possible(8)),
                         cluster_slices, swap_ab, a_row_major(q.layout), options.reduce, deep_stages,
                         options.consumer_cols, options.consumer_k && q.precision.accum != DType::f16,
                         options.cluster_sum && profile.has("cluster") && q.precision.accum != DType::f16);
  // The reads of a constraint that depends on the kernel's M and N: SWAP_AB too where declared (a name the space
  // does not declare would leave the constraint to the leaves of the walk).
  auto with_swap = [swap_ab](std::vector<std::string> reads) {
    if (swap_ab) reads.push_back("SWAP_AB");
    return reads;
  };
  s.constraints = consumer_constraints(profile, options.consumer_cols, s.find("CONSUMER_K") != nullptr,
                                       a_row_major(q.layout), b_row_major(q.layout), swap_ab);
  add_copy_constraints(s, q);
  const int64_t k_blocks = cdiv(q.k, int64_t(kSm90BlockK));
  s.constraints.push_back({Layer::data_scheduling,
                           fmt::format("SPLIT_K <= ceil(K / BLOCK_K) = {} (every slice holds a k-block)", k_blocks),
                           [k_blocks](const Config& c) { return p(c, "SPLIT_K") <= k_blocks; }, {"SPLIT_K"}});
  s.constraints.push_back(
      {Layer::data_scheduling,
       "tiles x SPLIT_K, and with STREAM_K tiles x ceil(K / BLOCK_K), below 2^31 (the kernel's 32-bit schedule)",
       [q, k_blocks](const Config& c) {
         const int64_t tiles = cdiv(kernel_m(q, c), p(c, "BLOCK_M")) * cdiv(kernel_n(q, c), p(c, "BLOCK_N"));
         return tiles * p(c, "SPLIT_K") < (int64_t(1) << 31) &&
                (p(c, "STREAM_K") == 0 || tiles * k_blocks < (int64_t(1) << 31));
       },
       with_swap({"BLOCK_M", "BLOCK_N", "SPLIT_K", "STREAM_K"})});
  // The order of the walk matters only when its tiles do not all run at once; this keeps the Hilbert walk out of the
  // (far more numerous) spaces of small grids, where it would tie with every grouped order.
  {
    const int64_t sms = std::max(1, profile.cores);
    const std::array<int64_t, 4> resident = {sm90_resident_clusters(profile, 1), sm90_resident_clusters(profile, 2),
                                             sm90_resident_clusters(profile, 4), sm90_resident_clusters(profile, 8)};
    s.constraints.push_back(
        {Layer::data_scheduling,
         fmt::format("GROUP_M == 0 (Hilbert) only when the cluster tiles outnumber the clusters the {} SMs hold", sms),
         [q, resident](const Config& c) {
           if (p(c, "GROUP_M") != 0) return true;
           const int64_t cs = sm90_cluster_size(c);
           // Other sizes (up to 8 x 8 are declared) are the cluster-size constraint's to refuse.
           if (cs < 1 || cs > 8 || !std::has_single_bit(uint64_t(cs))) return true;
           return cluster_units(q, c) > resident[std::bit_width(uint64_t(cs)) - 1];
         },
         with_swap({"GROUP_M", "BLOCK_M", "BLOCK_N", "CLUSTER_M", "CLUSTER_N", "SPLIT_K"})});
  }
  add_k_sharing_constraints(s, options.reduce);
  if (s.find("SPLIT_CLUSTER")) add_cluster_sum_constraints(s);
  if (profile.has("cluster")) {
    // Clusters of four and eight share each operand tile among more CTAs (fewer L2 reads, fewer rows read off
    // sectors), but every CTA waits for all of them to release a stage, tile after tile: 1000^3 ran 11.9 us in 4x1
    // clusters of 64x192 against 12.5 in dispatch's 2x1 of 64x128, while 4096^3 in 2x2 clusters took 243 us against
    // 204 without (bench/sweeps/sm90-clusters-4-8.txt). So they are offered where the grid is one wave of them, at
    // the count the chip record says are resident (GPCs leave SMs over), and not with stream-K's shared waves.
    const int64_t r4 = sm90_resident_clusters(profile, 4), r8 = sm90_resident_clusters(profile, 8);
    s.constraints.push_back(
        {Layer::hardware_mapping,
         r4 + r8 == 0
             ? std::string("CLUSTER_M * CLUSTER_N <= 2 (the chip record lists no resident_clusters for larger ones)")
             : fmt::format("CLUSTER_M * CLUSTER_N <= 2, or 4 or 8 without stream-K where the cluster tiles x SPLIT_K "
                           "fit one wave of resident clusters ({} of 4, {} of 8: the chip record's resident_clusters)",
                           r4, r8),
         [q, r4, r8](const Config& c) {
           const int64_t cs = sm90_cluster_size(c);
           if (cs <= 2) return true;
           if ((cs != 4 && cs != 8) || p(c, "STREAM_K") != 0) return false;
           return cluster_units(q, c) <= (cs == 4 ? r4 : r8);
         },
         with_swap({"CLUSTER_M", "CLUSTER_N", "BLOCK_M", "BLOCK_N", "SPLIT_K", "STREAM_K"})});
  } else {
    s.constraints.push_back({Layer::hardware_mapping,
                             "CLUSTER_M = CLUSTER_N = 1 (the chip record lists no thread-block clusters)",
                             [](const Config& c) { return sm90_cluster_size(c) == 1; }, {"CLUSTER_M", "CLUSTER_N"}});
  }
  add_layout_and_memory_constraints(s, q, profile, options.atom_split);
  return s;
}

}  // namespace tileforge::cuda

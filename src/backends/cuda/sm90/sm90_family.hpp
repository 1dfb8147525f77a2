// The sm90 kernel family on the host side (Hopper, sm_90a: TMA loads on mbarriers, wgmma with f32 accumulators,
// a producer warpgroup and one to three consumer warpgroups, a persistent grid, clusters with TMA multicast, a
// TMA-store epilogue): its parameter space with the chip record's limits, resource estimates, the small documented
// heuristic, and the generated source of one instance of src/backends/cuda/kernels/sm90/gemm.cuh.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backends/backend.hpp"
#include "hw/hw_profile.hpp"

namespace tileforge::cuda {

// The family's version. Bump when a change makes old tuned records invalid.
// 2: SPLIT_K and STREAM_K (a tuned record of version 1 has neither).
// 3: split-K's shared sum when every unit has a cluster (timings of version 2 records are of the last-slice sum),
//    SPLIT_K 32.
// 4: COPY_AB's copy reads 16 bytes at a time from any row alignment and the kernel starts during its tail (timings
//    of version 3 records with COPY_AB are of the 2-byte copy).
// 5: SWAP_AB and the narrow BLOCK_N values declared (a version 4 record was tuned without them).
// 6: REDUCE declared (the slices' sum by float atomics under the non-deterministic policy).
// 7: the cluster's barrier relaxed at the start and gone at the exit (timings of version 6 records with clusters are
//    of the fenced barriers: 1000^3 in 2x1 clusters ran 8.5% slower).
inline constexpr int kSm90Version = 7;

// EPILOGUE values (tf::sm90::kEpilogue* in gemm.cuh).
inline constexpr int kSm90EpilogueDirect = 0;
inline constexpr int kSm90EpilogueTmaStore = 1;
inline constexpr int kSm90EpilogueDeferred = 2;

// BLOCK_K is one 128-byte swizzle row of 16-bit elements.
inline constexpr int kSm90BlockK = 64;

// Fewest slices for which split-K sums a tile shared among its slices (when every unit has a cluster): measured on the
// H200 (bench/results/h200/2026-12-02-shared-sum), the shared sum is slower than the last slice's at 2 slices (128x4096
// x14336 with 64x128 tiles in 2x1 clusters: 50.7 against 48.9 us; 1000^3 with 128x128: 16.1 against 15.2), a little
// faster at 4 (512x512x8192, 64x128 in 2x1 clusters: 18.1 against 18.5) and much faster from 8 on (128x4096x14336
// with 128x256 at 8: 48.3 against 64.6 us; 256x256x16384 with 64x128 at 16: 15.3 against 20.7).
inline constexpr int64_t kSm90SharedSumMinSplit = 4;

// The deep rings (STAGES 10, 12 and 16) are declared where M or N is at most this: decode steps and few-tile shapes.
inline constexpr int64_t kSm90DeepRingsMaxSide = 256;

// The sm90 parameters of a Config, read in one pass: the cost model prices thousands of configs per plan, and
// reading each parameter by name from the map was most of its time (docs/PERF-LOG.md, issue 15). Each field is
// set when the config sets it, with the value as set (a partial config of dispatch's bound search lacks some).
struct Sm90ConfigView {
  std::optional<int64_t> block_k, block_m, block_n, cluster_m, cluster_n, consumers, consumer_cols, consumer_k, copy_ab,
      epilogue, epi_split, group_m, reduce, split_cluster, split_k, stages, stmatrix, stream_k, swap_ab;
  explicit Sm90ConfigView(const Config& config);
};

// SWAP_AB: the kernel runs the transposed problem C^T = B^T A^T, writing C column by column (the kernel's C_COL), so
// that M lies along the wgmma's N, which takes any multiple of 8 where the transposed run's B (the caller's A) is
// K-major: an M of 16 to 112 (decode steps), or 1000 in 80-row tiles, without rounding M up to 64-row blocks. A
// config without the parameter runs as it is. The planner's space declares it (Sm90SpaceOptions::swap_ab) unless
// TILEFORGE_SM90_SWAP_AB=0 turns it off.
bool sm90_swap_ab(const Config& config);
// REDUCE 1: the slices of a shared tile are added into one f32 sum tile with float atomics, in the order they arrive
// (fewer bytes than the ordered sum, but the bits depend on that order): only under the non-deterministic policy
// (Options::deterministic false). 0, or a config without the parameter: summed in slice order.
bool sm90_atomic_sum(const Config& config);
// SPLIT_CLUSTER 1 (with SPLIT_K > 1): the slices of a tile are the CTAs of one cluster and sum the tile through their
// distributed shared memory (sm90/fixup.cuh's cluster_sum), in slice order; no workspace. The CTAs of a launched
// cluster: SPLIT_K then, else CLUSTER_M x CLUSTER_N.
bool sm90_cluster_sum(const Config& config);
bool sm90_cluster_sum(const Sm90ConfigView& config);
int64_t sm90_launch_cluster(const Config& config);
int64_t sm90_launch_cluster(const Sm90ConfigView& config);
// The problem the kernel runs for `config`: the normalized problem, or with SWAP_AB its transpose (M and N, A and B
// with their leading dimensions and layouts exchanged; C column-major).
Problem sm90_kernel_problem(const Problem& problem, const Config& config);
// The 2-D tensor maps of the kernel's problem as the kernel reads them: `inner` elements along the contiguous
// dimension, `outer` lines `ld` elements apart. A: K x M lines where A is row-major (the kernel's coordinates (k, m)),
// else M x K ((m, k)); B: N x K where row-major ((n, k)), else K x N ((k, n)); C: N x M row-major ((n, m)), or
// M x N column-major ((m, n)).
struct Sm90MapShape {
  int64_t inner = 0, outer = 0, ld = 0;
};
struct Sm90Maps {
  Sm90MapShape a, b, c;
};
Sm90Maps sm90_maps(const Problem& kernel_problem);
// BLOCK_N values of the transposed run beside the multiples of 64: the other wgmma N sizes the kernel has operand
// lists for (kernels/sm90/wgmma_ops.cuh, written by scripts/gen-wgmma-ops), in increasing order.
std::vector<int64_t> sm90_narrow_block_n();

// How the persistent grid shares out the work of one problem, as the kernel's Schedule walks it (gemm.cuh): whole
// tiles; SPLIT_K slices of every tile; or stream-K, the last `sk_tiles` tiles' k-blocks shared out evenly over the
// clusters after the whole tiles of the data-parallel part. The workspace holds one counter per CTA tile (two with
// the shared sum) and one f32 BLOCK_M x BLOCK_N partial per slot.
struct Sm90Schedule {
  int64_t cluster_tiles = 0;   // output tiles of a cluster (BLOCK_M x CLUSTER_M by BLOCK_N x CLUSTER_N)
  int64_t k_blocks = 0;        // ceil(K / BLOCK_K)
  int64_t clusters = 0;        // clusters launched (each walks its share)
  int64_t split_k = 1;
  bool stream_k = false;
  int64_t sk_tiles = 0;        // stream-K: tiles shared out by k-blocks (the last ones of the walk)
  // Split-K of at least kSm90SharedSumMinSplit slices with every work unit on a cluster of its own (tiles x
  // SPLIT_K <= clusters that fit): the launch is cooperative and each slice sums its 1/SPLIT_K of the tile once all
  // are stored (Params::shared_sum in gemm.cuh); otherwise the last slice to arrive sums the whole tile.
  bool shared_sum = false;
  // SPLIT_CLUSTER 1: a tile's SPLIT_K slices are one cluster of SPLIT_K CTAs, summed in their shared memory (no
  // workspace); `clusters` counts such clusters, each walking whole tiles.
  bool cluster_sum = false;
  int64_t slots = 0;           // partial tiles in the workspace (per CTA of a cluster: x CLUSTER_M x CLUSTER_N)
  // REDUCE 1 where tiles are shared: every slice adds its partial into its tile's sum tile with float atomics (no
  // partial slots, no shared sum); `sum_tiles` of them (per CTA of a cluster), after the counters at `sums_offset`.
  bool atomic_sum = false;
  int64_t sum_tiles = 0;
  int64_t sums_offset = 0;
  // The zone every launch leaves zero: the counters padded to 256 bytes, and the atomic sum tiles after them.
  int64_t counter_bytes = 0;
  int64_t workspace_bytes = 0; // counter zone + partials; 0 without split-K or stream-K
};
// `max_clusters`: clusters that fit on the device at once (SMs / cluster size, or the occupancy query's answer).
// Stream-K's shared tiles: none when the tiles fill whole waves; all of them when they are fewer than the clusters;
// else the last partial wave and one full wave (so that each cluster's share is more than one tile's k-blocks and
// the fix-up stays a small part of it).
// Clusters of `cluster_size` CTAs resident at once at one CTA per SM (the persistent grid's size): every SM's worth
// for clusters of one or two; for larger ones the GPCs leave SMs over (the occupancy query on the H200: 30 of 4, 15
// of 8, against 33 and 16 by the SM count).
int64_t sm90_resident_clusters(const hw::HwProfile& profile, int64_t cluster_size);

// The Config overload takes the caller's problem (and applies SWAP_AB); the view's takes the kernel's problem.
Sm90Schedule sm90_schedule(const Problem& problem, const Config& config, int64_t max_clusters);
Sm90Schedule sm90_schedule(const Problem& kernel_problem, const Sm90ConfigView& config, int64_t max_clusters);

// Threads of one CTA: a producer warpgroup and CONSUMERS consumer warpgroups of 128.
int sm90_threads(const Config& config);
// Dynamic shared memory of one CTA, as the template lays it out (gemm.cuh Config::SMEM_BYTES): STAGES x (A + B
// tile), the C staging tile of the TMA-store epilogues, CONSUMER_K's f32 hand-over tile, 2 x STAGES mbarriers, and
// 1 KB to align the base.
int64_t sm90_smem_bytes(const Config& config);
// The ring's bytes: STAGES stages of a BLOCK_M x BLOCK_K A tile and a BLOCK_K x BLOCK_N B tile (2-byte elements).
int64_t sm90_ring_bytes(const Config& config);
// The TMA-store epilogues' staging rounds per tile (the kernel's Config::EPI_ROUNDS): EPI_SPLIT 1 one, 2 halves of
// the tile, or thirds where halves would not be whole 64-column boxes (BLOCK_N 192).
int64_t sm90_epi_rounds(int64_t block_n, int64_t epi_split);
// The part of the tile one consumer warpgroup owns: BLOCK_M / CONSUMERS rows of every column, or with CONSUMER_COLS 1
// BLOCK_N / CONSUMERS columns of every row, or with CONSUMER_K 1 the whole tile (every other k-block of it).
int64_t sm90_consumer_rows(const Config& config);
int64_t sm90_consumer_cols(const Config& config);
// f32 accumulators per consumer thread: (its rows / 64) x its columns / 2.
int sm90_accumulators(const Config& config);
// setmaxnreg targets: 40 for the producer, 232 for each of two consumers or 152 for each of three; none (0) with one
// consumer, whose 256 threads may use up to 255 registers each as launched.
int sm90_producer_regs(const Config& config);
int sm90_consumer_regs(const Config& config);
// The accumulators a consumer thread may hold beside the rest of its registers: 128, or 96 with three consumers, or
// 64 with CONSUMER_K (each warpgroup holds the whole tile beside the hand-over).
int sm90_max_accumulators(const Config& config);
// Registers the CTA holds: 128 x producer + 128 x CONSUMERS x consumer registers (setmaxnreg), or 255 per thread.
int64_t sm90_register_budget(const Config& config);
// CTAs per cluster.
int sm90_cluster_size(const Config& config);

// Whether an operand's rows (leading dimension `ld`) do not start on 32-byte sectors: TMA reads such rows slowly
// (sm90_cost_constants.hpp), so COPY_AB copies them and the cost model charges them when read in place.
bool sm90_rows_off_sectors(const Problem& problem, int64_t ld);

struct Sm90SpaceOptions {
  bool swap_ab = false;  // declare SWAP_AB and the narrow BLOCK_N values (where the problem allows them)
  bool reduce = false;   // declare REDUCE (how a shared tile's slices are summed)
  // admit K-major tiles shared by CTAs whose rows are not whole 8-row atoms per CTA (128x72 in 4x2 clusters: the
  // atoms dealt out one at a time); the kernel takes them, the planner offers them once measured
  bool atom_split = false;
  // declare STAGES 10, 12 and 16 beside 2 to 8 (deeper rings for small tiles of memory-bound shapes): everywhere, or
  // (`deep_stages_small`, the planner's default) where M or N is at most kSm90DeepRingsMaxSide; the kernel takes any
  // count that fits shared memory
  bool deep_stages = false;
  // declare CONSUMER_COLS (two or three consumer warpgroups splitting BLOCK_N, as a 64-row tile needs for a second
  // one); the kernel takes it, the planner offers it once measured
  bool consumer_cols = false;
  // declare CONSUMER_K (two consumer warpgroups taking every other k-block of the whole tile, as cuBLAS's 64x64
  // split-K kernel does); the kernel takes it, the planner offers it once measured
  bool consumer_k = false;
  // declare SPLIT_CLUSTER (a tile's slices as one cluster, summed in distributed shared memory); the kernel takes it,
  // the planner offers it once measured
  bool cluster_sum = false;
  bool deep_stages_small = false;
};
// The planner's options, from the environment: SWAP_AB declared unless TILEFORGE_SM90_SWAP_AB=0; REDUCE always;
// CONSUMER_COLS with TILEFORGE_SM90_CONSUMER_COLS=1 (measured no faster: bench/sweeps/sm90-consumer-cols.txt);
// CONSUMER_K with TILEFORGE_SM90_CONSUMER_K=1 (measured slower: bench/sweeps/sm90-consumer-k.txt);
// SPLIT_CLUSTER with TILEFORGE_SM90_CLUSTER_SUM=1 (until measured: bench/sweeps/sm90-cluster-sum.txt);
// the dealt-out atoms with TILEFORGE_SM90_ATOM_SPLIT=1 (until measured on a GPU: bench/sweeps/sm90-atom-split.txt);
// the deep rings where M or N is small unless TILEFORGE_SM90_DEEP_STAGES=0, everywhere with 1
// (bench/sweeps/sm90-deep-dispatch.txt: faster on the H100 where they change the plan).
Sm90SpaceOptions sm90_space_options();
// The options of a space that declares each optional parameter `config` names (SWAP_AB, REDUCE, CONSUMER_COLS,
// CONSUMER_K, SPLIT_CLUSTER), whatever the environment asks the planner for, with the dealt-out atoms and the deep
// rings the kernel takes whether offered or not: what a config given to the backend (pinned, tuned or a test's) is
// checked against.
Sm90SpaceOptions sm90_space_options_declaring(const Config& config);
// Every combination the kernel template and the chip record allow for this problem (without SWAP_AB, or with the
// options given; the family's plug-in plans with sm90_space_options()).
ParamSpace sm90_space(const Problem& problem, const hw::HwProfile& profile);
ParamSpace sm90_space(const Problem& problem, const hw::HwProfile& profile, const Sm90SpaceOptions& options);
// Whether the space of these options declares SWAP_AB for the problem: asked for, beta 0 and a 16-bit C (the
// transposed run writes C through its staging epilogue). The few-row specialist yields to the transposed run only.
bool sm90_transposes(const Problem& problem, const Sm90SpaceOptions& options = sm90_space_options());

// The heuristic: among a fixed list of tiles (128x256 and 256x128 with two consumer warpgroups down to 64x64 with
// one), each with a per-SM efficiency from the probe (bench/results/h200/2026-12-01-sm90-probe), the one with the
// least predicted time = (tiles the busiest SM runs) x tile area / efficiency; then as many stages as shared memory
// holds beside a whole C staging tile (at most 4), the TMA-store epilogue with stmatrix (direct stores for f32
// output or a leading dimension of C that is not a multiple of 8), GROUP_M 8, no cluster.
Config sm90_heuristic(const Problem& problem, const hw::HwProfile& profile);
// The same with the problem's sm90_space, for a caller that builds it anyway.
Config sm90_heuristic(const Problem& problem, const hw::HwProfile& profile, const ParamSpace& space);

// One instance: the source (a few lines: include the family header, instantiate the template as an extern "C"
// kernel) and what its launch needs.
struct Sm90Source {
  std::string source;
  std::string entry;  // extern "C" name: sm90_gemm_<in>_<out>_<layout>_<BMxBNxBK>_...
  int threads = 0;
  int64_t smem_bytes = 0;
  int cluster = 1;    // CTAs per cluster along grid x
  // Tensor-map boxes (elements: the contiguous dimension first), as the template's Config computes them.
  int a_box[2] = {0, 0}, b_box[2] = {0, 0}, c_box[2] = {0, 0};
  // TILEFORGE_SM90_TIMELINE (a diagnostic): the kernel stamps each CTA's phases (sm90/timeline.cuh), and every launch
  // writes them to the file the variable names.
  bool timeline = false;
};
Sm90Source sm90_source(const Problem& problem, const Config& config);

}  // namespace tileforge::cuda

// The sm90 family's cost-model constants (TMA + wgmma, warp-specialized, persistent), each with the reason for its
// value and where it was measured. Constants shared by every family (overlap leak, DRAM efficiency) are in
// plan/cost_constants.hpp.
//
// Calibration: the probe of the kernel template (bench/micro/sm90_gemm_probe.cu, scripts/gpu-sm90-probe) timed
// 12 configs against cuBLAS on the H200 (bench/results/h200/2026-12-01-sm90-probe/call2..call5/table.txt): the
// 128x256 tile with a TMA-store epilogue (L7, L16), with clusters (L8, L17), with a direct epilogue (L4, L5, L6),
// the deferred epilogue (L10), 4 stages with half staging tiles (L14), 128x192 tiles (L18, L19) and the 1x2 cluster
// (L9), at 4096^3 and over the six large shapes. The constants below marked "fitted" were fitted together to
// those 32 rows (least squares on log(predicted / measured) over a grid of values), with the chip record's own rates
// (l2_bytes_per_core_cycle 52 and smem_bytes_per_core_cycle 128 on the H200) and 8192^3 left out: there both cuBLAS
// and the kernel run under the power limit (768 -> 657 TFLOP/s for cuBLAS), which no clock in the chip record says,
// and the model predicts 15% too fast. Residuals of the fit: within 2% on every row of the chosen config (L16) but
// 8192x1024x8192 (+2.5%); the cluster rows at 8192x1024x8192 and 16384x16384x1024 are predicted 5-8% fast (they
// measured 1.02-1.10x apart between calls 2 and 5).
#pragma once

#include "plan/cost_constants.hpp"

namespace tileforge::cuda::sm90_constants {

using namespace plan::constants;

// Share of the profile's dense tensor peak that wgmma reaches in the main loop of two consumer warpgroups, between
// the k-step overheads below (fitted: 0.88 to 1.0 tried; with it, 128x256 tiles at 4096^3 are predicted 751.6
// TFLOP/s against 766.6 measured with the epilogue, the fill and the tail).
inline constexpr double kWgmmaShare = 1.04;

// ... with one consumer warpgroup: it issues every wgmma of the tile and waits on every barrier itself, with no
// second warpgroup to fill the tensor pipe while it waits. An estimate the probe does not isolate: its one-consumer
// config (L1: 128x128, 4 stages, direct epilogue, one tile per CTA) ran 584.1 TFLOP/s at 4096^3, where the model
// predicts 600 for the persistent form of that config with no penalty (L2-bound) and 588 with this one.
inline constexpr double kOneConsumerShare = 0.88;

// Fixed cycles of each k-step of a consumer warpgroup besides the tensor work: the mbarrier wait on the full
// stage, wgmma.fence, commit, wait_group 1 and the arrival on the empty barrier. An estimate (the probe has no
// tile small enough to isolate it); it matters only for small tiles (64x64: 128 tensor cycles per k-step).
inline constexpr double kKStepCycles = 64;

// Least cycles a k-step of a CTA takes however little tensor work it holds: the full-barrier wait, the TMA round
// trip the ring cannot hide at this rate, the release. Measured on the H200 with 64x64 tiles (one consumer, a 1x2
// cluster, 8 stages; bench/results/h200/2026-12-01-sm90-family/call1): 256x256x16384 (16 CTAs, 256 k-steps) ran
// 54.6 us, 512x512x8192 (64 CTAs, 128 k-steps) 30.3 us: about 400 cycles per k-step in all, this floor plus
// kKStepCycles with the cluster's share. Tiles of 128x128 and larger hold more tensor work than this.
inline constexpr double kKStepFloorCycles = 320;

// The shared-memory and L2 rates per SM per cycle are the chip record's (smem_bytes_per_core_cycle,
// l2_bytes_per_core_cycle). Each wgmma.m64nNk16 reads its A (64x16) and B (16xN) from shared memory, so a k-step of
// 64 reads, per m64 row block, 8 KB of A and BLOCK_N x 128 bytes of B: at 128 B/cycle and BLOCK_N 64 that equals
// the tensor time (the wgmma is shared-memory bound), at 256 it is 62% of it. The TMA loads draw on the L2 at the
// record's rate (52 on the H200, measured with cp.async; 80 fitted the probe a little better, 0.016 against 0.017).

// Share of each stage's TMA writes into shared memory ((BLOCK_M + BLOCK_N) x BLOCK_K) that draws on the bandwidth the
// wgmma operand reads use. With only the reads counted, 256x112 tiles (SWAP_AB) were predicted 1.7% faster than
// 128x256 at 5120^3 and measured 15% slower (479.0 against 416.3 us, bench/results/h200/2026-12-05-swap-ab, call1):
// per k-step they read 90 KB and write 46 KB against 471 ns of tensor work, 541 ns at 128 B/cycle with the writes;
// 128x256 reads 80 KB and writes 48 KB against 539 ns (not bound). 0.9 is the least share that orders them as
// measured; 1 (every byte written is a byte the banks serve) moves the choice of no other plan of the public suite
// but 1000^3 (unswapped 64x192 4x1 clusters to 64x128 2x1, measured 5% slower: 12.58 against 11.94 us, call2).
inline constexpr double kTmaWriteSmemShare = 1.0;

// Latency of a TMA load under load (the fit above: 0.6, 0.8 and 1.0 us were tried; the sm80 family uses 1 us for
// cp.async). STAGES - 1 stages are in flight while one is consumed (Little's law).
inline constexpr double kLoadedLatencySeconds = 0.8e-6;
// The same for a stage whose operands stream from HBM under load. Fitted to tune --top 50 on the H200 (bench/results/
// h200/2026-12-02-acc16/call3): 64x14336x4096 with 64x128 tiles ran 45.1 us with 4 stages and 41.0 with 6 (HBM-bound),
// 128x4096x14336 (split-K 2) 48.5 us with 6 stages and 45.3 with 8: the k-steps of both at 3 and 5 stages in flight
// give 2.1-2.2 us.
inline constexpr double kDramLoadedLatencySeconds = 2.15e-6;

// Split-K in one wave and stream-K in one pass (one_wave_l2_seconds): the share of the L2's hit time that does not
// overlap the first reads from DRAM, over the k-steps within this many rings (STAGES each) of a CTA's loop. Fitted on
// the H100's main-loop grid (bench/results/h100/2026-12-06x-main-loop-grid: 256x256x16384 and 512x512x8192, four
// tiles and slice counts each, alone, in 2x1 and in 1x2 clusters, the main loop with no fix-up beside the whole
// kernel): the main loops of 128 CTAs of 16-32 k-steps take 11-13 us beyond the launch for 16.9 MB from DRAM, and
// each MB of L2 reads a cluster saves takes ~0.09 us off them (64x128, 16 slices: 15.94 us alone, 14.37 in 2x1, 14.98
// in 1x2), where the overlapped model saw a tenth of that. 0.4-1.0 and 1.5-3 rings rank the grid alike (regret 1.003
// against 1.042); with 0.7 and 2 the H100's groups since 2026-12-06 rank better (regret 1.0116 -> 1.0081) and the
// H200's since 2026-12-04 too (1.0144 -> 1.0126; bench/tools/model_check.py). Split-K alone (stream-K's one pass left
// out) moved 128x4096x14336 to stream-K on the H200, measured 13-16% slower on the H100.
inline constexpr double kOneWaveL2HitShare = 0.7;
inline constexpr double kOneWaveBurstRings = 2.0;

// A launch with clusters, once: 1024^3 ran 8.93 us with 64x128 tiles alone and 9.82 in clusters of two, 512^3 6.27
// against 7.26, 2048^3 27.7 against 28.7-29.1 (same call), where the model's per-step cluster share is negligible.
// Since the cluster barriers lost their GPU-scope fences (2026-12-06, H100,
// bench/results/h100/2026-12-06l-cluster-refit) the same pairs differ by 0.1-0.2 us (512^3 7.20 against 7.15, 1024^3
// 9.97 against 9.76): 0.2 us. (It stood at 1 us until the cluster's wait was charged on memory-bound main loops too,
// cluster_wait_seconds: without it 0.2 moved 128x4096x14336 into 2x1 clusters, measured 1.8% slower.)
inline constexpr double kClusterLaunchSeconds = 0.2e-6;

// SPLIT_CLUSTER: the two cluster barriers around a tile's sum in the cluster's shared memory (the first a release
// at cluster scope). A prediction, not yet fitted (bench/sweeps/sm90-cluster-sum.txt measures it).
inline constexpr double kClusterSumBarrierSeconds = 0.5e-6;

// Extra time per k-step of a CTA in a cluster of two, as a share of its tensor time (and, cluster_wait_seconds, of
// the main loop's time beyond it where a memory stream or the latency binds): the stage is released to both
// CTAs' producers (remote mbarrier arrivals) and waits for both halves of the multicast. Fitted (0.01-0.03 tried):
// at 4096^3 the 2x1 cluster ran 753.2 TFLOP/s (L8) against 764.5 without (L7), the 1x2 cluster 731.4 (L9).
inline constexpr double kClusterStepShare = 0.05;

// Main loop of a row-major persistent walk (GROUP_M 1) against a grouped one, when the CTAs in flight span more than
// one tile row: L7 with row-major order ran 751.1 TFLOP/s at 4096^3 against 765.9 grouped by 8 and 765.5 by 16
// (call2). The model's DRAM simulation (the sm80 family's LRU over half the L2) finds row-major order reads no more
// from HBM at that size, so the loss is in the L2 (more distinct panels in flight, farther partitions); modelled as a
// slower main loop.
inline constexpr double kRowMajorWalkSlowdown = 1.02;

// Main loop of the Hilbert walk (GROUP_M 0) against the grouped one: with 128x256 tiles the same config ran 2.6%
// slower at 4096^3, 1.3-3.5% at 8192^3 (whole tiles, stream-K), 1.3-2.0% at 16384^3 and 2.5% at 5120^3
// (bench/results/h200/2026-12-02-hilbert, call1), while the DRAM simulation finds no fewer bytes: each warpgroup
// finds its next tile along the curve in O(log) dependent steps, and the curve's waves share no more panels than
// 16 grouped rows do. Modelled, as the row-major walk, as a slower main loop.
inline constexpr double kHilbertWalkSlowdown = 1.022;

// Epilogue bandwidth per SM per cycle, bytes of C written. TMA store (staged through shared memory, one bulk
// store per 64-column box): 15 B/cycle, fitted; the per-tile epilogue shows most at 16384x16384x1024 (16 k-steps
// per tile: 676.9 TFLOP/s against 766.6 at 4096^3 for the same config). Direct stores from the accumulator
// registers (4-byte pairs, eight rows per warp instruction): 5 B/cycle, from L5 (direct, 688.5 TFLOP/s at 4096^3)
// against L7 (TMA store, 764.5).
inline constexpr double kEpilogueTmaBytesPerSmCycle = 15;
inline constexpr double kEpilogueDirectBytesPerSmCycle = 5;
// Where C's rows are not 16 bytes apart (an odd ldc), the direct epilogue stores one element per instruction: about
// half the rate of pairs. Measured at 4095x4097x4093 against the same shape with ldc 4104 (TMA store), 287.2 against
// 238.9 us with 256x128 tiles, four per SM (bench/results/h200/2026-12-02-copy-pdl/call4): ~14 us per 64 KB tile
// against ~6 at 4096^3 with pairs.
inline constexpr double kEpilogueDirectOddLdcSlowdown = 2.0;
// The staging epilogues where a TMA store cannot write C (Params::c_staged_stores): the warpgroups store the staged
// tile themselves, a run of 32 elements of one row per warp instruction. An estimate until measured: between the
// direct stores and the TMA store.
inline constexpr double kEpilogueStagedStoreBytesPerSmCycle = 8;
// The staging tile written with 32-bit shared stores instead of stmatrix: L7 against L16, 764.5 against 766.6
// TFLOP/s at 4096^3 (call5; 613.6 against 618.5 at 2048^3): about 5% more epilogue time.
inline constexpr double kEpilogueNoStmatrixSlowdown = 1.05;
// Half staging tiles (two rounds of stage, fence, store per tile): L14 (4 stages, half) against L7 (3 stages,
// whole), 763.8 against 764.5 at 4096^3; the 4th stage buys nothing there, the split costs a little.
inline constexpr double kEpilogueSplitSlowdown = 1.03;
// Deferred epilogue (the tile packed to 16-bit in registers and stored under the next tile's first wgmma groups):
// slower than the plain TMA store on every shape measured (call4: 742.4 against 764.5 at 4096^3, 583.4 against
// 678.9 at 16384x16384x1024): the packed registers crowd the main loop. Modelled as a longer epilogue.
inline constexpr double kEpilogueDeferredSlowdown = 1.6;

// Split-K / stream-K fix-up. The partial tiles are stored and read back through the L2 at this share of the chip
// record's L2 rate per SM (f32, coalesced 16-byte accesses in fragment order).
inline constexpr double kFixupL2Share = 0.8;
// Fixed time per partial tile a CTA stores (the stores, the CTA barrier, the counter's release/acquire atomic, the
// next work's restart), and per L2 round trip of the summing CTA's read-back (one per group of float4 per thread
// and slice). Measured on the H200 (bench/results/h200/2026-12-01-splitk): with the fix-up's parts left out in turn
// (`probe/`), the stores, barriers and counter cost 1.5-4 us per slice over no fix-up at all; after the read-back
// issued each group's loads together (`sweep3/`), 256x256x16384 with 64x64 tiles ran 18.9 us at SPLIT_K 4 and 16.9
// at 8 (eight round trips of the reading CTA), 1000^3 with 64x128 tiles 11.7 us whole and 17.9 us with SPLIT_K 2
// and two slices per CTA.
inline constexpr double kFixupSeconds = 2.0e-6;
inline constexpr double kFixupReadSeconds = 0.5e-6;
// REDUCE 1: a partial added into the sum tile by vector float atomics (red.global.add.v4.f32, performed at the L2)
// costs this many times its plain store. Fitted on the H200 (bench/results/h200/2026-12-05b-atoms-deep-atomic/atomic,
// each atomic config beside the ordered sum of the same tiles in one process): 256x256x16384 64x128 SPLIT_K 16 16.42
// against 15.97 us, SPLIT_K 8 16.67 against 16.54, 512x512x8192 128x128 SPLIT_K 8 19.49 against 17.47, 128x4096x14336
// 64x128 SPLIT_K 2 44.74 against 45.50. The first three alone give 6.3, 5.7 and 4.8; with 2 (the assumption before)
// --nondeterministic planned atomic sums that ran up to 16% slower (the stream-K sum at 128x4096x14336: 52.8 us).
// 6 keeps every measured loss out of those plans at the price of the one 1.7% gain.
inline constexpr double kFixupAtomicSlowdown = 6.0;

// Fixed cost of one kernel launch seen by device-side timing (launch-to-start gap, block scheduling, tail drain),
// as for the sm80 family.
inline constexpr double kGpuLaunchSeconds = 3.0e-6;

// The TMA unit's cycles per 128-byte box row it copies, on the sectors and off them (a row off the sectors spans two
// lines and five sectors), where an operand is read in place with rows off the sectors (the price's TMA-row stream).
// Fitted on 3000^3 f16 RR on the H200 (A and B rows 6000 bytes apart, 16 off the sectors), the TMA unit's time per
// k-step taken as the whole kernel's over the busiest SM's k-steps: 128x192 tiles with B's rows off (192 off, 128 on)
// 103.1 us, both off (320 off) 128.4 us (bench/results/h200/2026-12-01-align); 192x192 tiles with both off, 108.3 us
// (384 off per k-step), in 1x2 clusters 92.9 us (288), in 2x1 96.4 us (288) (bench/results/h200/2026-12-04n-192).
inline constexpr double kTmaRowOffSectorsCycles = 4.6;
inline constexpr double kTmaRowCycles = 2.3;

// Where that TMA-row stream and the tensor work take about as long per k-step, the ring between the producer and the
// consumers absorbs the jitter of each only as far as it is deep: the main loop loses this share of the shorter of
// the two over the stages in flight. Measured on 3000^3 (192x192 tiles in 1x2 clusters, rows off the sectors read in
// place): 88.2 us with 4 stages against 92.0 with 3 (bench/results/h200/2026-12-04r-thirds), which 0.4 would give
// in full; but from 0.2 up 64x192 tiles in 8x1 clusters tie with or pass 4x1 at 1000^3, measured slower (12.16-12.67
// against 11.90-12.10 us, bench/results/h200/2026-12-04j-clusters). 0.1 keeps both orders as measured.
inline constexpr double kTmaCouplingShare = 0.1;

// COPY_AB's copy kernel (16 bytes per thread from 16-byte aligned rows): the share of the chip record's bandwidth it
// moves an operand at, read and write counted. An estimate until the wide copy is measured; the 2-byte copy it
// replaced measured 0.87 TB/s (3000^3: 123.0 us with both operands copied against 81.5 us for the GEMM alone).
inline constexpr double kCopyBandwidthShare = 0.7;

}  // namespace tileforge::cuda::sm90_constants

// The sm80 family's cost-model constants (cp.async + ldmatrix + mma.sync on NVIDIA GPUs), each with the reason for
// its value. Constants shared by every family (overlap leak, DRAM efficiency) are in plan/cost_constants.hpp.
#pragma once

#include "plan/cost_constants.hpp"

namespace tileforge::cuda::sm80_constants {

using namespace plan::constants;


// Share of the dense tensor peak that mma.sync reaches with the best tile. Hopper's datasheet peak assumes wgmma;
// mma.sync tops out near 65% of it (docs/HOPPER-GEMM.md). On sm_80/86/89 mma.sync is the native path, and
// CUTLASS/cuBLAS kernels built on it reach 80-90% of the A100's 312 TFLOP/s at large sizes.
inline constexpr double kMmaSyncShareWithWgmma = 0.65;
inline constexpr double kMmaSyncShareNative = 0.85;

// The chip's own rates are fields of its record, each with its source (profiles/*.json): shared-memory bytes per SM
// per cycle (smem_bytes_per_core_cycle), L2 bytes per SM per cycle (l2_bytes_per_core_cycle: 32 measured on A100,
// 52 on the H200) and resident blocks per SM (max_blocks_per_core). The numbers below are the family's own model.

// Share of the L2 that holds operand panels reused across waves: A100/H100 split the L2 in two partitions that
// may duplicate lines, and C tiles and other streams occupy the rest.
inline constexpr double kL2UsableShare = 0.5;

// Latency of a global load under a saturated memory system (idle L2/HBM latency is 0.3-0.6 us on A100/H100 and
// roughly doubles under load). The pipeline must keep (STAGES-1) stages in flight to cover it (Little's law).
inline constexpr double kLoadedLatencySeconds = 1.0e-6;

// Fixed cost of one kernel launch seen by device-side timing (launch-to-start gap, block scheduling, tail drain).
inline constexpr double kGpuLaunchSeconds = 3.0e-6;

// The CUDA runtime reserves 1 KB of shared memory per resident block on sm_80 and later.
inline constexpr double kSmemReservedPerBlock = 1024;

// Warps per SM that keep all four sub-partitions' tensor cores fed: one per sub-partition, each with the
// independent mma of its warp tile to issue back to back. It was 8 (a second warp per sub-partition to cover
// stalls) until kernel version 3 made the copies cheap: in the H200 exhaustive searches of that kernel
// (bench/results/h200/2026-11-29-tune-v3) 4-warp blocks with 64x32 warp tiles beat 8-warp ones with 32x32 at
// 1024^3 (12.8 us against 13.7), and replaying tune on the five searches (bench/tools/tune_replay.py) with 4 put
// the fastest config at ranks 1-8 on all five (1024^3: 68th with 8).
inline constexpr double kWarpsForFullRate = 4;
// ... and warps per block: a block of fewer warps than sub-partitions runs below the rate however many of its
// kind share the SM. Each of its warps copies more of every k-tile (64 threads issue a 128x64 tile's copies where
// 256 issue a 256x128 tile's) and reads more bytes per mma. Measured on the H200 (kernel version 3): 128x64 tiles
// with 2 warps ran 0.264 ms at 3000^3 against 0.193-0.195 for 128x128 tiles with 4 warps
// (bench/results/h200/2026-11-29-tune-v3*/tune-public.json), and 0.351 against 0.301 ms for the best at 4096^3. With
// 4 warps per SM counted as full rate, the model had made the 2-warp block its first choice at 3000^3.
inline constexpr double kWarpsPerBlockForFullRate = 4;

// Cycles per 16-byte chunk, per thread, of a bounds-checked copy: a tile that does not lie wholly inside M and N
// copies every k-tile through the checked path (row and column tests, zero-fill sizes, a branch), a chain of
// dependent integer instructions the warp waits on unless another warp of its sub-partition has work. Measured on
// the H200 (kernel version 3, bench/results/h200/2026-11-29-tune-small/ against -tune-v3/): 128x64x64 tiles take
// 3.9 us longer at 1000^3 than 1024^3 scaled by flops with 4 warps (12 chunks per thread per k-tile) and 2.3 us
// with 8 warps (6): 51-61 cycles per chunk. At 1000^3 the model without it put the 4-warp block first, which
// measures 6% slower than the 8-warp one.
inline constexpr double kCheckedCopyCyclesPerChunk = 55;

// Cycles of each k-step's __syncthreads and cp.async.wait_group during which a block's tensor pipes idle; another
// resident block fills the bubble. This is what makes a deeper BLOCK_K pay off beyond the bytes it moves.
inline constexpr double kKStepSyncCycles = 40;

// Time of the block's pipeline (tensor work, shared-memory reads and the latency-bound loads) without FRAG_PIPE,
// relative to with it. Measured on the H200 over the public suite (bench/results/h200/2026-11-29-tune: 118 pairs of
// configs that differ only in FRAG_PIPE): FRAG_PIPE=0 was slower in every pair, by 1.03-1.48x, median 1.22 (1.2-1.3
// for 64x64 warp tiles, 1.1-1.5 for the 16x16 warp tiles of skinny and small-MN shapes): without it each k-step's
// ldmatrix latency and every barrier stall the tensor pipe in the warp's shadow.
inline constexpr double kFragPipeOffSlowdown = 1.2;

// Rate of global loads by vector width, relative to 16-byte cp.async: each instruction moves VEC bytes, so narrower
// loads need more LSU issue slots per byte; 2-byte loads are not asynchronous at all (no 2-byte cp.async: the
// kernel stages them through registers and the pipeline stops overlapping them).
inline constexpr double kVecLoadShare16 = 1.0;
inline constexpr double kVecLoadShare8 = 0.85;
inline constexpr double kVecLoadShare4 = 0.6;
inline constexpr double kVecLoadShare2 = 0.2;

// Waves whose DRAM traffic is simulated tile by tile (group-M raster, LRU L2); the rest is extrapolated, because
// the raster repeats with the period of one group.
inline constexpr int kSimulatedWaves = 32;

}  // namespace tileforge::cuda::sm80_constants

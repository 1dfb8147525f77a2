// The sm90 kernel family on the host side (Hopper, sm_90a: TMA loads on mbarriers, wgmma with f32 accumulators,
// a producer warpgroup and one or two consumer warpgroups, a persistent grid, clusters with TMA multicast, a
// TMA-store epilogue): its parameter space with the chip record's limits, resource estimates, the small documented
// heuristic, and the generated source of one instance of src/backends/cuda/kernels/sm90/gemm.cuh.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "backends/backend.hpp"
#include "hw/hw_profile.hpp"

namespace tileforge::cuda {

// The family's version. Bump when a change makes old tuned records invalid.
inline constexpr int kSm90Version = 1;

// EPILOGUE values (tf::sm90::kEpilogue* in gemm.cuh).
inline constexpr int kSm90EpilogueDirect = 0;
inline constexpr int kSm90EpilogueTmaStore = 1;
inline constexpr int kSm90EpilogueDeferred = 2;

// BLOCK_K is one 128-byte swizzle row of 16-bit elements.
inline constexpr int kSm90BlockK = 64;

// The smallest output the family takes, in 64x64 tiles (its smallest tile): the kernel has no split-K, so a
// smaller C leaves most SMs of the persistent grid idle while each CTA walks the whole K. Measured on the H200
// (bench/results/h200/2026-12-01-sm90-family/call1): 256x256x16384 (16 tiles) ran at 0.80x the sm80 family's
// config with 16x32 tiles (39.3 against 49.2 TFLOP/s); 16x4096x4096 and 512x512x8192 (64 tiles each) at 0.98x and
// 1.00x; 1024^3 (256 tiles) at 1.29x.
inline constexpr int64_t kSm90MinTiles = 128;

// Threads of one CTA: a producer warpgroup and CONSUMERS consumer warpgroups of 128.
int sm90_threads(const Config& config);
// Dynamic shared memory of one CTA, as the template lays it out (gemm.cuh Config::SMEM_BYTES): STAGES x (A + B
// tile), the C staging tile of the TMA-store epilogues, 2 x STAGES mbarriers, and 1 KB to align the base.
int64_t sm90_smem_bytes(const Config& config);
// f32 accumulators per consumer thread: (BLOCK_M / CONSUMERS / 64) x BLOCK_N / 2.
int sm90_accumulators(const Config& config);
// setmaxnreg targets: 40 for the producer, 232 for each of two consumers; none (0) with one consumer, whose 256
// threads may use up to 255 registers each as launched.
int sm90_producer_regs(const Config& config);
int sm90_consumer_regs(const Config& config);
// Registers the CTA holds: 128 x producer + 128 x CONSUMERS x consumer registers (setmaxnreg), or 255 per thread.
int64_t sm90_register_budget(const Config& config);
// CTAs per cluster.
int sm90_cluster_size(const Config& config);

// Every combination the kernel template and the chip record allow for this problem.
ParamSpace sm90_space(const Problem& problem, const hw::HwProfile& profile);

// The heuristic: among a fixed list of tiles (128x256 and 256x128 with two consumer warpgroups down to 64x64 with
// one), each with a per-SM efficiency from the probe (bench/results/h200/2026-12-01-sm90-probe), the one with the
// least predicted time = (tiles the busiest SM runs) x tile area / efficiency; then as many stages as shared memory
// holds beside a whole C staging tile (at most 4), the TMA-store epilogue with stmatrix (direct stores for f32
// output or a leading dimension of C that is not a multiple of 8), GROUP_M 8, no cluster.
Config sm90_heuristic(const Problem& problem, const hw::HwProfile& profile);

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
};
Sm90Source sm90_source(const Problem& problem, const Config& config);

}  // namespace tileforge::cuda

// The sm80_skinny kernel family on the host side (src/backends/cuda/kernels/sm80_skinny/gemm.cuh: GEMMs of up to 16
// rows that read B once with 16-byte cp.async and per-warp pipelines, mma.sync m16n8k16, a deterministic split-K):
// which problems it takes, its parameter space, cost model, heuristic, workspace and generated source.
#pragma once

#include <cstdint>
#include <string>

#include "backends/backend.hpp"
#include "hw/hw_profile.hpp"
#include "plan/cost_model.hpp"

namespace tileforge::cuda {

// The family's version. Bump when a change makes old tuned records invalid.
inline constexpr int kSkinnyVersion = 1;
// Columns of C per CTA (one 128-byte line of a row of B) and K rows per pipeline step (one mma k).
inline constexpr int kSkinnyStripN = 64;
inline constexpr int kSkinnyStepK = 16;
// The largest M the family takes: one m16 tile. With more rows the kernel's per-warp tiles run short of registers
// and the sm90 family's wgmma tiles win (bench/results/h200/2026-12-01-skinny: 64x14336x4096 at 0.64x cuBLAS here,
// 0.88x with sm90).
inline constexpr int64_t kSkinnyMaxM = 16;
// On sm_90 and later the sm90 family's transposed run (SWAP_AB: M along the wgmma's N, 16-row tiles) streams B
// faster from 8 rows up, so the family leads only up to this M there. Measured on the H200 (bench/results/h200/
// 2026-12-05-swap-ab, call2, f16, against the sm90 family's own choice): 8x14336x4096 43.1 us against 39.3,
// 16x14336x4096 43.2 against 40.2, 16x4096x14336 42.9 against 40.8, 16x4096x4096 19.0 against 18.0; but
// 4x4096x4096 17.0 against 17.9 and 1x8192x8192 43.9 against 44.7.
inline constexpr int64_t kSkinnyLeadMOnWgmma = 4;

// Why the family does not take a problem ("" when it does): f16/bf16 inputs with f32 accumulation, one matrix,
// M <= 16, A and B row-major (RR) with leading dimensions and N multiples of 8 (whole 16-byte chunks), K >= 1,
// alpha != 0, sizes that fit an int.
std::string skinny_refusal(const Problem& problem);

// How one config shares out a problem: strips of 64 columns, SPLIT_K slices of K (each a multiple of 16 rows), the
// workspace (a counter per strip, padded to 256 bytes, and f32 partial sums per strip, slice and row).
struct SkinnyGrid {
  int64_t strips = 0;
  int64_t split_k = 1;
  int64_t k_per_split = 0;
  int64_t counter_bytes = 0;
  int64_t workspace_bytes = 0;  // 0 without split-K
};
SkinnyGrid skinny_grid(const Problem& problem, const Config& config);

int skinny_threads(const Config& config);
// Dynamic shared memory of one CTA: WARPS x STAGES x (A step + B step), or the warps' reduction tile if larger.
int64_t skinny_smem_bytes(const Problem& problem, const Config& config);

// WARPS (8 or 16: 4 was never the fastest in the probe), STAGES (2 to 8), SPLIT_K (1 to 16): shared memory within the chip record's per-block limit, no
// empty slice.
ParamSpace skinny_space(const Problem& problem, const hw::HwProfile& profile);

// Predicted time: a fixed cost (launch, ramp and the write-back of the dirty lines a cold L2 leaves), B and A at
// the bandwidth the loads in flight allow (Little's law over the resident warps' pipelines, capped at a share of the
// chip record's bandwidth), extra waves, and the split-K partials and fix-up. Fitted to the probe of 2026-12-01
// (bench/micro/sm80_skinny_probe.cu).
plan::Cost skinny_cost(const Problem& problem, const hw::HwProfile& profile, const Config& config);

// Without the cost model: 8 warps, 4 stages, and the least SPLIT_K that gives every SM a CTA (at most 8).
Config skinny_heuristic(const Problem& problem, const hw::HwProfile& profile);

struct SkinnySource {
  std::string source;
  std::string entry;  // extern "C" name: sm80_skinny_gemm_<in>_<out>_<layout>_m<MT>_w<W>_s<S>_k<SPLIT>
  int threads = 0;
  int64_t smem_bytes = 0;
};
SkinnySource skinny_source(const Problem& problem, const Config& config);

}  // namespace tileforge::cuda

// The triton kernel family on the host side (src/backends/cuda/kernels/triton/gemm.py, compiled by Triton ahead of
// time): which problems it takes, its parameter space with Triton's own shared-memory and register use per target,
// its cost model and heuristic, and the compile request of one Config.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backends/backend.hpp"
#include "backends/cuda/triton/triton_compiler.hpp"
#include "hw/hw_profile.hpp"
#include "plan/cost_model.hpp"

namespace tileforge::cuda {

// The family's version. Bump when a change makes old tuned records invalid.
inline constexpr int kTritonVersion = 1;

// Why the family does not take a problem ("" when it does): f16/bf16 inputs, f32 accumulation, f16/bf16/f32 output,
// sizes and leading dimensions that fit a 32-bit int.
std::string triton_refusal(const Problem& problem);

// Whether the chip record names a target Triton compiles for: NVIDIA sm_80 and later ("cuda", "90"), AMD CDNA
// gfx90a/gfx942 ("hip", "gfx942"); empty backend when not.
struct TritonTarget {
  std::string backend;  // "cuda", "hip", or "" when Triton has no backend for the chip
  std::string arch;     // "90", "80", "gfx942"
  int warp_size = 32;
  int sm = 0;           // NVIDIA compute capability x 10 (90), 0 on AMD
};
TritonTarget triton_target(const hw::HwProfile& profile);
// "cuda:90" / "hip:gfx942": the family's compile target string (compile_target, compile_ahead).
std::string to_string(const TritonTarget& target);
Expected<TritonTarget> parse_target(std::string_view text);

// What Triton makes of one config on a target, as fitted to the compiler's own reports
// (bench/triton/resource_sweep.py; bench/results/triton-resources): whether the dot becomes Hopper's warpgroup MMA,
// the shared-memory buffers its software pipeline allocates, and registers per thread.
struct TritonResources {
  bool wgmma = false;
  int64_t buffers = 0;       // copies of one k-step's A and B tiles in shared memory
  int64_t smem_bytes = 0;    // dynamic + static shared memory of one program
  int64_t acc_per_thread = 0;  // f32 accumulator registers per thread
  int64_t staging_per_thread = 0;  // registers a k-step's loads pass through without async copies
  int64_t registers = 0;     // predicted registers per thread
  bool pipelined = true;     // the loads go through async copies (16-byte aligned operands)
};
TritonResources triton_resources(const Problem& problem, const TritonTarget& target, const Config& config);

// Whether Triton's loads can be vectorized and asynchronous: lda and ldb (and batch strides) divisible by 16, the
// hint its JIT gives an int argument, which the family's compile request gives exactly when it holds.
bool triton_operands_aligned(const Problem& problem);

// BLOCK_M, BLOCK_N (16 to 256), BLOCK_K (32 to 128), GROUP_M, WARPS (num_warps) and STAGES (num_stages), with the
// chip record's shared memory, registers and threads.
ParamSpace triton_space(const Problem& problem, const hw::HwProfile& profile);

// triton_space less its planning rules (a tile larger than the problem): what a config needs to compile and run,
// which prepare checks, so that another tuner's list (the tutorial's) runs as that tuner would run it.
ParamSpace triton_limits(const Problem& problem, const hw::HwProfile& profile);

// Triton's tutorial autotune list for CUDA (17 configs: BLOCK_M, BLOCK_N, BLOCK_K, STAGES, WARPS, with GROUP_M 8) as
// this family's configs, in the tutorial's order.
std::vector<Config> triton_tutorial_configs();

// Predicted time: tiles over the SMs in waves, the dot at the rate of the MMA Triton emits for the tile, operand
// traffic from DRAM (the grouped raster over the L2) and from L2 into each SM, the loads in flight, launch and fill.
plan::Cost triton_cost(const Problem& problem, const hw::HwProfile& profile, const Config& config);

// Without the cost model: the Triton tutorial's rule of thumb, 128x128x64 with 8 warps and 3 stages on large
// problems, smaller tiles where they give every SM a program.
Config triton_heuristic(const Problem& problem, const hw::HwProfile& profile);

// The compile request of one config for a problem on a target; `pointers_aligned`: A, B and C start on 16 bytes
// (the run checks it).
triton::Request triton_request(const Problem& problem, const Config& config, const TritonTarget& target,
                               bool pointers_aligned = true);

}  // namespace tileforge::cuda

// The sm80 kernel family on the host side: its parameter space with the hardware's limits, resource estimates,
// the small documented heuristic that picks a config, and the generated source of one instance.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "backends/backend.hpp"
#include "hw/hw_profile.hpp"

namespace tileforge::cuda {

// The family's version. Bump when a change makes old tuned records invalid. 2: copies and fragment addresses
// hoisted out of the k loop, BLOCK_K 64 with FRAG_PIPE legal for 8-warp 64x64 warp tiles: records timed on
// version 1 were chosen without those configs and measured on a kernel that no longer exists. 3: k-tiles that lie
// inside the matrix are copied without bounds checks in a branch-free loop (records of 2 timed a slower main loop).
// 4: COPY_AB's copy reads 16 bytes at a time from rows of any alignment (records of 3 with COPY_AB timed 2-byte reads).
// 5: SPLIT_K declared by default (measured on an H100: 1.32x at 512x512x8192, 2.24x at 256x256x16384 over the whole-K
// configs); records of 4 were chosen without the split configs.
inline constexpr int kSm80Version = 5;

// The widest vector (16, 8, 4 or 2 bytes) every row of A and B can be read with, given their leading
// dimensions and base pointers (nullptr: assume the 256-byte alignment of cudaMalloc/cuMemAlloc).
int max_vec_bytes(const Problem& problem, const void* a = nullptr, const void* b = nullptr);
// The widest C store (2 elements or 1) the epilogue may use.
int epilogue_vec(const Problem& problem, const void* c = nullptr);

// Dynamic shared memory of one block (the kernel has no static shared memory).
int64_t sm80_smem_bytes(const Config& config);
// Upper bound on registers per thread: accumulators, two k-steps of A and B fragments, about one register per
// copy chunk of a k-tile, and fixed allowances for the copy state, indices, the epilogue and FRAG_PIPE. Checked
// against the compiler's report in CI.
// `arch` is the NVRTC target ("sm_90a", "sm_80"); empty means the most demanding target measured.
int sm80_register_estimate(const Config& config, std::string_view arch = {});
int sm80_threads(const Config& config);

// Every combination the hardware allows for this problem on this chip (limits from the profile), with SPLIT_K where
// `split_k` and STREAM_K where `stream_k` (the two-argument form: as sm80_split_k_declared() and
// sm80_stream_k_declared() say).
ParamSpace sm80_space(const Problem& problem, const hw::HwProfile& profile);
ParamSpace sm80_space(const Problem& problem, const hw::HwProfile& profile, bool split_k, bool stream_k = false);

// SPLIT_K: the blocks of a tile run slices of K (gridDim.z) and the last to arrive sums their f32 partials in slice
// order (bit-identical from run to run). STREAM_K: a persistent grid of sm80_stream_k_workers() blocks walks the tiles
// and shares the k-blocks of the last ones (kernels/common/work_schedule.cuh), the pieces of a shared tile summed the
// same way. SPLIT_K is declared unless TILEFORGE_SM80_SPLIT_K=0; STREAM_K only with TILEFORGE_SM80_STREAM_K=1 (measured
// slower than whole tiles or split-K on every shape swept on an H100: bench/results/h100/2026-12-05-suite-sm80-split);
// a config that names either runs either way. Without the parameters: neither.
bool sm80_split_k_declared();
bool sm80_stream_k_declared();
int64_t sm80_split_k(const Config& config);
bool sm80_stream_k(const Config& config);
// Blocks of a stream-K grid on a chip: every SM's resident blocks of the config (the cost model's occupancy). The
// kernel's own launch uses the device's SM count times the compiled kernel's occupancy.
int64_t sm80_stream_k_workers(const Config& config, const hw::HwProfile& profile);
// A stream-K launch's decomposition over `workers` blocks (at most one per k-block).
struct Sm80StreamK {
  int64_t tiles = 0, k_blocks = 0, workers = 0, sk_tiles = 0;
};
Sm80StreamK sm80_stream_k_schedule(const Problem& problem, const Config& config, int64_t workers);
// The workspace of a split-K launch: one counter per output tile of every batch entry (padded to 256 bytes), then
// SPLIT_K f32 partial tiles per output tile. Of a stream-K launch over `workers` blocks: one counter per shared tile,
// then two f32 tiles per block. Zero bytes otherwise.
struct Sm80Workspace {
  int64_t counter_bytes = 0;
  int64_t workspace_bytes = 0;
};
Sm80Workspace sm80_workspace(const Problem& problem, const Config& config, int64_t workers = 0);
// The problem as the cost model sees a split-K launch: SPLIT_K times the batch entries, each with K the largest
// slice's (whole BLOCK_K tiles, at most K).
Problem sm80_slice_problem(const Problem& problem, int64_t split_k, int64_t block_k);

// The heuristic until the planner drives dispatch: among a fixed list of tile shapes (128x256 down to 16x64),
// each with its FRAG_PIPE setting and a per-SM efficiency measured on the H200, the one with the least
// predicted time = waves x blocks sharing an SM x tile area / efficiency; BLOCK_K 32; as many stages (up to 4)
// as shared memory holds; GROUP_M 8; the widest legal vector; COPY_AB when the operands' alignment would
// otherwise force loads narrower than 16 bytes on a problem large enough to repay the copy.
Config sm80_heuristic(const Problem& problem, const hw::HwProfile& profile);

struct GeneratedKernel {
  std::string source;       // a few lines: include the family header, instantiate one template
  std::string entry;        // extern "C" name of the __global__ function
  int threads = 0;
  int64_t smem_bytes = 0;
};
// The source of one instance. `vec_bytes` is the load width actually compiled (16 after COPY_AB).
GeneratedKernel sm80_source(const Problem& problem, const Config& config, int vec_bytes, int epilogue_vec);

}  // namespace tileforge::cuda

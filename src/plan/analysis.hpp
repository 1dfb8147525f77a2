// The first questions about a GEMM on a chip: compute- or memory-bound (roofline), waves of tiles over the
// cores, tail waste of a tile size, and which load paths (TMA, vector widths) the operands allow. Pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "hw/hw_profile.hpp"
#include "tileforge/tileforge.hpp"

namespace tileforge::plan {

// The peak that applies to a problem's precision on a chip, and where it came from.
struct PeakChoice {
  std::optional<double> tflops;
  std::string note;  // "f16 inputs, f32 accumulation", or why another entry (or none) was used
};
PeakChoice peak_for(const Problem& problem, const hw::HwProfile& profile);

struct Roofline {
  double flops = 0;          // 2*M*N*K*batch
  double bytes_a = 0;        // each operand read once
  double bytes_b = 0;
  double bytes_c_read = 0;   // beta != 0 reads C
  double bytes_c_write = 0;  // C written once
  double min_bytes = 0;
  double intensity = 0;      // FLOPs per byte of min_bytes
  PeakChoice peak;
  double bandwidth_gbps = 0;
  std::optional<double> ridge;   // FLOPs per byte where compute time equals memory time
  bool compute_bound = false;    // intensity >= ridge (with no peak recorded: false, and `ridge` is empty)
  double compute_floor_s = 0;    // flops at the peak (0 without a peak)
  double memory_floor_s = 0;     // min_bytes at the datasheet bandwidth
  double floor_s = 0;            // the larger: no kernel can be faster
};
Roofline analyze_roofline(const Problem& problem, const hw::HwProfile& profile);

// How one tile size covers the problem and how its tiles spread over the cores.
struct WaveAnalysis {
  int64_t tile_m = 0, tile_n = 0, tile_k = 0;
  int64_t tiles_m = 0, tiles_n = 0, k_steps = 0;
  int64_t tiles = 0;              // tiles_m * tiles_n * batch
  int64_t cores = 0;
  int occupancy = 1;              // tiles resident per core at once
  int64_t slots = 0;              // cores * occupancy
  int64_t waves = 0;              // ceil(tiles / slots)
  double waves_exact = 0;         // tiles / slots
  double last_wave_fill = 0;      // share of slots the last wave uses
  double wave_efficiency = 0;     // tiles / (waves * slots)
  int64_t max_tiles_per_core = 0; // ceil(tiles / cores): the busiest core's share
  double core_balance = 0;        // tiles / (cores * max_tiles_per_core)
  double waste_m = 0, waste_n = 0, waste_k = 0;  // padded share of each dimension: (padded - size) / padded
  double padded_work_share = 0;   // 1 - M*N*K / (Mp*Np*Kp): work spent on padding
};
WaveAnalysis analyze_waves(const Problem& problem, int64_t cores, int occupancy, int64_t tile_m, int64_t tile_n,
                           int64_t tile_k);

// Which global-load paths the operands allow on this chip.
struct PathAnalysis {
  bool tma_on_chip = false;   // the profile lists "tma"
  bool tma_legal = false;     // on the chip, and every leading dimension and batch stride is a multiple of 16 B
  std::string tma_reason;
  int vector_bytes = 0;       // widest load (16, 8, 4, or one element) every row of A and B allows
  std::string vector_reason;
};
PathAnalysis analyze_paths(const Problem& problem, const hw::HwProfile& profile);

// The widest of 16, 8, 4, 2 bytes (not narrower than one element) that divides the byte offset of every row and
// batch entry of an operand with leading dimension `ld` and batch stride `stride` (0 when batch == 1).
int row_alignment_bytes(int64_t ld, int64_t stride, int64_t element_bytes);

}  // namespace tileforge::plan

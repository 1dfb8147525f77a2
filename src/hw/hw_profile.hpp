// HwProfile: a chip as a record of numbers (cores, caches, vector width, matrix units, peaks, bandwidth),
// each with its source; loaded from profiles/*.json or detected on the running host.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/expected.hpp"
#include "tileforge/tileforge.hpp"

namespace tileforge::hw {

struct CacheLevel {
  int level = 0;                  // 1, 2, 3
  std::string kind = "data";      // "data" or "unified" (L1 instruction caches are not recorded)
  int64_t size_bytes = 0;         // per instance
  int ways = 0;                   // associativity; 0 = unknown
  int line_bytes = 64;
  int shared_by = 1;              // cores (or SMs) sharing one instance
  bool operator==(const CacheLevel&) const = default;
};

// One matrix instruction shape the chip offers (wgmma m64nNk16, mma.sync m16n8k16, AMX tile, ...).
struct MatrixUnit {
  std::string name;               // "mma.sync.m16n8k16", "wgmma.m64nNk16", "amx-bf16"
  int m = 0, n = 0, k = 0;
  DType input = DType::f16;
  DType accum = DType::f32;
  int n_step = 0;                 // when > 0, n is the largest N and any multiple of n_step up to it is legal
  bool operator==(const MatrixUnit&) const = default;
};

// Peak rate of the whole chip for one input precision and accumulator.
struct PeakRate {
  DType input = DType::f32;
  DType accum = DType::f32;
  double tflops = 0;
  std::string source;             // "datasheet: ...", "measured: FMA loop, 2 threads, 2026-11-29"
  bool operator==(const PeakRate&) const = default;
};

struct HwProfile {
  std::string name;               // "h200", "generic-avx2", "host-cpu"
  std::string display_name;       // "NVIDIA H200 SXM"
  std::string kind;               // "cpu" or "gpu"
  std::string vendor;             // "nvidia", "amd", "intel", "huawei", ...
  std::string arch;               // "sm_90a", "sm_80", "x86-64-v3", "gfx942", "davinci"
  int cores = 0;                  // CPU cores or GPU SMs / CUs / AI cores
  double boost_clock_ghz = 0;     // 0 when unknown (virtual machines expose none)
  int vector_bits = 0;            // SIMD width (CPU) or 0 for GPUs
  std::vector<std::string> features;   // "avx2", "fma", "avx512f", "amx-bf16", "tma", "wgmma", ...
  int64_t smem_per_core_bytes = 0;     // GPU shared memory per SM (0 on CPUs)
  int64_t smem_per_block_bytes = 0;    // largest per-block allocation (GPU)
  int64_t registers_per_core = 0;      // 32-bit registers per SM, or architectural vector registers per core
  int max_threads_per_core = 0;        // GPU resident threads per SM
  std::vector<CacheLevel> caches;
  std::vector<MatrixUnit> matrix_units;
  std::vector<PeakRate> peaks;
  double mem_bandwidth_gbps = 0;       // GB/s
  // Rates the cost models read, per core (SM) and cycle; 0 where the record does not know the number (the cost
  // model then names the field) or where it does not apply to the kind of chip (the source says which).
  int max_blocks_per_core = 0;            // GPU: thread blocks resident per SM at once
  double l2_bytes_per_core_cycle = 0;     // L2 -> one core (SM) per cycle
  double l3_bytes_per_core_cycle = 0;     // CPU: L3 -> one core per cycle (its share of a shared L3)
  double smem_bytes_per_core_cycle = 0;   // GPU: shared memory <-> one SM per cycle
  int fma_pipes = 0;                      // CPU: vector FMA instructions of vector_bits width per core per cycle
  int fma_latency_cycles = 0;             // CPU: cycles from an FMA to a dependent FMA
  int load_ports_per_cycle = 0;           // CPU: vector loads (or broadcasts) of vector_bits width per cycle
  bool measured = false;               // true when detected on this host rather than loaded from a record
  bool representative = false;         // numbers describe a class of parts (one reference SKU), not one chip
  std::string notes;                   // free text: the reference part, caveats
  std::vector<std::string> match_names;  // device names a detected GPU reports for this record ("NVIDIA H200")
  // A detected CPU: the microarchitecture record its per-core rates come from, or the ISA-class record standing in
  // ("no record for GenuineIntel family 0x6 model 0x97: the generic AVX2 core record ..."); empty otherwise.
  std::string uarch;
  std::map<std::string, std::string> sources;  // field name -> where its number comes from

  // Feature names compare case-insensitively with '-' and '_' equal ("avx512_bf16" finds "avx512-bf16").
  bool has(const std::string& feature) const;
  const CacheLevel* cache(int level) const;        // nullptr when the record has none
  std::optional<double> peak_tflops(DType input, DType accum) const;
  // Compute-bound above this many FLOPs per byte (peak / bandwidth), for the given precision.
  std::optional<double> ridge_flops_per_byte(DType input, DType accum) const;
  bool operator==(const HwProfile&) const = default;
};

}  // namespace tileforge::hw

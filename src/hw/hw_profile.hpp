// HwProfile: a chip as a record of numbers (cores, caches, vector width, matrix units, peaks, bandwidth),
// each with its source; loaded from profiles/*.json or detected on the running host.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/expected.hpp"
#include "tileforge/tileforge.hpp"

namespace tileforge::hw {

// How the host CPU's record gets its FMA peak and bandwidth (hw.hpp's host_cpu_profile): measured by this process
// (the tool), or stored by an earlier measuring process, else nominal (library calls, which measure nothing).
enum class HostPeaks { measure, stored_or_nominal };

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
  // GPU: thread-block clusters resident at once, by cluster size, at one block per SM (the occupancy query's
  // answer): above two CTAs the GPCs leave SMs over. Empty where unknown (then no cluster above two is planned).
  std::map<int, int> resident_clusters;
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
  // The NVIDIA compute capability of `arch` as one number (sm_80 -> 80, sm_90a -> 90); 0 for other chips.
  int nvidia_sm() const;
  std::optional<double> peak_tflops(DType input, DType accum) const;
  // Compute-bound above this many FLOPs per byte (peak / bandwidth), for the given precision.
  std::optional<double> ridge_flops_per_byte(DType input, DType accum) const;
  bool operator==(const HwProfile&) const = default;
};

// ---- physical plausibility -----------------------------------------------------------------------------------------

// The range a number of a chip record (or a host measurement) must lie within to describe a chip at all. The bounds
// are deliberately generous: they must admit every real chip for years, and exist to stop a typo or a hostile record
// (1e9 cores, a 2^62-byte cache, 1e30 TFLOP/s) from dividing by zero, overflowing or hanging the planner, and to stop
// such a number from being printed as a prediction.
struct Bound {
  std::string_view field;  // as the record names it: "cores", "caches[].size_bytes"
  double min = 0;
  double max = 0;
  bool zero_allowed = false;  // 0 is also accepted: the record does not know the number, or it does not apply
  std::string_view unit;      // "", "bytes", "GB/s", ...
  std::string_view why;       // one line: what real chips have, so a reader can judge the margin

  bool admits(double v) const { return (zero_allowed && v == 0) || (v >= min && v <= max); }
  // "1 to 65536", "0, or 0.1 to 20 GHz"
  std::string range() const;
  // Why `value` (as printed) is refused: "is 1e+30, outside the allowed range 0.0001 to 100000 TFLOP/s (...)".
  std::string refusal(std::string_view value) const;
};

// Every bound, in one place. A record is checked against these when it is loaded (parse_profile) and host
// measurements when they are read back from the host cache; the CPU backend's blocking model relies on them too.
namespace bounds {
inline constexpr Bound cores{"cores", 1, 65536, false, "",
                             "CPUs have up to a few hundred cores, GPUs a few hundred SMs"};
inline constexpr Bound boost_clock_ghz{"boost_clock_ghz", 0.1, 20, true, "GHz", "shipping parts boost to 1 to 6 GHz"};
inline constexpr Bound vector_bits{"vector_bits", 32, 65536, true, "bits",
                                   "SSE to AVX-512 is 128 to 512; RISC-V V allows up to 65536"};
inline constexpr Bound smem_bytes{"smem_per_core_bytes, smem_per_block_bytes", 1024, 1ll << 30, true, "bytes",
                                  "GPUs have 64 to 256 KiB of shared memory per SM, Ascend AI cores 512 KiB"};
inline constexpr Bound registers_per_core{"registers_per_core", 1, 1 << 24, false, "",
                                          "GPUs have 64 K 32-bit registers per SM, CPUs 16 to 32 vector registers"};
inline constexpr Bound max_threads_per_core{"max_threads_per_core", 1, 65536, true, "",
                                            "GPUs hold up to 2048 resident threads per SM, CPUs up to 8 per core"};
inline constexpr Bound max_blocks_per_core{"max_blocks_per_core", 1, 4096, true, "",
                                           "GPUs hold 16 to 32 resident blocks per SM"};
inline constexpr Bound mem_bandwidth_gbps{"mem_bandwidth_gbps", 0.1, 1e6, false, "GB/s",
                                          "one DDR4 channel gives about 20 GB/s, HBM3e stacks about 5000"};
inline constexpr Bound bytes_per_core_cycle{"l2_, l3_, smem_bytes_per_core_cycle", 0.01, 65536, true,
                                            "bytes per cycle",
                                            "caches and shared memory deliver 16 to 256 bytes per core per cycle"};
inline constexpr Bound fma_pipes{"fma_pipes", 1, 64, true, "", "cores issue 1 to 4 vector FMAs per cycle"};
inline constexpr Bound fma_latency_cycles{"fma_latency_cycles", 1, 1024, true, "cycles",
                                          "FMA latency is 3 to 6 cycles"};
inline constexpr Bound load_ports_per_cycle{"load_ports_per_cycle", 1, 64, true, "",
                                            "cores issue 2 to 4 vector loads per cycle"};
inline constexpr Bound cache_size_bytes{"caches[].size_bytes", 1024, 16ll << 30, false, "bytes",
                                        "L1 caches have 16 KiB and more, the largest last-level caches 1 GiB; and "
                                        "at least ways x line_bytes"};
inline constexpr Bound cache_ways{"caches[].ways", 1, 4096, true, "", "caches have 2 to 32 ways; 0 = unknown"};
inline constexpr Bound cache_line_bytes{"caches[].line_bytes", 16, 4096, false, "bytes",
                                        "cache lines are 32 to 256 bytes"};
inline constexpr Bound cache_shared_by{"caches[].shared_by", 1, 65536, false, "", "at most every core (see cores)"};
inline constexpr Bound matrix_unit_dim{"matrix_units[].m, n, k", 1, 4096, false, "",
                                       "matrix instructions are 8 to 256 elements on a side"};
inline constexpr Bound peak_tflops{"peaks[].tflops", 1e-4, 1e5, false, "TFLOP/s",
                                   "one slow core does about 1e-2 TFLOP/s, the fastest accelerators about 5e3"};
// Host measurements (host_measurements.hpp), in the units the host cache stores them.
inline constexpr Bound host_fma_gflops{"fma_gflops", 1e-1, 1e8, false, "GFLOP/s", "peaks[].tflops in GFLOP/s"};
inline constexpr Bound host_bandwidth_gbps{"bandwidth_gbps", 0.1, 1e6, false, "GB/s", "as mem_bandwidth_gbps"};
inline constexpr Bound host_processes{"processes", 0, 1e9, false, "",
                                      "a count of process start-ups; far below int's range"};
// CPU threads a GEMM runs on (--threads, Options::threads): no more than cores can hold.
inline constexpr Bound threads{"threads", 1, 65536, false, "", "as cores"};
}  // namespace bounds

// The first number of `profile` outside its bound (or a cache smaller than ways x line_bytes): the field as the JSON
// record names it ("cores.value", "caches[1].size_bytes") and what is wrong with it ("is 4611686018427387904, outside
// the allowed range 1024 to 17179869184 bytes (1 KiB to 16 GiB): ..."); nothing when every number is plausible.
// parse_profile refuses a record with one; a profile built in code can be checked the same way.
struct Implausible {
  std::string field;
  std::string what;
};
std::optional<Implausible> find_implausible(const HwProfile& profile);

}  // namespace tileforge::hw

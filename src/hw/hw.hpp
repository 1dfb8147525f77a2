// Chip records: the profiles compiled in from profiles/*.json, loading one from a file, and detecting the host.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/expected.hpp"
#include "hw/hw_profile.hpp"

namespace tileforge::hw {

// Parses a profile from JSON text; a malformed or incomplete record is refused with the field named
// ("profile h200: field 'peaks[0].tflops' must be a positive number"). `origin` names the file in messages.
Expected<HwProfile> parse_profile(std::string_view json_text, std::string_view origin);
std::string to_json(const HwProfile& profile);  // the same format parse_profile reads

// load_profile("host") (or "host-cpu", the detected profile's own name) returns host_cpu_profile().
inline constexpr std::string_view kHostProfileName = "host";
inline constexpr std::string_view host_cpu_profile_name() { return "host-cpu"; }

// Names of the compiled-in profiles ("a100-sxm", "h200", ...).
std::vector<std::string> builtin_profile_names();
// A compiled-in profile by name, or a JSON file by path (anything containing '/' or ending in ".json").
// Unknown names are refused with the list of known ones.
Expected<HwProfile> load_profile(std::string_view name_or_path);

// What CPUID and the OS say about the host's vector ISA.
struct CpuIsa {
  std::string vendor;        // "GenuineIntel", "AuthenticAMD"
  std::string brand;         // "AMD EPYC 7B13"
  int family = 0, model = 0; // CPUID leaf 1 display family and model (cpu_signature_from_leaf1); 0 off x86
  bool sse42 = false, avx = false, avx2 = false, fma = false, f16c = false;
  bool avx512f = false, avx512bw = false, avx512dq = false, avx512vl = false;
  bool avx512_bf16 = false, avx512_fp16 = false;
  bool amx_tile = false, amx_bf16 = false, amx_int8 = false;  // usable only when the OS enabled the tile state
  bool os_avx = false, os_avx512 = false, os_amx = false;     // XCR0 (and arch_prctl for AMX) allow the state
  bool xcr0_amx = false;         // XCR0 enables the tile state (XTILECFG, XTILEDATA)
  bool amx_permission = false;   // Linux granted this process XTILEDATA (arch_prctl ARCH_REQ_XCOMP_PERM succeeded)
  int x86_64_level = 0;          // psABI micro-architecture level: 1 (baseline) .. 4 (AVX-512); 0 off x86-64

  // Capability gates: the CPU has the instructions and the OS saves their state, so code may use them.
  bool has_avx2() const { return avx && avx2 && fma && os_avx; }
  // All of F/BW/DQ/VL, because the *_avx512.cpp files are compiled with all four enabled.
  bool has_avx512() const { return avx512f && avx512bw && avx512dq && avx512vl && os_avx512 && has_avx2(); }
  bool has_amx_bf16() const { return amx_tile && amx_bf16 && os_amx; }
};
const CpuIsa& cpu_isa();  // detected once

// The host CPU as a profile: ISA from CPUID, caches from cpu_features (CPUID) with their sharing from sysfs,
// usable core count, and the FP32 peak measured by a short FMA loop on all cores (virtual machines expose no
// clock), recorded with measured = true and its source. The FMA loop (~60 ms) and a read of a buffer larger than
// the last-level cache (memory bandwidth, ~0.1-0.2 s) run once per process, on first use; thread-safe.
// HostPeaks::stored_or_nominal measures nothing and writes nothing (library calls): the peak and bandwidth stored
// by an earlier measuring process on this host, else the nominal ones of the CPU's records, with measured = false.
const HwProfile& host_cpu_profile(HostPeaks how = HostPeaks::measure);
// The compiled-in generic profile closest to the host ("generic-avx512" or "generic-avx2").
std::string nearest_cpu_profile_name();

// Measures the peak FP32 FMA rate (GFLOP/s) with `threads` threads (0 = all) for about `seconds`.
double measure_fma_peak_gflops(int threads, double seconds);

// The FMA loop of one vector ISA; measure_fma_peak_gflops uses the widest the host can run.
enum class FmaIsa { scalar, avx2, avx512 };
std::string_view to_string(FmaIsa isa);
// The widest FMA loop the host can run.
FmaIsa best_fma_isa();
// As measure_fma_peak_gflops, with the given ISA; refused (unsupported) when the host cannot run it.
Expected<double> measure_fma_peak_gflops(FmaIsa isa, int threads, double seconds);

// Measures the rate of reading `bytes` of memory (GB/s) with `threads` threads (0 = all); the best of a few passes.
double measure_read_bandwidth_gbps(int threads, int64_t bytes);

// CPUs this process may run on (sched_getaffinity; hardware_concurrency where that fails).
int usable_cpu_count();

// The host's data and unified caches as cpu_features reads them from CPUID (leaf 4 on Intel, 0x8000001D on AMD),
// sorted by level, instruction caches left out; `shared_by` is 1 (set_sysfs_sharing fills it in). Empty where
// CPUID describes none.
std::vector<CacheLevel> library_caches();
// Sets each cache's `shared_by` from Linux's description under `cpu_dir` (".../cpu/cpu0"): the hardware threads of
// the matching cache/index*/shared_cpu_list, counted as cores; 1 where sysfs says nothing.
void set_sysfs_sharing(std::vector<CacheLevel>& caches, const std::string& cpu_dir = "/sys/devices/system/cpu/cpu0");

// ---- CPU microarchitectures: the per-core rates CPUID cannot report ----------------------------------------------

// A CPU as CPUID leaf 1 identifies it: the vendor string and the display family and model.
struct CpuSignature {
  std::string vendor;  // "GenuineIntel", "AuthenticAMD"; empty off x86
  int family = 0;      // 6 for Intel's Core and Xeon; 0x17 Zen 1/2, 0x19 Zen 3/4, 0x1a Zen 5
  int model = 0;
};
// Decodes leaf 1 EAX (Intel SDM vol. 2A, CPUID: the extended family is added when the base family is 0xF; the
// extended model is prepended when the base family is 6 or 0xF).
CpuSignature cpu_signature_from_leaf1(std::string vendor, uint32_t eax);
// The host's signature (from cpu_isa()).
CpuSignature cpu_signature();

// One microarchitecture's per-core rates at one vector width, each with its source.
struct UarchRates {
  int vector_bits = 0;            // 128, 256 or 512: the width the rates are for
  int fma_pipes = 0;              // FMA instructions of that width per cycle
  int fma_latency_cycles = 0;
  int load_ports_per_cycle = 0;   // loads of that width per cycle
  double l2_bytes_per_core_cycle = 0, l3_bytes_per_core_cycle = 0;
  std::map<std::string, std::string> sources;  // field -> source
};
// The CPUs a record describes: one vendor and family, models as inclusive ranges.
struct UarchModels {
  std::string vendor;
  int family = 0;
  std::vector<std::pair<int, int>> models;
  std::string source;  // where the model numbers come from
};
// profiles/uarch/<name>.json: the rates of one microarchitecture (or, without `match`, of an ISA class for hosts
// no record names), per vector width.
struct UarchRecord {
  std::string name, display_name, notes;
  std::optional<UarchModels> match;
  std::vector<UarchRates> rates;
  const UarchRates* at(int vector_bits) const;  // nullptr when the record has no rates of that width
};
Expected<UarchRecord> parse_uarch(std::string_view json_text, std::string_view origin);
std::vector<std::string> builtin_uarch_names();            // "haswell", "isa-avx2", "zen3", ...
Expected<UarchRecord> load_uarch(std::string_view name);   // a compiled-in record by name

// Where a CPU's rates come from.
struct UarchMatch {
  std::string record;     // the record the rates are from: "zen3", or "isa-avx2" for a CPU no record names
  bool generic = false;   // the rates are an ISA-class record's, standing in for a record of this CPU
  std::string label;      // said in every rate's source and by `tileforge devices`
  UarchRates rates;
};
// The record whose vendor, family and model list name `cpu`, at `vector_bits`; when none does (or it has no rates of
// that width), the ISA-class record of that width, labelled "no record for GenuineIntel family 0x6 model 0x9a: ...".
// Refused only when no record has rates of that width.
Expected<UarchMatch> match_uarch(const CpuSignature& cpu, int vector_bits);
// Sets the profile's FMA, load and cache rates from the match, each source naming the record.
void apply_uarch(HwProfile& profile, const UarchMatch& match);

// ---- GPUs: a detected device mapped to its record --------------------------------------------------------------

// What a GPU's driver reports (cuDeviceGetAttribute and friends); 0 or empty where unknown.
struct GpuProperties {
  std::string name;                 // "NVIDIA H200"
  std::string vendor = "nvidia";
  int cc_major = 0, cc_minor = 0;   // compute capability (NVIDIA)
  int sm_count = 0;
  double clock_ghz = 0;             // largest SM clock
  int64_t smem_per_sm_bytes = 0;
  int64_t smem_per_block_bytes = 0;  // the opt-in maximum per block
  int64_t registers_per_sm = 0;
  int max_threads_per_sm = 0;
  int max_blocks_per_sm = 0;        // resident thread blocks per SM
  int64_t l2_bytes = 0;
  double mem_bandwidth_gbps = 0;    // 2 x memory clock x bus width / 8
};

// The compiled-in profile a detected GPU maps to: its reported name is in the record's "match" list (case and
// spacing ignored) and, for NVIDIA, its compute capability equals the record's arch. Nothing when none matches.
std::optional<std::string> gpu_profile_name(const GpuProperties& gpu);
// The profile to plan for a detected GPU. A matched record is returned with the device's reported SM count,
// clock, shared memory, registers and L2 replacing the record's where they differ (peaks scaled by SMs x clock;
// a MIG slice reports fewer SMs). An unmatched GPU gets a profile built from its properties, named
// "detected-<name>", with peaks scaled per SM and clock from a record of the same architecture, or only the
// FP32 rate estimated where none exists; the L2 and shared-memory rates per SM come from that record too, or stay
// 0 ("unknown") for the cost model to name; every such number's source says so.
HwProfile gpu_profile_from_properties(const GpuProperties& gpu);

}  // namespace tileforge::hw

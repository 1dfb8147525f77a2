// Chip records: the profiles compiled in from profiles/*.json, loading one from a file, and detecting the host.
#pragma once

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

// Names of the compiled-in profiles ("a100-sxm", "h200", ...).
std::vector<std::string> builtin_profile_names();
// A compiled-in profile by name, or a JSON file by path (anything containing '/' or ending in ".json").
// Unknown names are refused with the list of known ones.
Expected<HwProfile> load_profile(std::string_view name_or_path);

// What CPUID and the OS say about the host's vector ISA.
struct CpuIsa {
  std::string vendor;        // "GenuineIntel", "AuthenticAMD"
  std::string brand;         // "AMD EPYC 7B13"
  bool sse42 = false, avx = false, avx2 = false, fma = false, f16c = false;
  bool avx512f = false, avx512bw = false, avx512dq = false, avx512vl = false;
  bool avx512_bf16 = false, avx512_fp16 = false;
  bool amx_tile = false, amx_bf16 = false, amx_int8 = false;  // usable only when the OS enabled the tile state
  bool os_avx = false, os_avx512 = false, os_amx = false;     // XCR0 (and arch_prctl for AMX) allow the state
};
const CpuIsa& cpu_isa();  // detected once

// The host CPU as a profile: ISA from CPUID, caches from sysfs (CPUID leaf 4 / 0x8000001D as fallback),
// usable core count, and the FP32 peak measured by a short FMA loop on all cores (virtual machines expose no
// clock), recorded with measured = true and its source. The FMA loop runs once per process (~50 ms).
const HwProfile& host_cpu_profile();
// The compiled-in generic profile closest to the host ("generic-avx512" or "generic-avx2").
std::string nearest_cpu_profile_name();

// Measures the peak FP32 FMA rate (GFLOP/s) with `threads` threads (0 = all) for about `seconds`.
double measure_fma_peak_gflops(int threads, double seconds);

}  // namespace tileforge::hw

// The resource report ptxas prints with -v (registers, stack, spills, shared memory), parsed from the log.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tileforge::jit {

// One kernel's resources as ptxas reports them; -1 where the log did not say.
struct FunctionResources {
  std::string name;              // mangled entry name ("_Z4gemmILi128EEvPKv") or the extern "C" name
  std::string arch;              // "sm_90a"
  int registers = -1;
  int barriers = -1;
  int64_t stack_frame_bytes = -1;
  int64_t spill_store_bytes = -1;
  int64_t spill_load_bytes = -1;
  int64_t smem_bytes = 0;        // static shared memory (absent from the log when 0)
  int64_t cmem0_bytes = -1;      // kernel parameter bank (printed for some targets only)
  bool spills() const { return spill_store_bytes > 0 || spill_load_bytes > 0; }
};

struct PtxasReport {
  std::vector<FunctionResources> functions;
  std::vector<std::string> warnings;  // "ptxas warning : ..." lines (C7511: wgmma serialized, ...)
  int64_t gmem_bytes = 0;

  const FunctionResources* find(std::string_view name) const;
  bool any_spills() const;
};

// Parses the ptxas part of an NVRTC/nvcc log, in the format NVRTC 12 and 13 print:
//   ptxas info    : Compiling entry function '_Z1kPf' for 'sm_90a'
//   ptxas         .     224 bytes stack frame, 444 bytes spill stores, 444 bytes spill loads
//   ptxas info    : Used 32 registers, used 1 barriers, 224 bytes cumulative stack size, 4096 bytes smem
// Older forms ("Used 32 registers, 4096 bytes smem, 360 bytes cmem[0]") are read too; unknown lines are skipped.
PtxasReport parse_ptxas_report(std::string_view log);

}  // namespace tileforge::jit

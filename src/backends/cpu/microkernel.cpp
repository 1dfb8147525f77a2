// Lookup of the per-ISA micro-kernel tables by family name, and the register files they assume.
#include "backends/cpu/microkernel.hpp"

namespace tileforge::cpu {

std::span<const MicroKernel> microkernels_for(std::string_view family) {
  if (family == "cpu-avx512") return avx512_microkernels();
  if (family == "cpu-avx2") return avx2_microkernels();
  if (family == "cpu-generic") return generic_microkernels();
  return {};
}

const MicroKernel* find_microkernel(std::string_view family, int mr, int nr) {
  for (const MicroKernel& k : microkernels_for(family))
    if (k.mr == mr && k.nr == nr) return &k;
  return nullptr;
}

int vector_registers(std::string_view family) { return family == "cpu-avx512" ? 32 : 16; }

int vector_floats(std::string_view family) {
  if (family == "cpu-avx512") return 16;
  if (family == "cpu-avx2") return 8;
  return 4;
}

}  // namespace tileforge::cpu

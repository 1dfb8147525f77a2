// Entry points of the per-ISA FMA throughput loops (fma_peak_avx2.cpp, fma_peak_avx512.cpp); declarations only.
// Hand-written: a loop that measures the FMA rate; no packaged library measures one, they report only the ISA.
#pragma once

#include <cstdint>

namespace tileforge::hw {

// Each runs `iterations` rounds of independent FMA chains, stores the FLOPs one round performs in
// *flops_per_iteration and returns a value derived from the accumulators. Call one only when cpu_isa() says the
// host can run its ISA (has_avx2(), has_avx512()).
float fma_peak_loop_avx2(int64_t iterations, float seed, int* flops_per_iteration);
float fma_peak_loop_avx512(int64_t iterations, float seed, int* flops_per_iteration);

}  // namespace tileforge::hw

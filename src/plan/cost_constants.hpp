// The cost-model constants every family shares, each with the reason for its value (each family keeps its own
// beside its code).
#pragma once

#include <string_view>

namespace tileforge::plan::constants {

// ---- shared by all chips ----------------------------------------------------------------------------------------

// Overlap of compute and memory streams is never perfect: this share of every stream that does not bind the time
// still shows (a roofline with a soft corner). It also breaks ties between configs that the max() alone would call
// equal, in favour of the one that moves fewer bytes.
inline constexpr double kOverlapLeak = 0.10;

// Sustained DRAM/HBM bandwidth as a share of the datasheet number: STREAM-like reads reach 85-92% on A100, H100
// and server CPUs; the lower end is used because GEMM reads two operands and writes a third at once.
inline constexpr double kDramEfficiency = 0.85;

}  // namespace tileforge::plan::constants

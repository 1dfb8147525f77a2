// Integer helpers shared by the cost models and the loop nests.
#pragma once

#include <cstdint>

namespace tileforge {

// ceil(a / b) for a >= 0; 0 when b <= 0, so that an empty tiling counts no tiles instead of dividing by zero.
inline constexpr int64_t cdiv(int64_t a, int64_t b) { return b > 0 ? (a + b - 1) / b : 0; }

}  // namespace tileforge

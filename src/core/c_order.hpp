// A column-major C as the transposed row-major problem: how the API runs BLAS-ordered calls on row-major kernels.
#pragma once

#include "tileforge/tileforge.hpp"

namespace tileforge {

// C column-major (M x N, ldc) is C^T row-major (N x M, ldc), and C^T = B^T A^T: row-major B (K x N, ldb) read as
// B^T is column-major N x K with the same ldb, and likewise for A. So the transposed problem swaps M and N, the
// operands' leading dimensions and strides, and each operand's storage order flips; the caller's B pointer becomes
// its A and A its B. A row-major C problem is returned unchanged.
Problem row_major_c(const Problem& p);

}  // namespace tileforge

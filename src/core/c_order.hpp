// A column-major C as the transposed row-major problem: how the API runs BLAS-ordered calls on row-major kernels.
#pragma once

#include "tileforge/tileforge.hpp"

namespace tileforge {

// C (M x N, ldc) in one storage order is C^T (N x M, ldc) in the other, and C^T = B^T A^T: row-major B (K x N, ldb)
// read as B^T is column-major N x K with the same ldb, and likewise for A. So the transposed problem swaps M and N,
// the operands' leading dimensions and strides, each operand's storage order flips and so does C's; the caller's B
// pointer becomes its A and A its B.
Problem transposed(const Problem& p);

// The transposed problem where C is column-major; a row-major C problem unchanged.
Problem row_major_c(const Problem& p);

}  // namespace tileforge

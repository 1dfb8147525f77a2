// sm80 family: the run-time arguments of one launch (sm80/gemm.cuh): pointers, sizes, strides, scalars, and the
// split-K workspace.
#pragma once

namespace tf::sm80 {

// Only pointers, sizes, strides and scalars travel at launch. With Config::SPLIT_K > 1, `counters` holds one int per
// output tile of every batch entry (zero before the first launch; each launch leaves them zero) and `partials`
// SPLIT_K f32 tiles of BLOCK_M x BLOCK_N per output tile: the caller's workspace, never shared between launches that
// may run at once. Unused (null) otherwise.
struct Params {
  const void* a;
  const void* b;
  void* c;
  int m, n, k;
  long long lda, ldb, ldc;
  long long stride_a, stride_b, stride_c;  // elements between batch entries (blockIdx.y)
  float alpha, beta;
  int* counters;
  float* partials;
};

}  // namespace tf::sm80

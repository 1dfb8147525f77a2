// sm80 family: the run-time arguments of one launch (sm80/gemm.cuh): pointers, sizes, strides, scalars, and the
// split-K / stream-K workspace.
#pragma once

namespace tf::sm80 {

// Only pointers, sizes, strides and scalars travel at launch. With Config::SPLIT_K > 1, `counters` holds one int per
// output tile of every batch entry (zero before the first launch; each launch leaves them zero) and `partials`
// SPLIT_K f32 tiles of BLOCK_M x BLOCK_N per output tile: the caller's workspace, never shared between launches that
// may run at once. With Config::STREAM_K, `counters` holds one int per shared tile (the last `sk_tiles` tiles) and
// `partials` two f32 tiles per block of the persistent grid (the tiles its run of k-blocks starts and ends in).
// Unused (null, 0) otherwise.
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
  int sk_tiles;  // STREAM_K: the tiles whose k-blocks the blocks share (common/work_schedule.cuh)
};

}  // namespace tf::sm80

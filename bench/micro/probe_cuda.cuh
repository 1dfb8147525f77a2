// What the standalone CUDA probes of bench/micro share: a runtime-call check that names the call and exits, and the
// write scrub of the benchmark contract's cold L2 (as tileforge's timer scrubs: every word of a buffer written).
#pragma once

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#define CHECK(x)                                                                                \
  do {                                                                                          \
    cudaError_t e_ = (x);                                                                       \
    if (e_ != cudaSuccess) {                                                                    \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));   \
      std::exit(1);                                                                             \
    }                                                                                           \
  } while (0)

__global__ void write_scrub(unsigned* buf, long long words, unsigned v) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < words; i += (long long)gridDim.x * blockDim.x)
    buf[i] = v + unsigned(i);
}

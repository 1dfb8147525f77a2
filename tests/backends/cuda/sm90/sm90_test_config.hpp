// The sm90 family's configs as the tests spell them: every parameter of sm90_space, in the order the kernel
// template takes them, with split-K, stream-K and the operand copy off unless asked for.
#pragma once

#include <cstdint>

#include "tileforge/tileforge.hpp"

namespace tileforge::cuda::testing_sm90 {

inline Config sm90_config(int bm, int bn, int st, int cons, int cm, int cn, int gm, int epi, int epi_split, int stm,
                          int split_k = 1, int stream_k = 0, int copy_ab = 0) {
  return Config{"sm90", {{"BLOCK_M", bm}, {"BLOCK_N", bn}, {"BLOCK_K", 64}, {"STAGES", st}, {"CONSUMERS", cons},
                         {"CLUSTER_M", cm}, {"CLUSTER_N", cn}, {"GROUP_M", gm}, {"EPILOGUE", epi},
                         {"EPI_SPLIT", epi_split}, {"STMATRIX", stm}, {"SPLIT_K", split_k}, {"STREAM_K", stream_k},
                         {"COPY_AB", copy_ab}}};
}

// The same config run as the transposed problem (SWAP_AB 1: BLOCK_M tiles N, BLOCK_N tiles M).
inline Config swapped(Config c) {
  c.params["SWAP_AB"] = 1;
  return c;
}

// The same config with its shared tiles summed by float atomics (REDUCE 1, the non-deterministic policy's).
inline Config atomic(Config c) {
  c.params["REDUCE"] = 1;
  return c;
}

// The same config with its consumer warpgroups splitting BLOCK_N (CONSUMER_COLS 1: each owns BLOCK_N / CONSUMERS
// columns of every row).
inline Config consumer_cols(Config c) {
  c.params["CONSUMER_COLS"] = 1;
  return c;
}

// The same config with its two consumer warpgroups taking every other k-block of the whole tile (CONSUMER_K 1).
inline Config consumer_k(Config c) {
  c.params["CONSUMER_K"] = 1;
  return c;
}

// The same config with its tile's SPLIT_K slices run as one cluster and summed in their shared memory
// (SPLIT_CLUSTER 1).
inline Config cluster_sum(Config c) {
  c.params["SPLIT_CLUSTER"] = 1;
  return c;
}

}  // namespace tileforge::cuda::testing_sm90

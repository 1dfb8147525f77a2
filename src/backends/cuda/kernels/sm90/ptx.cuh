// sm90 family: the PTX the Hopper GEMM (sm90/gemm.cuh) is written in, one inline wrapper per instruction: mbarriers,
// cluster barriers and ranks, TMA loads (plain and multicast) and stores with their bulk groups, setmaxnreg, wgmma
// with its fences, commit and wait groups and shared-memory descriptors, and the fix-up's vector float reduction.
// sm_90a only.
#pragma once

#include "sm90/wgmma_ops.cuh"

namespace tf::sm90 {

// A CUtensorMap, opaque: 128 bytes, 64-byte aligned (cuTensorMapEncodeTiled fills it on the host).
struct alignas(64) TmaDesc {
  unsigned long long v[16];
};

// Adds four floats to a 16-byte aligned float4 in global memory, at L2, as one vector reduction (relaxed, GPU
// scope; sm_90's red.global.add.v4.f32): REDUCE 1's fix-up.
__device__ __forceinline__ void red_add_v4(float4* p, float x, float y, float z, float w) {
  asm volatile("red.relaxed.gpu.global.add.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"l"(p), "f"(x), "f"(y), "f"(z), "f"(w)
               : "memory");
}

__device__ __forceinline__ unsigned smem_u32(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void mbar_init(unsigned bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}

__device__ __forceinline__ void mbar_expect_tx(unsigned bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}

__device__ __forceinline__ void mbar_arrive(unsigned bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}

// Arrives on the barrier at the same shared-memory offset in CTA `rank` of the cluster, with the default semantics
// (release at CTA scope, as CUTLASS's cluster barrier does): the stage it hands back was last read by wgmma, which
// wgmma.wait_group has retired.
__device__ __forceinline__ void mbar_arrive_cluster(unsigned bar, unsigned rank) {
  asm volatile(
      "{\n"
      ".reg .b32 remote;\n"
      "mapa.shared::cluster.u32 remote, %0, %1;\n"
      "mbarrier.arrive.shared::cluster.b64 _, [remote];\n"
      "}\n" ::"r"(bar),
      "r"(rank)
      : "memory");
}

// Waits until the phase of parity `parity` has completed.
__device__ __forceinline__ void mbar_wait(unsigned bar, unsigned parity) {
  unsigned done;
  do {
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        "selp.u32 %0, 1, 0, p;\n"
        "}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  } while (!done);
}

__device__ __forceinline__ void fence_barrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

// The cluster barrier in two halves (the non-.aligned forms: callers may arrive from diverged warps). The arrival is
// relaxed: it orders none of the thread's earlier accesses, so it costs no GPU-scope MEMBAR (a release arrival does);
// what the start of the kernel needs ordered, the barriers' initialization, fence.mbarrier_init orders before it (the
// PTX ISA's pattern for making mbarrier.init visible to the cluster). cluster_wait() waits for every thread of every
// CTA of the cluster to have arrived (acquire).
__device__ __forceinline__ void cluster_arrive_relaxed() {
  asm volatile("barrier.cluster.arrive.relaxed;\n" ::: "memory");
}
__device__ __forceinline__ void cluster_wait() { asm volatile("barrier.cluster.wait;\n" ::: "memory"); }

// The whole cluster barrier (SPLIT_CLUSTER's sum): every thread of every CTA of the cluster arrives and waits. With
// `release`, the thread's earlier writes (its partial tile in shared memory) are visible to every thread of the
// cluster after the wait (acquire); relaxed, it only says that the thread got here (its reads of other CTAs' shared
// memory are done: their values have been used).
template <bool kRelease>
__device__ __forceinline__ void cluster_sync() {
  if constexpr (kRelease) {
    asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;\n" ::: "memory");
  } else {
    asm volatile("barrier.cluster.arrive.relaxed;\nbarrier.cluster.wait;\n" ::: "memory");
  }
}

// A generic pointer to shared-memory address `addr` of this CTA, and the same place in CTA `rank` of the cluster
// (distributed shared memory, which generic loads read).
__device__ __forceinline__ void* shared_generic(unsigned addr) {
  unsigned long long g;
  asm("cvta.shared.u64 %0, %1;\n" : "=l"(g) : "l"(static_cast<unsigned long long>(addr)));
  return reinterpret_cast<void*>(g);
}
template <class T>
__device__ __forceinline__ const T* cluster_map(const T* ptr, unsigned rank) {
  unsigned long long r;
  asm("mapa.u64 %0, %1, %2;\n" : "=l"(r) : "l"(reinterpret_cast<unsigned long long>(ptr)), "r"(rank));
  return reinterpret_cast<const T*>(r);
}

__device__ __forceinline__ unsigned cluster_rank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}

__device__ __forceinline__ void named_barrier(unsigned id, unsigned threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// Arrival on a named barrier without waiting (the producer's side of a hand-over through shared memory: its writes
// before the arrival are visible to the threads that wait on the barrier with named_barrier).
__device__ __forceinline__ void named_barrier_arrive(unsigned id, unsigned threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// An experiment (issue 13), set by the generated source with TILEFORGE_SM90_L2_HINT: the operand loads carry an L2
// eviction priority (1 evict_first, 2 evict_last, 3 evict_normal); 0, the default, gives none.
#ifndef TF_SM90_L2_HINT
#define TF_SM90_L2_HINT 0
#endif

#if TF_SM90_L2_HINT
__device__ __forceinline__ unsigned long long l2_load_policy() {
  unsigned long long policy;
#if TF_SM90_L2_HINT == 1
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(policy));
#elif TF_SM90_L2_HINT == 2
  asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;\n" : "=l"(policy));
#else
  asm volatile("createpolicy.fractional.L2::evict_normal.b64 %0, 1.0;\n" : "=l"(policy));
#endif
  return policy;
}
#endif

// 2-D tile load into this CTA's shared memory, completing `bytes` on `bar`.
__device__ __forceinline__ void tma_load(const TmaDesc* map, unsigned dst, unsigned bar, int c0, int c1) {
#if TF_SM90_L2_HINT
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.L2::cache_hint "
      "[%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(dst),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1), "r"(bar), "l"(l2_load_policy())
      : "memory");
#else
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n" ::
          "r"(dst),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1), "r"(bar)
      : "memory");
#endif
}

// 2-D tile load multicast to the CTAs of `mask`: the same shared-memory offsets (data and barrier) in each.
__device__ __forceinline__ void tma_load_multicast(const TmaDesc* map, unsigned dst, unsigned bar, int c0, int c1,
                                                   unsigned short mask) {
#if TF_SM90_L2_HINT
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
      ".L2::cache_hint [%0], [%1, {%2, %3}], [%4], %5, %6;\n" ::"r"(dst),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1), "r"(bar), "h"(mask), "l"(l2_load_policy())
      : "memory");
#else
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster "
      "[%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(dst),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1), "r"(bar), "h"(mask)
      : "memory");
#endif
}

// 2-D tile prefetch into the L2 (no shared memory, no barrier): the lines are requested from DRAM now, so that the
// tile's load some k-blocks later hits (TF_SM90_L2_PREFETCH, sm90/config.cuh).
__device__ __forceinline__ void tma_prefetch_l2(const TmaDesc* map, int c0, int c1) {
  asm volatile("cp.async.bulk.prefetch.tensor.2d.L2.global.tile [%0, {%1, %2}];\n" ::"l"(
                   reinterpret_cast<unsigned long long>(map)),
               "r"(c0), "r"(c1)
               : "memory");
}

__device__ __forceinline__ void tma_store(const TmaDesc* map, unsigned src, int c0, int c1) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%1, %2}], [%3];\n" ::"l"(
                   reinterpret_cast<unsigned long long>(map)),
               "r"(c0), "r"(c1), "r"(src)
               : "memory");
}

__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
__device__ __forceinline__ void bulk_wait_read_all() { asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory"); }

__device__ __forceinline__ void prefetch_map(const TmaDesc* map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<unsigned long long>(map)) : "memory");
}

template <int kRegs>
__device__ __forceinline__ void regs_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kRegs));
}
template <int kRegs>
__device__ __forceinline__ void regs_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kRegs));
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int kPending>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(kPending) : "memory");
}

// Keeps the compiler from moving accumulator reads or writes across the asynchronous wgmma window.
template <int kCount>
__device__ __forceinline__ void fence_accumulators(float (&d)[kCount]) {
#pragma unroll
  for (int i = 0; i < kCount; ++i) asm volatile("" : "+f"(d[i])::"memory");
}
template <int kCount>
__device__ __forceinline__ void fence_accumulators(unsigned (&d)[kCount]) {
#pragma unroll
  for (int i = 0; i < kCount; ++i) asm volatile("" : "+r"(d[i])::"memory");
}

// Shared-memory matrix descriptor with 128-byte swizzle: start address, leading and stride byte offsets (>> 4).
__device__ __forceinline__ unsigned long long make_desc(unsigned addr, unsigned lbo, unsigned sbo) {
  return static_cast<unsigned long long>((addr & 0x3FFFFu) >> 4) |
         (static_cast<unsigned long long>(lbo >> 4) << 16) | (static_cast<unsigned long long>(sbo >> 4) << 32) |
         (1ull << 62);
}

// d (64 x N, f32) += A (64 x 16, descriptor da) * B (16 x N, descriptor db); d is overwritten when scale_d == 0.
// kTransA / kTransB: 0 = K-major, 1 = M- / N-major operand in shared memory.
#define TF_SM90_WGMMA(NN, TY)                                                                                   \
  asm volatile("{\n.reg .pred p;\n" TF_SM90_WGMMA_PRED##NN "wgmma.mma_async.sync.aligned.m64n" #NN "k16.f32." TY \
               "." TY " " TF_SM90_WGMMA_D##NN ", " TF_SM90_WGMMA_REST##NN "}\n"                                  \
               : TF_SM90_WGMMA_OPS##NN                                                                          \
               : "l"(da), "l"(db), "r"(scale_d), "n"(kTransA), "n"(kTransB))

// Whether this family's wgmma_ops.cuh has the operand lists of m64nNk16.
__device__ constexpr bool wgmma_has_n(int n) {
#define TF_SM90_WGMMA_IS(NN) n == NN ||
  return TF_SM90_WGMMA_SIZES(TF_SM90_WGMMA_IS) false;
#undef TF_SM90_WGMMA_IS
}

template <int N, int kIn, int kTransA, int kTransB>
__device__ __forceinline__ void wgmma(float (&d)[N / 2], unsigned long long da, unsigned long long db, int scale_d) {
  static_assert(wgmma_has_n(N), "wgmma N used by this family (scripts/gen-wgmma-ops)");
#define TF_SM90_WGMMA_CASE(NN)                                               \
  if constexpr (N == NN) {                                                   \
    if constexpr (kIn == 1) TF_SM90_WGMMA(NN, "f16"); else TF_SM90_WGMMA(NN, "bf16"); \
  }
  TF_SM90_WGMMA_SIZES(TF_SM90_WGMMA_CASE)
#undef TF_SM90_WGMMA_CASE
}

// The same with f16 accumulators (f16 inputs only): d holds N/4 registers, each the f16 pair of two neighbouring
// columns, in the f32 layout's order (register r is the pair of f32 accumulators 2r and 2r + 1).
#define TF_SM90_WGMMA16(NN)                                                                                       \
  asm volatile("{\n.reg .pred p;\n" TF_SM90_WGMMA16_PRED##NN "wgmma.mma_async.sync.aligned.m64n" #NN             \
               "k16.f16.f16.f16 " TF_SM90_WGMMA16_D##NN ", " TF_SM90_WGMMA16_REST##NN "}\n"                    \
               : TF_SM90_WGMMA16_OPS##NN                                                                        \
               : "l"(da), "l"(db), "r"(scale_d), "n"(kTransA), "n"(kTransB))

template <int N, int kIn, int kTransA, int kTransB>
__device__ __forceinline__ void wgmma(unsigned (&d)[N / 4], unsigned long long da, unsigned long long db, int scale_d) {
  static_assert(wgmma_has_n(N), "wgmma N used by this family (scripts/gen-wgmma-ops)");
  static_assert(kIn == 1, "f16 accumulators take f16 inputs only");
#define TF_SM90_WGMMA16_CASE(NN) \
  if constexpr (N == NN) {       \
    TF_SM90_WGMMA16(NN);         \
  }
  TF_SM90_WGMMA_SIZES(TF_SM90_WGMMA16_CASE)
#undef TF_SM90_WGMMA16_CASE
}
#undef TF_SM90_WGMMA
#undef TF_SM90_WGMMA16

}  // namespace tf::sm90

// Probe of the sm90 family (src/backends/cuda/kernels/sm90/gemm.cuh) on a Hopper GPU: instantiates a handful of
// configs (the ladder from a plain warp-specialized kernel up to clusters and a TMA-store epilogue), checks each
// against a float64 reference computed on the GPU, and times it against cuBLAS (cublasGemmEx, FP32 compute) in the
// same process, interleaved rep by rep, with the L2 overwritten before every rep.
//
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -I src/backends/cuda/kernels \
//        -o sm90_gemm_probe bench/micro/sm90_gemm_probe.cu -lcublas
//   ./sm90_gemm_probe --list
//   ./sm90_gemm_probe --out DIR --configs NAME[,NAME...] --shapes 4096x4096x4096[,MxNxK...] [--reps 30]
//        [--warmup 10] [--check-only] [--beta]
//
// Shapes are MxNxK; C (M x N) = A (M x K) * B (K x N) with the layouts of the config's name (RR: both row-major,
// RC: B column-major, CR: A column-major, CC). Each (shape, config) pair prints one table row and appends it to
// DIR/results.csv and DIR/results.jsonl. The driver's cuTensorMapEncodeTiled is reached through the runtime's
// cudaGetDriverEntryPointByVersion, so the program does not link libcuda.
#include <cublas_v2.h>
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <type_traits>
#include <string>
#include <vector>

#include "sm90/gemm.cuh"

namespace {

#define CHECK_CUDA(x)                                                                                     \
  do {                                                                                                    \
    cudaError_t e_ = (x);                                                                                 \
    if (e_ != cudaSuccess) {                                                                              \
      std::fprintf(stderr, "CUDA error %s at %s:%d: %s\n", cudaGetErrorName(e_), __FILE__, __LINE__, #x); \
      std::exit(3);                                                                                       \
    }                                                                                                     \
  } while (0)
#define CHECK_CUBLAS(x)                                                                  \
  do {                                                                                   \
    cublasStatus_t s_ = (x);                                                             \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                                   \
      std::fprintf(stderr, "cuBLAS error %d at %s:%d: %s\n", int(s_), __FILE__, __LINE__, #x); \
      std::exit(3);                                                                      \
    }                                                                                    \
  } while (0)

// ---- device helpers: random fill, poison, float64 reference, error totals, L2 scrub ---------------------------

__device__ __forceinline__ unsigned hash_u32(unsigned long long x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return static_cast<unsigned>(x);
}

// Values in +-[0.1, 1.0): never zero.
template <typename T>
__global__ void fill_random(T* p, long long n, unsigned long long seed) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    const unsigned h = hash_u32(seed * 0x9E3779B97F4A7C15ull + (unsigned long long)i);
    float v = 0.1f + 0.9f * float(h >> 9) * (1.0f / 8388608.0f);
    if (h & 1u) v = -v;
    if constexpr (std::is_same<T, __half>::value) {
      p[i] = __float2half_rn(v);
    } else {
      p[i] = __float2bfloat16_rn(v);
    }
  }
}

__global__ void fill_u16(unsigned short* p, long long n, unsigned short v) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    p[i] = v;
}

template <typename T>
__device__ __forceinline__ double to_d(T v) {
  if constexpr (std::is_same<T, __half>::value) {
    return (double)__half2float(v);
  } else {
    return (double)__bfloat162float(v);
  }
}

// ref (M x N, float64, row-major) = alpha * A * B + beta * C_in: 64x64 tiles, 4x4 outputs per thread.
template <typename T, bool kARow, bool kBRow>
__global__ void __launch_bounds__(256) reference_gemm(const T* A, const T* B, const T* c_in, double* ref, int M, int N,
                                                      int K, double alpha, double beta) {
  __shared__ double sa[16][65];
  __shared__ double sb[16][65];
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const int m0 = blockIdx.y * 64, n0 = blockIdx.x * 64;
  const long long lda = kARow ? K : M, ldb = kBRow ? N : K;
  double acc[4][4] = {};
  for (int k0 = 0; k0 < K; k0 += 16) {
    for (int i = threadIdx.x; i < 16 * 64; i += 256) {
      const int kk = i / 64, mm = i % 64;  // sa[kk][mm] = A(m0+mm, k0+kk)
      const int r = m0 + mm, c = k0 + kk;
      double va = 0.0;
      if (r < M && c < K) va = to_d(kARow ? A[(long long)r * lda + c] : A[(long long)c * lda + r]);
      sa[kk][mm] = va;
      const int cc = n0 + mm;  // sb[kk][nn] = B(k0+kk, n0+nn)
      double vb = 0.0;
      if (cc < N && c < K) vb = to_d(kBRow ? B[(long long)c * ldb + cc] : B[(long long)cc * ldb + c]);
      sb[kk][mm] = vb;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < 16; ++kk) {
      double a[4], b[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) a[i] = sa[kk][ty + 16 * i];
#pragma unroll
      for (int j = 0; j < 4; ++j) b[j] = sb[kk][tx + 16 * j];
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = fma(a[i], b[j], acc[i][j]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int r = m0 + ty + 16 * i, c = n0 + tx + 16 * j;
      if (r < M && c < N) {
        const long long at = (long long)r * N + c;
        double v = alpha * acc[i][j];
        if (beta != 0.0) v += beta * to_d(c_in[at]);
        ref[at] = v;
      }
    }
}

struct Totals {
  double sq_err, sq_ref, max_abs;
  unsigned long long bad;  // NaN or Inf outputs (the poison is NaN): unwritten or broken elements
};

template <typename T>
__global__ void compare(const T* c, const double* ref, long long n, Totals* t) {
  __shared__ double s_err[256], s_ref[256], s_max[256];
  __shared__ unsigned long long s_bad[256];
  double e2 = 0, r2 = 0, mx = 0;
  unsigned long long bad = 0;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    const double o = to_d(c[i]), r = ref[i];
    if (!isfinite(o)) {
      ++bad;
      continue;
    }
    const double d = o - r;
    e2 += d * d;
    r2 += r * r;
    mx = fmax(mx, fabs(d));
  }
  const int tid = threadIdx.x;
  s_err[tid] = e2;
  s_ref[tid] = r2;
  s_max[tid] = mx;
  s_bad[tid] = bad;
  __syncthreads();
  for (int s = 128; s > 0; s >>= 1) {
    if (tid < s) {
      s_err[tid] += s_err[tid + s];
      s_ref[tid] += s_ref[tid + s];
      s_max[tid] = fmax(s_max[tid], s_max[tid + s]);
      s_bad[tid] += s_bad[tid + s];
    }
    __syncthreads();
  }
  if (tid == 0) {
    atomicAdd(&t->sq_err, s_err[0]);
    atomicAdd(&t->sq_ref, s_ref[0]);
    atomicMax(reinterpret_cast<unsigned long long*>(&t->max_abs),
              static_cast<unsigned long long>(__double_as_longlong(s_max[0])));
    atomicAdd(&t->bad, s_bad[0]);
  }
}

// ---- tensor maps -----------------------------------------------------------------------------------------------

using EncodeTiled = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                 const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                                 CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

EncodeTiled encode_fn() {
  static EncodeTiled fn = nullptr;
  if (!fn) {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult q;
    CHECK_CUDA(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q));
    if (q != cudaDriverEntryPointSuccess || !p) {
      std::fprintf(stderr, "cuTensorMapEncodeTiled not found\n");
      std::exit(3);
    }
    fn = reinterpret_cast<EncodeTiled>(p);
  }
  return fn;
}

// 2-D map of a 16-bit matrix: `inner` contiguous elements per line, `outer` lines `ld` elements apart.
tf::sm90::TmaDesc make_map(const void* ptr, bool bf16, long long inner, long long outer, long long ld, int box_inner,
                           int box_outer) {
  CUtensorMap map;
  const cuuint64_t dims[2] = {(cuuint64_t)inner, (cuuint64_t)outer};
  const cuuint64_t strides[1] = {(cuuint64_t)(ld * 2)};
  const cuuint32_t box[2] = {(cuuint32_t)box_inner, (cuuint32_t)box_outer};
  const cuuint32_t estr[2] = {1, 1};
  CUresult r = encode_fn()(&map, bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2,
                           const_cast<void*>(ptr), dims, strides, box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE,
                           CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                           CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    std::fprintf(stderr, "cuTensorMapEncodeTiled failed (%d): inner %lld outer %lld ld %lld box %d x %d\n", int(r),
                 inner, outer, ld, box_inner, box_outer);
    std::exit(3);
  }
  tf::sm90::TmaDesc d;
  static_assert(sizeof(d) == sizeof(map), "a tensor map is 128 bytes");
  std::memcpy(&d, &map, sizeof(d));
  return d;
}

// ---- configs ---------------------------------------------------------------------------------------------------

template <class Cfg>
__global__ void __launch_bounds__(Cfg::THREADS, 1) probe_kernel(const __grid_constant__ tf::sm90::Params p) {
  tf::sm90::gemm<Cfg>(p);
}

struct Problem {
  int m, n, k;
  const void* a;
  const void* b;
  void* c;
  float alpha, beta;
};

struct Launcher {
  std::string name;
  int in_tag, out_tag;
  bool a_row, b_row;
  bool persistent;
  std::string describe;
  std::function<void(const Problem&, cudaStream_t)> launch;  // prepared per problem by `prepare`
  std::function<void(const Problem&)> prepare;
  int threads = 0, smem = 0, regs = 0, local_bytes = 0;
  std::shared_ptr<int> grid_ptr;  // CTAs launched for the last prepared problem
};

int g_num_sms = 0;
int g_grid_cap = 0;  // --grid: at most this many CTAs for persistent configs (0: one per SM)

template <class Cfg>
Launcher make_launcher(const char* name, bool persistent) {
  Launcher L;
  L.name = name;
  L.in_tag = Cfg::IN;
  L.out_tag = Cfg::OUT;
  L.a_row = Cfg::A_ROW;
  L.b_row = Cfg::B_ROW;
  L.persistent = persistent;
  char buf[256];
  std::snprintf(buf, sizeof buf, "%dx%dx%d st%d wg%d cl%dx%d %s%s %s regs%d/%d %s", Cfg::BM, Cfg::BN, Cfg::BK,
                Cfg::STAGES, Cfg::CONSUMERS, Cfg::CM, Cfg::CN, Cfg::ORDER ? "grp" : "row",
                Cfg::ORDER ? std::to_string(Cfg::GROUP_M).c_str() : "",
                Cfg::EPI == 2 ? (Cfg::EPI_SPLIT == 2 ? "tmastore-deferred-half" : "tmastore-deferred")
                           : Cfg::EPI == 1 ? (Cfg::EPI_SPLIT == 2 ? "tmastore-half" : "tmastore") : "direct", Cfg::PRODUCER_REGS, Cfg::CONSUMER_REGS,
                persistent ? "persistent" : "one-tile-per-cta");
  if (Cfg::STMATRIX) std::strncat(buf, " stmatrix", sizeof buf - std::strlen(buf) - 1);
  L.describe = buf;
  L.threads = Cfg::THREADS;
  L.smem = Cfg::SMEM_BYTES;
  auto params = std::make_shared<tf::sm90::Params>();
  auto grid = std::make_shared<int>(0);
  L.prepare = [params, grid, persistent](const Problem& pr) {
    static bool attr = false;
    if (!attr) {
      CHECK_CUDA(cudaFuncSetAttribute(probe_kernel<Cfg>, cudaFuncAttributeMaxDynamicSharedMemorySize, Cfg::SMEM_BYTES));
      if (Cfg::CS > 1) CHECK_CUDA(cudaFuncSetAttribute(probe_kernel<Cfg>, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
      attr = true;
    }
    const bool bf = Cfg::IN == 2;
    tf::sm90::Params& p = *params;
    std::memset(&p, 0, sizeof p);
    if (Cfg::A_ROW) {
      p.a = make_map(pr.a, bf, pr.k, pr.m, pr.k, Cfg::A_BOX_INNER, Cfg::A_BOX_OUTER);
    } else {
      p.a = make_map(pr.a, bf, pr.m, pr.k, pr.m, Cfg::A_BOX_INNER, Cfg::A_BOX_OUTER);
    }
    if (Cfg::B_ROW) {
      p.b = make_map(pr.b, bf, pr.n, pr.k, pr.n, Cfg::B_BOX_INNER, Cfg::B_BOX_OUTER);
    } else {
      p.b = make_map(pr.b, bf, pr.k, pr.n, pr.k, Cfg::B_BOX_INNER, Cfg::B_BOX_OUTER);
    }
    if (Cfg::EPI != tf::sm90::kEpilogueDirect) {  // both TMA-store epilogues read the map of C
      p.c = make_map(pr.c, Cfg::OUT == 2, pr.n, pr.m, pr.n, Cfg::C_BOX_INNER, Cfg::C_BOX_OUTER);
    }
    p.c_ptr = pr.c;
    p.m = pr.m;
    p.n = pr.n;
    p.k = pr.k;
    p.ldc = pr.n;
    p.alpha = pr.alpha;
    p.beta = pr.beta;
    const int tiles = ((pr.m + Cfg::BM * Cfg::CM - 1) / (Cfg::BM * Cfg::CM)) *
                      ((pr.n + Cfg::BN * Cfg::CN - 1) / (Cfg::BN * Cfg::CN));
    int clusters = tiles;
    if (persistent) {
      int max_clusters = g_num_sms / Cfg::CS;
      if (Cfg::CS > 1) {
        cudaLaunchConfig_t cfg = {};
        cudaLaunchAttribute at[1];
        at[0].id = cudaLaunchAttributeClusterDimension;
        at[0].val.clusterDim.x = Cfg::CS;
        at[0].val.clusterDim.y = 1;
        at[0].val.clusterDim.z = 1;
        cfg.gridDim = dim3(Cfg::CS * max_clusters);
        cfg.blockDim = dim3(Cfg::THREADS);
        cfg.dynamicSmemBytes = Cfg::SMEM_BYTES;
        cfg.attrs = at;
        cfg.numAttrs = 1;
        int n = 0;
        CHECK_CUDA(cudaOccupancyMaxActiveClusters(&n, probe_kernel<Cfg>, &cfg));
        static bool said = false;
        if (!said) {
          std::printf("  (cudaOccupancyMaxActiveClusters: %d clusters of %d)\n", n, Cfg::CS);
          said = true;
        }
        if (n > 0) max_clusters = std::min(max_clusters, n);
      }
      if (g_grid_cap > 0) max_clusters = std::min(max_clusters, std::max(1, g_grid_cap / Cfg::CS));
      clusters = std::min(clusters, max_clusters);
    }
    *grid = clusters * Cfg::CS;
  };
  L.launch = [params, grid](const Problem&, cudaStream_t stream) {
    cudaLaunchConfig_t cfg = {};
    cudaLaunchAttribute at[1];
    cfg.gridDim = dim3(*grid);
    cfg.blockDim = dim3(Cfg::THREADS);
    cfg.dynamicSmemBytes = Cfg::SMEM_BYTES;
    cfg.stream = stream;
    if (Cfg::CS > 1) {
      at[0].id = cudaLaunchAttributeClusterDimension;
      at[0].val.clusterDim.x = Cfg::CS;
      at[0].val.clusterDim.y = 1;
      at[0].val.clusterDim.z = 1;
      cfg.attrs = at;
      cfg.numAttrs = 1;
    }
    CHECK_CUDA(cudaLaunchKernelEx(&cfg, probe_kernel<Cfg>, *params));
  };
  L.grid_ptr = grid;
  cudaFuncAttributes fa;
  if (cudaFuncGetAttributes(&fa, probe_kernel<Cfg>) == cudaSuccess) {
    L.regs = fa.numRegs;
    L.local_bytes = (int)fa.localSizeBytes;
  }
  return L;
}

using namespace tf::sm90;
constexpr int ROW = kOrderRowMajor, GRP = kOrderGrouped, DIR = kEpilogueDirect, TMA = kEpilogueTmaStore;

// Config<BM, BN, BK, STAGES, CONSUMERS, CM, CN, ORDER, GROUP_M, IN, OUT, A_ROW, B_ROW, EPI, P_REGS, C_REGS>
template <int IN, bool AR, bool BR>
using Best = Config<128, 256, 64, 4, 2, 2, 1, GRP, 8, IN, IN, AR, BR, DIR, 40, 232>;
template <int IN, bool AR, bool BR>
using BestTma = Config<128, 256, 64, 3, 2, 2, 1, GRP, 8, IN, IN, AR, BR, TMA, 40, 232>;

std::vector<Launcher> all_launchers() {
  std::vector<Launcher> v;
  // The ladder, FP16 RR.
  v.push_back(make_launcher<Config<128, 128, 64, 4, 1, 1, 1, ROW, 8, 1, 1, true, true, DIR, 0, 0>>("L1_1wg_128x128_s4", false));
  v.push_back(make_launcher<Config<128, 256, 64, 4, 2, 1, 1, ROW, 8, 1, 1, true, true, DIR, 0, 0>>("L2_2wg_128x256_s4", false));
  v.push_back(make_launcher<Config<128, 256, 64, 4, 2, 1, 1, ROW, 8, 1, 1, true, true, DIR, 40, 232>>("L3_2wg_128x256_s4_reg", false));
  v.push_back(make_launcher<Config<128, 256, 64, 4, 2, 1, 1, ROW, 8, 1, 1, true, true, DIR, 40, 232>>("L4_pers_row", true));
  v.push_back(make_launcher<Config<128, 256, 64, 4, 2, 1, 1, GRP, 8, 1, 1, true, true, DIR, 40, 232>>("L5_pers_grp8", true));
  v.push_back(make_launcher<Best<1, true, true>>("L6_pers_grp8_c2x1", true));
  v.push_back(make_launcher<Config<128, 256, 64, 4, 2, 1, 2, GRP, 8, 1, 1, true, true, DIR, 40, 232>>("L6b_pers_grp8_c1x2", true));
  v.push_back(make_launcher<Config<128, 256, 64, 3, 2, 1, 1, GRP, 8, 1, 1, true, true, TMA, 40, 232>>("L7_pers_grp8_tma_s3", true));
  v.push_back(make_launcher<BestTma<1, true, true>>("L8_pers_grp8_c2x1_tma_s3", true));
  v.push_back(make_launcher<Config<128, 256, 64, 3, 2, 1, 1, GRP, 16, 1, 1, true, true, TMA, 40, 232>>("L7_grp16", true));
  v.push_back(make_launcher<Config<128, 256, 64, 3, 2, 1, 1, ROW, 8, 1, 1, true, true, TMA, 40, 232>>("L7_row", true));
  v.push_back(make_launcher<Config<128, 256, 64, 3, 2, 1, 2, GRP, 8, 1, 1, true, true, TMA, 40, 232>>("L9_pers_grp8_c1x2_tma_s3", true));
  // Deferred TMA-store epilogue (written out under the next tile's first wgmma groups); half staging tiles.
  constexpr int DEF = kEpilogueTmaStoreDeferred;
  v.push_back(make_launcher<Config<128, 256, 64, 3, 2, 1, 1, GRP, 8, 1, 1, true, true, DEF, 40, 232>>("L10_def_s3", true));
  v.push_back(make_launcher<Config<128, 256, 64, 3, 2, 2, 1, GRP, 8, 1, 1, true, true, DEF, 40, 232>>("L11_def_s3_c2x1", true));
  v.push_back(make_launcher<Config<128, 256, 64, 4, 2, 1, 1, GRP, 8, 1, 1, true, true, DEF, 40, 232, 2>>("L12_def_s4_half", true));
  v.push_back(make_launcher<Config<128, 256, 64, 4, 2, 2, 1, GRP, 8, 1, 1, true, true, DEF, 40, 232, 2>>("L13_def_s4_half_c2x1", true));
  v.push_back(make_launcher<Config<128, 256, 64, 4, 2, 1, 1, GRP, 8, 1, 1, true, true, TMA, 40, 232, 2>>("L14_tma_s4_half", true));
  v.push_back(make_launcher<Config<128, 256, 64, 4, 2, 2, 1, GRP, 8, 1, 1, true, true, TMA, 40, 232, 2>>("L15_tma_s4_half_c2x1", true));
  v.push_back(make_launcher<Config<128, 256, 64, 3, 2, 1, 1, GRP, 8, 2, 2, true, true, DEF, 40, 232>>("L10_bf16", true));
  v.push_back(make_launcher<Config<128, 256, 64, 3, 2, 1, 1, GRP, 8, 1, 1, true, false, DEF, 40, 232>>("L10_RC", true));
  v.push_back(make_launcher<Config<128, 256, 64, 3, 2, 1, 1, GRP, 8, 1, 1, false, true, DEF, 40, 232>>("L10_CR", true));
  v.push_back(make_launcher<Config<128, 256, 64, 3, 2, 1, 1, GRP, 8, 1, 1, false, false, DEF, 40, 232>>("L10_CC", true));
  v.push_back(make_launcher<Config<128, 256, 64, 4, 2, 2, 1, GRP, 8, 2, 2, true, true, DEF, 40, 232, 2>>("L13_bf16", true));
  v.push_back(make_launcher<Config<128, 256, 64, 4, 2, 2, 1, GRP, 8, 1, 1, true, false, DEF, 40, 232, 2>>("L13_RC", true));
  v.push_back(make_launcher<Config<128, 256, 64, 4, 2, 2, 1, GRP, 8, 1, 1, false, true, DEF, 40, 232, 2>>("L13_CR", true));
  v.push_back(make_launcher<Config<128, 256, 64, 4, 2, 2, 1, GRP, 8, 1, 1, false, false, DEF, 40, 232, 2>>("L13_CC", true));
  // stmatrix epilogue writes; BLOCK_N 192 (fewer idle SMs in the last wave for some shapes).
  v.push_back(make_launcher<Config<128, 256, 64, 3, 2, 1, 1, GRP, 8, 1, 1, true, true, TMA, 40, 232, 1, true>>("L16_tma_s3_stsm", true));
  v.push_back(make_launcher<Config<128, 256, 64, 4, 2, 2, 1, GRP, 8, 1, 1, true, true, TMA, 40, 232, 2, true>>("L17_tma_s4_half_c2x1_stsm", true));
  v.push_back(make_launcher<Config<128, 192, 64, 4, 2, 1, 1, GRP, 8, 1, 1, true, true, TMA, 40, 232, 1, true>>("L18_128x192_s4_stsm", true));
  v.push_back(make_launcher<Config<128, 192, 64, 4, 2, 1, 2, GRP, 8, 1, 1, true, true, TMA, 40, 232, 1, true>>("L19_128x192_s4_c1x2_stsm", true));
  v.push_back(make_launcher<Config<128, 256, 64, 3, 2, 1, 1, GRP, 8, 2, 2, true, true, TMA, 40, 232, 1, true>>("L16_bf16", true));
  v.push_back(make_launcher<Config<128, 256, 64, 3, 2, 1, 1, GRP, 8, 1, 1, true, false, TMA, 40, 232, 1, true>>("L16_RC", true));
  v.push_back(make_launcher<Config<128, 256, 64, 3, 2, 1, 1, GRP, 8, 1, 1, false, true, TMA, 40, 232, 1, true>>("L16_CR", true));
  v.push_back(make_launcher<Config<128, 256, 64, 3, 2, 1, 1, GRP, 8, 1, 1, false, false, TMA, 40, 232, 1, true>>("L16_CC", true));
  // Variants of the cluster configs: other dtype and layouts.
  v.push_back(make_launcher<Best<2, true, true>>("L6_bf16", true));
  v.push_back(make_launcher<Best<1, true, false>>("L6_RC", true));
  v.push_back(make_launcher<Best<1, false, true>>("L6_CR", true));
  v.push_back(make_launcher<Best<1, false, false>>("L6_CC", true));
  v.push_back(make_launcher<BestTma<2, true, true>>("L8_bf16", true));
  v.push_back(make_launcher<BestTma<1, true, false>>("L8_RC", true));
  v.push_back(make_launcher<BestTma<1, false, true>>("L8_CR", true));
  v.push_back(make_launcher<BestTma<1, false, false>>("L8_CC", true));
  return v;
}

// ---- the run ---------------------------------------------------------------------------------------------------

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t e = s.find(sep, pos);
    if (e == std::string::npos) e = s.size();
    if (e > pos) out.push_back(s.substr(pos, e - pos));
    pos = e + 1;
  }
  return out;
}

double median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct Options {
  std::string out = ".";
  std::vector<std::string> configs;
  std::vector<std::string> shapes;
  int reps = 30, warmup = 10;
  bool check_only = false, beta = false;
};

const char* layout_name(bool ar, bool br) { return ar ? (br ? "RR" : "RC") : (br ? "CR" : "CC"); }

template <typename T>
Totals compare_to(const void* c, const double* ref, long long n, Totals* d_tot) {
  CHECK_CUDA(cudaMemset(d_tot, 0, sizeof(Totals)));
  compare<T><<<1024, 256>>>(static_cast<const T*>(c), ref, n, d_tot);
  CHECK_CUDA(cudaGetLastError());
  Totals t;
  CHECK_CUDA(cudaMemcpy(&t, d_tot, sizeof t, cudaMemcpyDeviceToHost));
  return t;
}

int run(const Options& opt) {
  int dev = 0;
  CHECK_CUDA(cudaSetDevice(dev));
  cudaDeviceProp prop;
  CHECK_CUDA(cudaGetDeviceProperties(&prop, dev));
  g_num_sms = prop.multiProcessorCount;
  std::printf("device: %s, %d SMs, L2 %d MB, cc %d.%d\n", prop.name, prop.multiProcessorCount, prop.l2CacheSize >> 20,
              prop.major, prop.minor);
  if (prop.major != 9) {
    std::fprintf(stderr, "needs a Hopper GPU (sm_90a)\n");
    return 2;
  }
  std::vector<Launcher> all = all_launchers();
  std::vector<Launcher*> sel;
  for (const std::string& name : opt.configs) {
    bool found = false;
    for (Launcher& L : all)
      if (name == "all" || L.name == name) {
        sel.push_back(&L);
        found = true;
      }
    if (!found) {
      std::fprintf(stderr, "unknown config %s (see --list)\n", name.c_str());
      return 2;
    }
  }

  cublasHandle_t handle;
  CHECK_CUBLAS(cublasCreate(&handle));
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreate(&stream));
  CHECK_CUBLAS(cublasSetStream(handle, stream));
  const size_t scrub_bytes = std::max<size_t>(size_t(4) * prop.l2CacheSize, size_t(256) << 20);  // >= 4x L2
  void* scrub = nullptr;
  CHECK_CUDA(cudaMalloc(&scrub, scrub_bytes));
  Totals* d_tot = nullptr;
  CHECK_CUDA(cudaMalloc(&d_tot, sizeof(Totals)));
  cudaEvent_t ev[4];
  for (auto& e : ev) CHECK_CUDA(cudaEventCreate(&e));

  const std::string csv_path = opt.out + "/results.csv", json_path = opt.out + "/results.jsonl";
  bool csv_new = true;
  if (FILE* f = std::fopen(csv_path.c_str(), "r")) {
    csv_new = false;
    std::fclose(f);
  }
  FILE* csv = std::fopen(csv_path.c_str(), "a");
  FILE* jsl = std::fopen(json_path.c_str(), "a");
  if (!csv || !jsl) {
    std::fprintf(stderr, "cannot write into %s\n", opt.out.c_str());
    return 2;
  }
  if (csv_new)
    std::fprintf(csv,
                 "shape,dtype,layout,config,describe,grid,regs,local_bytes,ours_ms,ours_tflops,cublas_ms,cublas_tflops,"
                 "ratio_cublas_over_ours,ours_rel_err,cublas_rel_err,ours_bad,status\n");
  std::printf("%-18s %-5s %-3s %-26s %9s %9s %7s %10s %10s %5s %s\n", "shape", "dtype", "lay", "config", "ours_TF",
              "cuBLAS_TF", "ratio", "ours_err", "cublas_err", "bad", "status");
  int failures = 0;

  for (const std::string& shape : opt.shapes) {
    int M = 0, N = 0, K = 0;
    if (std::sscanf(shape.c_str(), "%dx%dx%d", &M, &N, &K) != 3 || M <= 0 || N <= 0 || K <= 0) {
      std::fprintf(stderr, "bad shape %s\n", shape.c_str());
      return 2;
    }
    // "MxNxK:beta": check alpha = 0.75, beta = -0.5 on a random C (no timing) for this shape.
    const bool beta_test = opt.beta || shape.find(":beta") != std::string::npos;
    const bool check_only = opt.check_only || beta_test;
    // Group the selected configs by (dtype, layout): one set of operands and one reference per group.
    std::vector<int> done(sel.size(), 0);
    for (size_t gi = 0; gi < sel.size(); ++gi) {
      if (done[gi]) continue;
      const int in = sel[gi]->in_tag;
      const bool ar = sel[gi]->a_row, br = sel[gi]->b_row;
      const bool bf = in == 2;
      const long long sa = (long long)M * K, sb = (long long)K * N, sc = (long long)M * N;
      void *A, *B, *C, *Cref, *Cin = nullptr;
      double* ref;
      CHECK_CUDA(cudaMalloc(&A, sa * 2));
      CHECK_CUDA(cudaMalloc(&B, sb * 2));
      CHECK_CUDA(cudaMalloc(&C, sc * 2));
      CHECK_CUDA(cudaMalloc(&Cref, sc * 2));
      CHECK_CUDA(cudaMalloc(&ref, sc * 8));
      const unsigned long long seed = 1234567ull + (unsigned long long)M * 31 + N * 17 + K * 7 + in;
      const float alpha = beta_test ? 0.75f : 1.0f, beta = beta_test ? -0.5f : 0.0f;
      if (bf) {
        fill_random<__nv_bfloat16><<<2048, 256>>>((__nv_bfloat16*)A, sa, seed);
        fill_random<__nv_bfloat16><<<2048, 256>>>((__nv_bfloat16*)B, sb, seed + 1);
      } else {
        fill_random<__half><<<2048, 256>>>((__half*)A, sa, seed);
        fill_random<__half><<<2048, 256>>>((__half*)B, sb, seed + 1);
      }
      if (beta_test) {
        CHECK_CUDA(cudaMalloc(&Cin, sc * 2));
        if (bf) {
          fill_random<__nv_bfloat16><<<2048, 256>>>((__nv_bfloat16*)Cin, sc, seed + 2);
        } else {
          fill_random<__half><<<2048, 256>>>((__half*)Cin, sc, seed + 2);
        }
      }
      CHECK_CUDA(cudaGetLastError());
      {
        dim3 g((N + 63) / 64, (M + 63) / 64);
        if (bf) {
          auto* a = (const __nv_bfloat16*)A;
          auto* b = (const __nv_bfloat16*)B;
          auto* ci = (const __nv_bfloat16*)Cin;
          if (ar && br) reference_gemm<__nv_bfloat16, true, true><<<g, 256>>>(a, b, ci, ref, M, N, K, alpha, beta);
          if (ar && !br) reference_gemm<__nv_bfloat16, true, false><<<g, 256>>>(a, b, ci, ref, M, N, K, alpha, beta);
          if (!ar && br) reference_gemm<__nv_bfloat16, false, true><<<g, 256>>>(a, b, ci, ref, M, N, K, alpha, beta);
          if (!ar && !br) reference_gemm<__nv_bfloat16, false, false><<<g, 256>>>(a, b, ci, ref, M, N, K, alpha, beta);
        } else {
          auto* a = (const __half*)A;
          auto* b = (const __half*)B;
          auto* ci = (const __half*)Cin;
          if (ar && br) reference_gemm<__half, true, true><<<g, 256>>>(a, b, ci, ref, M, N, K, alpha, beta);
          if (ar && !br) reference_gemm<__half, true, false><<<g, 256>>>(a, b, ci, ref, M, N, K, alpha, beta);
          if (!ar && br) reference_gemm<__half, false, true><<<g, 256>>>(a, b, ci, ref, M, N, K, alpha, beta);
          if (!ar && !br) reference_gemm<__half, false, false><<<g, 256>>>(a, b, ci, ref, M, N, K, alpha, beta);
        }
        CHECK_CUDA(cudaGetLastError());
        CHECK_CUDA(cudaDeviceSynchronize());
      }
      auto restore_c = [&](void* dst) {  // poison (NaN) or the beta input
        if (beta_test) {
          CHECK_CUDA(cudaMemcpyAsync(dst, Cin, sc * 2, cudaMemcpyDeviceToDevice, stream));
        } else {
          fill_u16<<<2048, 256, 0, stream>>>((unsigned short*)dst, sc, 0xFFFF);
          CHECK_CUDA(cudaGetLastError());
        }
      };
      // cuBLAS (column-major): C^T (N x M, ld N) = op(B) * op(A), B row-major = B^T column-major.
      const cudaDataType dt = bf ? CUDA_R_16BF : CUDA_R_16F;
      auto cublas_run = [&](void* dst) {
        CHECK_CUBLAS(cublasGemmEx(handle, br ? CUBLAS_OP_N : CUBLAS_OP_T, ar ? CUBLAS_OP_N : CUBLAS_OP_T, N, M, K,
                                  &alpha, B, dt, br ? N : K, A, dt, ar ? K : M, &beta, dst, dt, N,
                                  CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
      };
      restore_c(Cref);
      cublas_run(Cref);
      CHECK_CUDA(cudaStreamSynchronize(stream));
      const Totals tc = bf ? compare_to<__nv_bfloat16>(Cref, ref, sc, d_tot) : compare_to<__half>(Cref, ref, sc, d_tot);
      const double cublas_err = std::sqrt(tc.sq_err / tc.sq_ref);
      const double tol = bf ? 1e-2 : 2e-3;

      for (size_t ci = gi; ci < sel.size(); ++ci) {
        Launcher& L = *sel[ci];
        if (done[ci] || L.in_tag != in || L.a_row != ar || L.b_row != br) continue;
        done[ci] = 1;
        Problem pr{M, N, K, A, B, C, alpha, beta};
        L.prepare(pr);
        // correctness: poisoned C, one run
        restore_c(C);
        L.launch(pr, stream);
        CHECK_CUDA(cudaGetLastError());
        cudaError_t se = cudaStreamSynchronize(stream);
        if (se != cudaSuccess) {
          std::printf("%-18s %-5s %-3s %-26s kernel failed: %s\n", shape.c_str(), bf ? "bf16" : "f16",
                      layout_name(ar, br), L.name.c_str(), cudaGetErrorString(se));
          std::fflush(stdout);
          return 4;  // the context is gone
        }
        const Totals t = bf ? compare_to<__nv_bfloat16>(C, ref, sc, d_tot) : compare_to<__half>(C, ref, sc, d_tot);
        const double err = t.sq_ref > 0 ? std::sqrt(t.sq_err / t.sq_ref) : 0.0;
        const bool ok = t.bad == 0 && err < tol && std::isfinite(err);
        if (!ok) ++failures;
        double ours_ms = 0, cub_ms = 0;
        if (!check_only) {
          std::vector<float> to, tb;
          for (int r = 0; r < opt.warmup + opt.reps; ++r) {
            CHECK_CUDA(cudaMemsetAsync(scrub, r & 0xff, scrub_bytes, stream));
            CHECK_CUDA(cudaEventRecord(ev[0], stream));
            L.launch(pr, stream);
            CHECK_CUDA(cudaEventRecord(ev[1], stream));
            CHECK_CUDA(cudaMemsetAsync(scrub, (r + 1) & 0xff, scrub_bytes, stream));
            CHECK_CUDA(cudaEventRecord(ev[2], stream));
            cublas_run(Cref);
            CHECK_CUDA(cudaEventRecord(ev[3], stream));
            CHECK_CUDA(cudaStreamSynchronize(stream));
            if (r >= opt.warmup) {
              float a = 0, b = 0;
              CHECK_CUDA(cudaEventElapsedTime(&a, ev[0], ev[1]));
              CHECK_CUDA(cudaEventElapsedTime(&b, ev[2], ev[3]));
              to.push_back(a);
              tb.push_back(b);
            }
          }
          ours_ms = median(to);
          cub_ms = median(tb);
        }
        const double flop = 2.0 * M * N * K;
        const double ours_tf = ours_ms > 0 ? flop / (ours_ms * 1e-3) / 1e12 : 0;
        const double cub_tf = cub_ms > 0 ? flop / (cub_ms * 1e-3) / 1e12 : 0;
        const double ratio = ours_ms > 0 ? cub_ms / ours_ms : 0;
        std::printf("%-18s %-5s %-3s %-26s %9.1f %9.1f %7.3f %10.2e %10.2e %5llu %s\n", shape.c_str(),
                    bf ? "bf16" : "f16", layout_name(ar, br), L.name.c_str(), ours_tf, cub_tf, ratio, err, cublas_err,
                    t.bad, ok ? (beta_test ? "ok-beta" : "ok") : "FAIL");
        std::fflush(stdout);
        std::fprintf(csv, "%s,%s,%s,%s,%s,%d,%d,%d,%.5f,%.1f,%.5f,%.1f,%.4f,%.3e,%.3e,%llu,%s\n", shape.c_str(),
                     bf ? "bf16" : "f16", layout_name(ar, br), L.name.c_str(), L.describe.c_str(), *L.grid_ptr, L.regs,
                     L.local_bytes, ours_ms, ours_tf, cub_ms, cub_tf, ratio, err, cublas_err, t.bad,
                     ok ? (beta_test ? "ok-beta" : "ok") : "FAIL");
        std::fprintf(jsl,
                     "{\"shape\":\"%s\",\"dtype\":\"%s\",\"layout\":\"%s\",\"config\":\"%s\",\"describe\":\"%s\","
                     "\"grid\":%d,\"regs\":%d,\"local_bytes\":%d,\"ours_ms\":%.5f,\"ours_tflops\":%.1f,\"cublas_ms\":%.5f,"
                     "\"cublas_tflops\":%.1f,\"ratio\":%.4f,\"ours_rel_err\":%.3e,\"cublas_rel_err\":%.3e,"
                     "\"bad\":%llu,\"beta_test\":%s,\"ok\":%s}\n",
                     shape.c_str(), bf ? "bf16" : "f16", layout_name(ar, br), L.name.c_str(), L.describe.c_str(),
                     *L.grid_ptr, L.regs, L.local_bytes, ours_ms, ours_tf, cub_ms, cub_tf, ratio, err, cublas_err, t.bad,
                     beta_test ? "true" : "false", ok ? "true" : "false");
        std::fflush(csv);
        std::fflush(jsl);
      }
      CHECK_CUDA(cudaFree(A));
      CHECK_CUDA(cudaFree(B));
      CHECK_CUDA(cudaFree(C));
      CHECK_CUDA(cudaFree(Cref));
      CHECK_CUDA(cudaFree(ref));
      if (Cin) CHECK_CUDA(cudaFree(Cin));
    }
  }
  std::fclose(csv);
  std::fclose(jsl);
  return failures ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--list") {
      for (const Launcher& L : all_launchers())
        std::printf("%-26s %s %s %s smem %d threads %d regs %d local %d\n", L.name.c_str(),
                    L.in_tag == 2 ? "bf16" : "f16", layout_name(L.a_row, L.b_row), L.describe.c_str(), L.smem,
                    L.threads, L.regs, L.local_bytes);
      return 0;
    } else if (a == "--out") {
      opt.out = next();
    } else if (a == "--configs") {
      opt.configs = split(next(), ',');
    } else if (a == "--shapes") {
      opt.shapes = split(next(), ',');
    } else if (a == "--reps") {
      opt.reps = std::atoi(next().c_str());
    } else if (a == "--warmup") {
      opt.warmup = std::atoi(next().c_str());
    } else if (a == "--check-only") {
      opt.check_only = true;
    } else if (a == "--grid") {
      g_grid_cap = std::atoi(next().c_str());
    } else if (a == "--beta") {
      opt.beta = true;
    } else {
      std::fprintf(stderr, "unknown argument %s\n", a.c_str());
      return 2;
    }
  }
  if (opt.configs.empty() || opt.shapes.empty()) {
    std::fprintf(stderr, "usage: %s --out DIR --configs NAME[,NAME] --shapes MxNxK[,...] | --list\n", argv[0]);
    return 2;
  }
  return run(opt);
}

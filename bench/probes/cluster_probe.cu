// Probe of thread-block clusters on an sm_90 GPU for split-K's cluster sum: how many clusters of 1-16 CTAs with
// ~200 KB of shared memory each are resident at once (the occupancy query, and a timed grid of CTAs that each spin
// a fixed time: one wave or more), and what summing f32 partial tiles over distributed shared memory costs.
// Built with nvcc on the project's machine (static CUDA runtime), run on the GPU machine:
//   nvcc -O2 -std=c++17 -arch=sm_90a -o cluster_probe bench/probes/cluster_probe.cu && ./cluster_probe
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <cstdio>

namespace cg = cooperative_groups;

#define CHECK(x)                                                                                 \
  do {                                                                                           \
    cudaError_t e_ = (x);                                                                        \
    if (e_ != cudaSuccess) {                                                                     \
      std::printf("%s failed: %s\n", #x, cudaGetErrorString(e_));                              \
      return 1;                                                                                  \
    }                                                                                            \
  } while (0)

constexpr int kSmem = 200 * 1024;

// Each CTA spins `ns` nanoseconds of globaltimer: a grid that fits in one wave takes ~ns, two waves ~2 ns.
__global__ void spin(long long ns, int* sink) {
  extern __shared__ unsigned char smem[];
  long long t0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  long long t = t0;
  while (t - t0 < ns) asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  if (threadIdx.x == 0 && smem[threadIdx.x] == 1) sink[blockIdx.x] = 1;
}

// The cluster sum's last step alone: every CTA writes `slot_f4` float4 (its partial tile) into its shared memory;
// after a cluster barrier each sums its 1/size share over every CTA of the cluster, in rank order, and writes it out.
__global__ void dsmem_sum(int slot_f4, float4* out) {
  extern __shared__ float4 part[];
  cg::cluster_group cluster = cg::this_cluster();
  const unsigned rank = cluster.block_rank(), size = cluster.num_blocks();
  for (int f = threadIdx.x; f < slot_f4; f += blockDim.x) part[f] = make_float4(rank, f, 1.0f, 2.0f);
  cluster.sync();
  const int f0 = rank * slot_f4 / size, f1 = (rank + 1) * slot_f4 / size;
  for (int f = f0 + threadIdx.x; f < f1; f += blockDim.x) {
    float4 s = make_float4(0, 0, 0, 0);
    for (unsigned j = 0; j < size; ++j) {
      const float4* r = cluster.map_shared_rank(part, j);
      const float4 x = r[f];
      s.x += x.x, s.y += x.y, s.z += x.z, s.w += x.w;
    }
    out[static_cast<long long>(blockIdx.x) * slot_f4 + f] = s;
  }
  cluster.sync();
}

// A launch of `grid` CTAs in clusters of `cluster` along x; `attr` must outlive the config.
cudaLaunchConfig_t cluster_launch(int grid, int block, int cluster, int smem, cudaLaunchAttribute* attr) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(grid);
  cfg.blockDim = dim3(block);
  cfg.dynamicSmemBytes = smem;
  attr->id = cudaLaunchAttributeClusterDimension;
  attr->val.clusterDim.x = cluster;
  attr->val.clusterDim.y = attr->val.clusterDim.z = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  return cfg;
}

template <class K, class... Args>
float time_launch(K kernel, int grid, int block, int cluster, int smem, Args... args) {
  cudaLaunchAttribute attr;
  const cudaLaunchConfig_t cfg = cluster_launch(grid, block, cluster, smem, &attr);
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  float best = 1e9f;
  for (int rep = 0; rep < 7; ++rep) {
    cudaEventRecord(a);
    cudaError_t e = cudaLaunchKernelEx(&cfg, kernel, args...);
    cudaEventRecord(b);
    if (e != cudaSuccess || cudaEventSynchronize(b) != cudaSuccess) {
      std::printf("  launch of grid %d cluster %d failed: %s\n", grid, cluster, cudaGetErrorString(cudaGetLastError()));
      return -1;
    }
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    if (rep > 0 && ms < best) best = ms;
  }
  return best * 1000.0f;
}

int main() {
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("%s, %d SMs\n", prop.name, prop.multiProcessorCount);
  CHECK(cudaFuncSetAttribute(spin, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
  CHECK(cudaFuncSetAttribute(spin, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  CHECK(cudaFuncSetAttribute(dsmem_sum, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
  CHECK(cudaFuncSetAttribute(dsmem_sum, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  int* sink = nullptr;
  CHECK(cudaMalloc(&sink, 1 << 20));
  float4* out = nullptr;
  CHECK(cudaMalloc(&out, size_t(256) * 8192 * sizeof(float4)));

  std::printf("\nresident clusters (occupancy query, 384 threads, %d KB shared memory per CTA), and a grid of 128 or\n"
              "132 CTAs that each spin 20 us (one wave: ~20 us)\n", kSmem / 1024);
  for (int cs : {1, 2, 3, 4, 6, 8, 16}) {
    cudaLaunchAttribute attr;
    const cudaLaunchConfig_t cfg = cluster_launch(cs * 64, 384, cs, kSmem, &attr);
    int n = 0;
    cudaError_t e = cudaOccupancyMaxActiveClusters(&n, spin, &cfg);
    const int g128 = 128 / cs * cs;
    const float t128 = time_launch(spin, g128, 384, cs, kSmem, 20000LL, sink);
    const int g132 = 132 / cs * cs;
    const float t132 = time_launch(spin, g132, 384, cs, kSmem, 20000LL, sink);
    std::printf("cluster %2d: max active %3d (%s) = %3d CTAs; grid %3d: %6.1f us; grid %3d: %6.1f us\n", cs, n,
                e == cudaSuccess ? "ok" : cudaGetErrorString(e), n * cs, g128, t128, g132, t132);
  }

  std::printf("\ndistributed shared memory sum: 128 CTAs (or as many as whole clusters make), 256 threads, a partial\n"
              "tile of 64x128 or 128x128 f32 per CTA, each CTA summing its 1/size of the tile over the cluster\n");
  for (int slot : {2048, 4096}) {
    for (int cs : {1, 2, 4, 8, 16}) {
      const int grid = 128 / cs * cs;
      const float t = time_launch(dsmem_sum, grid, 256, cs, slot * 16, slot, out);
      std::printf("slot %5d float4 (%3d KB), cluster %2d: %6.2f us\n", slot, slot * 16 / 1024, cs, t);
    }
  }
  return 0;
}

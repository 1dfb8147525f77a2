// On a GPU: compiled kernels load once per process, launch through cuLaunchKernelEx and compute what they should.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/half.hpp"
#include "hw/cuda_device.hpp"
#include "hw/cuda_driver.hpp"
#include "jit/loader.hpp"
#include "jit_test_util.hpp"

namespace tileforge::jit {
namespace {

using testing::TempDir;

// The device's exact target, or a skip that says why there is none.
#define TF_REQUIRE_GPU_ARCH(arch_var)                                                                       \
  TF_REQUIRE_NVRTC();                                                                                       \
  std::string arch_var;                                                                                     \
  do {                                                                                                      \
    auto tf_d_ = ::tileforge::cuda::driver();                                                               \
    if (!tf_d_) GTEST_SKIP() << "SKIPPED: no CUDA device (" << tf_d_.status().message() << ")";              \
    auto tf_p_ = ::tileforge::cuda::query_device(0);                                                        \
    if (!tf_p_) GTEST_SKIP() << "SKIPPED: no CUDA device (" << tf_p_.status().message() << ")";              \
    arch_var = ::tileforge::cuda::nvrtc_arch(tf_p_->cc_major, tf_p_->cc_minor);                              \
  } while (0)

TEST(JitLoaderGpu, LaunchesAndChecksEveryElement) {
  TF_REQUIRE_GPU_ARCH(arch);
  TempDir dir;
  KernelCache cache(dir.str());
  CompileRequest req = testing::scale_request(arch);
  auto k = load_kernel(req, "scale_kernel<2>", 0, &cache);
  ASSERT_TRUE(k.ok()) << k.status().to_string();
  EXPECT_FALSE(k->timing.cache_hit);
  EXPECT_FALSE(k->timing.module_reused);
  std::printf("[ info ] first load: %s\n", describe(k->timing).c_str());
  EXPECT_EQ(k->symbol, "_Z12scale_kernelILi2EEvPK6__halfPfi");
  EXPECT_GT(k->resources.registers, 0);
  EXPECT_EQ(k->driver_registers, k->resources.registers) << "the driver sees what ptxas reported";
  EXPECT_GE(k->max_threads_per_block, 256);

  const int n = 1000003;  // not a multiple of the block: the tail is predicated
  std::mt19937 rng(1234);
  std::uniform_real_distribution<float> dist(-4.0f, 4.0f);
  std::vector<uint16_t> in(n);
  for (auto& h : in) h = float_to_f16(dist(rng));
  auto din = cuda::DeviceBuffer::allocate(n * sizeof(uint16_t));
  auto dout = cuda::DeviceBuffer::allocate((n + 1) * sizeof(float));
  TF_ASSERT_OK(din);
  TF_ASSERT_OK(dout);
  TF_ASSERT_OK(din->upload(in.data(), in.size() * sizeof(uint16_t)));
  TF_ASSERT_OK(dout->fill_bytes(0xff));  // NaN everywhere: an element not written shows up
  CUdeviceptr a = din->get(), b = dout->get();
  int count = n;
  void* params[] = {&a, &b, &count};
  cuda::LaunchDims dims;
  dims.block[0] = 256;
  dims.grid[0] = unsigned((n + 255) / 256);
  TF_ASSERT_OK(cuda::launch(k->function, dims, params, "scale_kernel<2>"));
  TF_ASSERT_OK(cuda::check((*cuda::driver())->cuCtxSynchronize(), "cuCtxSynchronize"));
  std::vector<float> out(n + 1);
  TF_ASSERT_OK(dout->download(out.data(), out.size() * sizeof(float)));
  int wrong = 0;
  for (int i = 0; i < n; ++i) {
    float expect = f16_to_float(in[i]) * 2 * 3.0f;
    if (out[i] != expect && ++wrong < 5) ADD_FAILURE() << "element " << i << ": " << out[i] << " != " << expect;
  }
  EXPECT_EQ(wrong, 0);
  EXPECT_TRUE(std::isnan(out[n])) << "nothing past the end was written";

  // The same request again in this process: the module map answers, nothing is read or loaded.
  uint64_t compiles = nvrtc_compile_count();
  std::size_t modules = loaded_module_count();
  auto again = load_kernel(req, "add_one", 0, &cache);
  ASSERT_TRUE(again.ok()) << again.status().to_string();
  EXPECT_TRUE(again->timing.module_reused);
  EXPECT_EQ(again->module, k->module);
  EXPECT_EQ(loaded_module_count(), modules);
  EXPECT_EQ(nvrtc_compile_count(), compiles);
  EXPECT_EQ(cache.counters().hits, 0u) << "the disk cache was not even read";
  std::printf("[ info ] second load: %s\n", describe(again->timing).c_str());
  void* p2[] = {&b, &count};
  TF_ASSERT_OK(cuda::launch(again->function, dims, p2, "add_one"));
  TF_ASSERT_OK(dout->download(out.data(), n * sizeof(float)));
  for (int i = 0; i < n; i += 997) EXPECT_EQ(out[i], f16_to_float(in[i]) * 2 * 3.0f + 1.0f);

  auto missing = load_kernel(req, "no_such_kernel", 0, &cache);
  EXPECT_EQ(missing.status().code(), Code::invalid_argument);
  EXPECT_NE(missing.status().message().find("extern \"C\""), std::string::npos) << missing.status().message();
}

TEST(JitLoaderGpu, LargeDynamicSharedMemoryAndClusters) {
  TF_REQUIRE_GPU_ARCH(arch);
  auto props = cuda::query_device(0);
  CompileRequest r;
  r.name = "test_smem_cluster";
  r.arch = arch;
  r.source = R"(extern "C" __global__ void big_smem(unsigned long long* out, int words) {
  extern __shared__ unsigned buf[];
  for (int i = threadIdx.x; i < words; i += blockDim.x) buf[i] = unsigned(i);
  __syncthreads();
  unsigned long long s = 0;
  for (int i = threadIdx.x; i < words; i += blockDim.x) s += buf[words - 1 - i];
  atomicAdd(out, s);
}
#if __CUDA_ARCH__ >= 900 || !defined(__CUDA_ARCH__)
extern "C" __global__ void cluster_rank(unsigned* out) {
  unsigned rank, size;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(size));
  if (threadIdx.x == 0) out[blockIdx.x] = rank * 100 + size;
}
#endif
)";
  KernelCache cache("");
  auto k = load_kernel(r, "big_smem", 0, &cache);
  ASSERT_TRUE(k.ok()) << k.status().to_string();
  const int words = int(std::min<int64_t>(props->smem_per_block_optin_bytes, 200 * 1024) / 4);
  auto out = cuda::DeviceBuffer::allocate(sizeof(unsigned long long));
  TF_ASSERT_OK(out);
  TF_ASSERT_OK(out->fill_bytes(0));
  CUdeviceptr o = out->get();
  int w = words;
  void* params[] = {&o, &w};
  cuda::LaunchDims dims;
  dims.block[0] = 256;
  dims.dynamic_smem_bytes = unsigned(words * 4);
  ASSERT_GT(dims.dynamic_smem_bytes, 48u * 1024) << "the test needs more than the default limit";
  TF_ASSERT_OK(cuda::launch(k->function, dims, params, "big_smem"));
  unsigned long long sum = 0;
  TF_ASSERT_OK(out->download(&sum, sizeof(sum)));
  EXPECT_EQ(sum, (unsigned long long)words * (words - 1) / 2);

  // More than the device allows is refused with the CUDA error and the kernel's name, not a crash.
  dims.dynamic_smem_bytes = unsigned(props->smem_per_block_optin_bytes + 4096);
  Status too_big = cuda::launch(k->function, dims, params, "big_smem (too much)");
  EXPECT_FALSE(too_big.ok());
  EXPECT_NE(too_big.message().find("big_smem (too much)"), std::string::npos) << too_big.message();

  if (props->cc_major < 9) GTEST_SKIP() << "SKIPPED: clusters need compute capability 9.0";
  auto c = load_kernel(r, "cluster_rank", 0, &cache);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  auto ranks = cuda::DeviceBuffer::allocate(8 * sizeof(unsigned));
  CUdeviceptr rp = ranks->get();
  void* p2[] = {&rp};
  cuda::LaunchDims cd;
  cd.grid[0] = 8;
  cd.block[0] = 32;
  cd.cluster[0] = 2;
  TF_ASSERT_OK(cuda::launch(c->function, cd, p2, "cluster_rank"));
  std::vector<unsigned> got(8);
  TF_ASSERT_OK(ranks->download(got.data(), 8 * sizeof(unsigned)));
  for (unsigned i = 0; i < 8; ++i) EXPECT_EQ(got[i], (i % 2) * 100 + 2) << "block " << i;
}

TEST(JitLoaderGpu, WrongTargetFailsToLoadWithTheCudaError) {
  TF_REQUIRE_GPU_ARCH(arch);
  // A cubin for another exact target cannot run here; the load is refused with the CUDA error, naming the kernel.
  CompileRequest r = testing::scale_request(arch == "sm_80" ? "sm_90a" : "sm_80");
  r.name = "test_wrong_target";
  if (arch == "sm_86" || arch == "sm_89") GTEST_SKIP() << "SKIPPED: an sm_80 cubin runs on " << arch;
  KernelCache cache("");
  auto k = load_kernel(r, "add_one", 0, &cache);
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.status().code(), Code::launch_failed);
  EXPECT_NE(k.status().message().find("test_wrong_target"), std::string::npos) << k.status().message();
  EXPECT_NE(k.status().message().find("CUDA_ERROR"), std::string::npos) << k.status().message();
}

}  // namespace
}  // namespace tileforge::jit

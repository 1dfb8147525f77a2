// The per-stream shared split-K workspace on a CUDA GPU: kernels on one stream share it, others' streams do not, it
// grows with its counters still zero, and kernels of different counter zones alternate on it exactly. Skips visibly
// without a GPU.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "backends/cuda/common/stream_workspace.hpp"
#include "backends/cuda/sm90/sm90_test_config.hpp"
#include "hw/cuda_device.hpp"
#include "support/gpu_run.hpp"
#include "support/test_support.hpp"

namespace tileforge {
namespace {

using cuda::StreamWorkspaces;
using cuda::WorkspaceLease;

class StreamWorkspaceGpuTest : public testing::CudaGpuTest {};

std::vector<int32_t> read_ints(const void* device, int64_t count) {
  std::vector<int32_t> host(std::size_t(count), -1);
  auto d = cuda::driver();
  EXPECT_TRUE(d.ok());
  if (!d.ok()) return host;
  EXPECT_EQ((*d)->cuCtxSynchronize(), CUDA_SUCCESS);
  EXPECT_EQ((*d)->cuMemcpyDtoH(host.data(), reinterpret_cast<CUdeviceptr>(device), host.size() * 4), CUDA_SUCCESS);
  return host;
}

void fill(void* device, int64_t bytes, unsigned value) {
  auto d = cuda::driver();
  ASSERT_TRUE(d.ok());
  ASSERT_EQ((*d)->cuMemsetD32(reinterpret_cast<CUdeviceptr>(device), value, std::size_t(bytes) / 4), CUDA_SUCCESS);
  ASSERT_EQ((*d)->cuCtxSynchronize(), CUDA_SUCCESS);
}

TEST_F(StreamWorkspaceGpuTest, KernelsOfOneStreamShareItAndEachFindsItsCountersZero) {
  auto other = cuda::Stream::create();
  ASSERT_TRUE(other.ok()) << other.status().to_string();
  StreamWorkspaces first, second;  // as two prepared kernels hold them
  const GemmArgs here{nullptr, nullptr, nullptr, timer_->stream()};
  const GemmArgs there{nullptr, nullptr, nullptr, other->get()};

  void* partials = nullptr;
  {
    auto a = first.get(here, 4096 + 256, 256, "first");
    ASSERT_TRUE(a.ok()) << a.status().to_string();
    // (Earlier tests' kernels on the timer's stream may have grown its zone already.)
    EXPECT_GE(static_cast<char*>(a->partials) - static_cast<char*>(a->counters), 256);
    EXPECT_EQ(read_ints(a->counters, 64), std::vector<int32_t>(64, 0));
    // What a kernel leaves: its counters zero, its partials anything.
    fill(a->partials, 4096, 0x7f7f7f7fu);
    partials = a->partials;
  }
  {
    // The other kernel on the same stream, with the same needs: the same memory.
    auto b = second.get(here, 4096 + 256, 256, "second");
    ASSERT_TRUE(b.ok()) << b.status().to_string();
    EXPECT_EQ(b->partials, partials);
  }
  {
    // Another stream: memory of its own.
    auto c = second.get(there, 4096 + 256, 256, "second");
    ASSERT_TRUE(c.ok()) << c.status().to_string();
    EXPECT_NE(c->partials, partials);
  }
  {
    // More counters than the zone holds: the workspace grows, and the larger zone is all zero although the old
    // partials were not; the partials start after it.
    auto d = second.get(here, 2048 + 1024, 1024, "second");
    ASSERT_TRUE(d.ok()) << d.status().to_string();
    EXPECT_EQ(read_ints(d->counters, 256), std::vector<int32_t>(256, 0));
    EXPECT_GE(static_cast<char*>(d->partials) - static_cast<char*>(d->counters), 1024);
    fill(d->partials, 4096, 0x3f3f3f3fu);
  }
  {
    // The first kernel again, with its small zone: its partials lie past the larger zone, so the second kernel's
    // counters are still zero after it wrote them.
    auto e = first.get(here, 4096 + 256, 256, "first");
    ASSERT_TRUE(e.ok()) << e.status().to_string();
    fill(e->partials, 4096, 0x1f1f1f1fu);
    auto counters = e->counters;
    e->lock.unlock();
    auto f = second.get(here, 2048 + 1024, 1024, "second");
    ASSERT_TRUE(f.ok()) << f.status().to_string();
    EXPECT_EQ(f->counters, counters);
    EXPECT_EQ(read_ints(f->counters, 256), std::vector<int32_t>(256, 0));
  }
}

TEST_F(StreamWorkspaceGpuTest, SplitKKernelsOfDifferentZonesAlternateExactlyOnOneStream) {
  // Two split-K configs whose counter zones and partials differ, run in turn on one stream (the shared workspace
  // grows between them), each checked against the float64 reference every time.
  auto props = cuda::query_device(device_.ordinal);
  ASSERT_TRUE(props.ok()) << props.status().to_string();
  if (cuda::nvrtc_arch(props->cc_major, props->cc_minor) != "sm_90a") {
    GTEST_SKIP() << "SKIPPED: the sm90 family needs an sm_90a GPU; this is " << props->name;
  }
  using cuda::testing_sm90::sm90_config;
  const Problem small = testing::make_problem(264, 520, 8200, Layout::RR, DType::f16, DType::f16).normalized();
  const Problem large = testing::make_problem(1032, 1544, 2056, Layout::RR, DType::f16, DType::f16).normalized();
  const Config split = sm90_config(64, 64, 8, 1, 1, 1, 8, 1, 1, 1, 16, 0);
  const Config stream_k = sm90_config(128, 256, 3, 2, 1, 1, 8, 1, 1, 1, 1, 1);
  uint64_t seed = 70;
  for (int round = 0; round < 2; ++round) {
    EXPECT_EQ(run(small, &split, 0, ++seed), "sm90") << "round " << round;
    EXPECT_EQ(run(large, &stream_k, 0, ++seed), "sm90") << "round " << round;
  }
}

}  // namespace
}  // namespace tileforge

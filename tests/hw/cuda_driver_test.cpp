// The run-time-loaded CUDA driver: clear refusals without a GPU, error texts, and (on a GPU) memory and pointers.
#include <gtest/gtest.h>

#include <filesystem>
#include <vector>

#include "hw/cuda_driver.hpp"

namespace tileforge::cuda {
namespace {

#define TF_REQUIRE_GPU()                                                                   \
  do {                                                                                     \
    auto tf_d_ = ::tileforge::cuda::driver();                                              \
    if (!tf_d_) GTEST_SKIP() << "SKIPPED: no CUDA device (" << tf_d_.status().message() << ")"; \
    if (::tileforge::cuda::device_count() == 0) GTEST_SKIP() << "SKIPPED: no CUDA device";  \
  } while (0)

TEST(CudaDriver, StartsWithOrWithoutADriver) {
  auto d = driver();
  if (d.ok()) {
    EXPECT_GE((*d)->driver_version, 12000);
    EXPECT_NE((*d)->cuMemAlloc, nullptr);
    EXPECT_NE((*d)->cuLaunchKernelEx, nullptr);
    std::printf("[ info ] CUDA driver %d, %d device(s)\n", (*d)->driver_version, device_count());
  } else {
    // The message says what is missing, in words a user can act on.
    EXPECT_EQ(d.status().code(), Code::not_available);
    const std::string& m = d.status().message();
    EXPECT_TRUE(m.find("no CUDA driver") != std::string::npos || m.find("cuInit failed") != std::string::npos ||
                m.find("cuGetProcAddress") != std::string::npos)
        << m;
    EXPECT_EQ(device_count(), 0);
    std::printf("[ info ] %s\n", m.c_str());
    EXPECT_EQ(activate(0).status().code(), Code::not_available);
    EXPECT_EQ(DeviceBuffer::allocate(16).status().code(), Code::not_available);
    EXPECT_EQ(check_device_pointer(&m, "A").code(), Code::not_available);
  }
}

TEST(CudaDriver, MissingLibraryIsNamed) {
  auto d = load_driver("libcuda-does-not-exist.so.1");
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), Code::not_available);
  EXPECT_NE(d.status().message().find("no CUDA driver: libcuda-does-not-exist.so.1 not found"), std::string::npos)
      << d.status().message();
}

TEST(CudaDriver, ToolkitStubIsRefusedNotUsed) {
  // The toolkit's link stub has the driver's symbols but does nothing: it must read as "no driver", not crash.
  const char* stub = "/usr/local/cuda/lib64/stubs/libcuda.so";
  if (!std::filesystem::exists(stub)) GTEST_SKIP() << "SKIPPED: no toolkit stub at " << stub;
  auto d = load_driver(stub);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), Code::not_available);
  EXPECT_NE(d.status().message().find("CUDA_ERROR_STUB_LIBRARY"), std::string::npos) << d.status().message();
}

TEST(CudaDriver, CheckFormatsTheError) {
  EXPECT_TRUE(check(CUDA_SUCCESS, "cuMemAlloc").ok());
  Status s = check(CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc(1073741824 bytes)");
  EXPECT_EQ(s.code(), Code::launch_failed);
  EXPECT_EQ(s.message().rfind("cuMemAlloc(1073741824 bytes): CUDA_ERROR_OUT_OF_MEMORY", 0), 0u) << s.message();
  if (driver().ok()) {
    EXPECT_EQ(s.message(), "cuMemAlloc(1073741824 bytes): CUDA_ERROR_OUT_OF_MEMORY: out of memory");
  }
  EXPECT_EQ(check(CUDA_ERROR_NO_DEVICE, "cuInit", Code::not_available).code(), Code::not_available);
  EXPECT_EQ(error_name(CUDA_ERROR_NO_DEVICE), "CUDA_ERROR_NO_DEVICE");
  EXPECT_EQ(error_name(CUresult(123456)), driver().ok() ? error_name(CUresult(123456)) : "CUresult 123456");
}

TEST(CudaDriverGpu, MemoryRoundTripAndPointerKinds) {
  TF_REQUIRE_GPU();
  ASSERT_TRUE(activate(0).ok());
  EXPECT_EQ(activate(device_count()).status().code(), Code::invalid_argument);
  const std::size_t n = 1 << 20;
  auto buf = DeviceBuffer::allocate(n * sizeof(float));
  ASSERT_TRUE(buf.ok()) << buf.status().to_string();
  std::vector<float> host(n), back(n, 0.0f);
  for (std::size_t i = 0; i < n; ++i) host[i] = float(i) * 0.5f - 7.0f;
  ASSERT_TRUE(buf->upload(host.data(), n * sizeof(float)).ok());
  ASSERT_TRUE(buf->download(back.data(), n * sizeof(float)).ok());
  EXPECT_EQ(back, host);
  EXPECT_EQ(buf->upload(host.data(), n * sizeof(float) + 4).code(), Code::invalid_argument);
  ASSERT_TRUE(buf->fill_bytes(0).ok());
  ASSERT_TRUE(buf->download(back.data(), 64).ok());
  EXPECT_EQ(back[0], 0.0f);

  EXPECT_TRUE(check_device_pointer(buf->data(), "A").ok());
  EXPECT_TRUE(check_device_pointer(static_cast<char*>(buf->data()) + 100, "A + 100").ok());
  Status host_ptr = check_device_pointer(host.data(), "B");
  EXPECT_EQ(host_ptr.code(), Code::invalid_argument);
  EXPECT_NE(host_ptr.message().find("B = "), std::string::npos) << host_ptr.message();
  EXPECT_NE(host_ptr.message().find("not device memory"), std::string::npos) << host_ptr.message();
  EXPECT_EQ(check_device_pointer(nullptr, "C").code(), Code::invalid_argument);

  auto huge = DeviceBuffer::allocate(std::size_t(1) << 50);  // 1 PiB
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.status().message().find("cuMemAlloc(1125899906842624 bytes): CUDA_ERROR_OUT_OF_MEMORY"), std::string::npos)
      << huge.status().message();
}

TEST(CudaDriverGpu, StreamsEventsAndPrimaryContext) {
  TF_REQUIRE_GPU();
  auto pc = PrimaryContext::open(0);
  ASSERT_TRUE(pc.ok()) << pc.status().to_string();
  CUcontext current = nullptr;
  (*driver())->cuCtxGetCurrent(&current);
  EXPECT_EQ(current, pc->get());
  auto s = Stream::create();
  ASSERT_TRUE(s.ok());
  auto a = Event::create();
  auto b = Event::create();
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE(a->record(s->get()).ok());
  ASSERT_TRUE(b->record(s->get()).ok());
  ASSERT_TRUE(b->synchronize().ok());
  auto ms = Event::elapsed_ms(*a, *b);
  ASSERT_TRUE(ms.ok()) << ms.status().to_string();
  EXPECT_GE(*ms, 0.0f);
  EXPECT_TRUE(s->synchronize().ok());
}

}  // namespace
}  // namespace tileforge::cuda

// What only the OpenBLAS backend has: its refusal of FP16 with a reason, its build and thread report, idle workers
// after a call, and the vendor interface contract. Its results are checked by the conformance test.
#include <cstdlib>

#include <gtest/gtest.h>

#include "backends/native/native_backends.hpp"
#include "backends/native/vendor_cases.hpp"

namespace tileforge {
namespace {

class OpenBlasBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    backend_ = make_openblas_backend();
    const Support s = backend_->available();
    if (!s.ok) GTEST_SKIP() << "SKIPPED: OpenBLAS not loadable: " << s.reason;
  }
  std::unique_ptr<Backend> backend_;
};

TEST_F(OpenBlasBackendTest, InterfaceContract) { vendor_test::interface_contract(*backend_); }

// OpenBLAS's kernel set, chosen by core at load time, is named (issue 17: the vendor's own choice beside ours).
TEST_F(OpenBlasBackendTest, NamesTheKernelsItRuns) {
  const Problem p = vendor_test::shaped(64, 48, 32, Layout::RR, DType::f32, DType::f32);
  auto kernel = backend_->prepare(p, Config{"openblas", {}}, vendor_test::cpu_device());
  ASSERT_TRUE(kernel) << kernel.status().to_string();
  EXPECT_TRUE((*kernel)->implementation().starts_with("OpenBLAS sgemm, ")) << (*kernel)->implementation();
}

TEST_F(OpenBlasBackendTest, HalfPrecisionIsRefusedWithAReason) {
  const Device dev = vendor_test::cpu_device();
  const Problem f16 = vendor_test::shaped(8, 8, 8, Layout::RR, DType::f16, DType::f16);
  const Support s = backend_->supports(f16, dev);
  EXPECT_FALSE(s.ok);
  EXPECT_NE(s.reason.find("FP16"), std::string::npos) << s.reason;
  EXPECT_EQ(backend_->prepare(f16, Config{"openblas", {}}, dev).status().code(), Code::unsupported);
}

TEST_F(OpenBlasBackendTest, ReportsItsBuildAndThreadSettings) {
  const VendorLibraryInfo info = openblas_info();
  EXPECT_TRUE(info.loaded);
  EXPECT_NE(info.version.find("OpenBLAS"), std::string::npos) << info.version;
  EXPECT_NE(info.threads.find("OPENBLAS_THREAD_TIMEOUT"), std::string::npos) << info.threads;
  // Set before the library loaded, so that its idle workers sleep instead of spinning.
  EXPECT_NE(std::getenv("OPENBLAS_THREAD_TIMEOUT"), nullptr);
}

TEST_F(OpenBlasBackendTest, IdleThreadsSleepAfterACall) {
  if (openblas_info().threads.find("set by the user") != std::string::npos) {
    GTEST_SKIP() << "SKIPPED: OPENBLAS_THREAD_TIMEOUT was set by the user";
  }
  vendor_test::idle_after_call(*backend_);
}

}  // namespace
}  // namespace tileforge

// The OpenBLAS backend against the float64 reference: shapes, layouts, leading dimensions, alpha/beta, batches.
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

TEST_F(OpenBlasBackendTest, ShapesAndLayouts) { vendor_test::shapes_and_layouts(*backend_, DType::f32, DType::f32); }
TEST_F(OpenBlasBackendTest, PaddedLeadingDimensions) {
  vendor_test::padded_leading_dimensions(*backend_, DType::f32, DType::f32);
}
TEST_F(OpenBlasBackendTest, Batched) { vendor_test::batched(*backend_, DType::f32, DType::f32); }
TEST_F(OpenBlasBackendTest, DegenerateSizes) { vendor_test::degenerate_sizes(*backend_, DType::f32, DType::f32); }
TEST_F(OpenBlasBackendTest, AlphaZeroReadsNeitherAnorB) { vendor_test::alpha_zero(*backend_, DType::f32, DType::f32); }
TEST_F(OpenBlasBackendTest, InterfaceContract) { vendor_test::interface_contract(*backend_); }

TEST_F(OpenBlasBackendTest, OneThreadAndLarger) {
  vendor_test::expect_correct(*backend_, vendor_test::shaped(300, 280, 513, Layout::CR), 7, 1);
  vendor_test::expect_correct(*backend_, vendor_test::shaped(300, 280, 513, Layout::RC), 8, 0);
}

TEST_F(OpenBlasBackendTest, HalfPrecisionIsRefusedWithAReason) {
  const Device dev = vendor_test::cpu_device();
  const Problem f16 = vendor_test::shaped(8, 8, 8, Layout::RR, DType::f16, DType::f16);
  const Support s = backend_->supports(f16, dev);
  EXPECT_FALSE(s.ok);
  EXPECT_NE(s.reason.find("FP16"), std::string::npos) << s.reason;
  EXPECT_EQ(backend_->prepare(f16, Config{"openblas", {}}, dev).status().code(), Code::unsupported);
}

TEST_F(OpenBlasBackendTest, Bf16WhereTheBuildHasSbgemm) {
  const Problem p = vendor_test::shaped(37, 53, 61, Layout::RC, DType::bf16, DType::f32);
  const Support s = backend_->supports(p, vendor_test::cpu_device());
  if (!s.ok) GTEST_SKIP() << "SKIPPED: " << s.reason;
  vendor_test::shapes_and_layouts(*backend_, DType::bf16, DType::f32);
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

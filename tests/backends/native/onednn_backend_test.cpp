// The oneDNN backend against the float64 reference: f32 and, where the CPU has a path, bf16 and f16.
#ifdef TILEFORGE_HAVE_ONEDNN

#include <cstdlib>

#include <gtest/gtest.h>

#include "backends/native/native_backends.hpp"
#include "backends/native/vendor_cases.hpp"

namespace tileforge {
namespace {

class OneDnnBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    backend_ = make_onednn_backend();
    const Support s = backend_->available();
    if (!s.ok) GTEST_SKIP() << "SKIPPED: oneDNN not loadable: " << s.reason;
  }
  // Skips visibly when this CPU has no oneDNN path for the precision (oneDNN 2.x: BF16 and FP16 need AVX-512).
  bool has_path(DType in, DType out) {
    const Problem p = vendor_test::shaped(16, 16, 16, Layout::RR, in, out);
    const Support s = backend_->supports(p, vendor_test::cpu_device());
    if (!s.ok) reason_ = s.reason;
    return s.ok;
  }
  std::unique_ptr<Backend> backend_;
  std::string reason_;
};

TEST_F(OneDnnBackendTest, ShapesAndLayouts) { vendor_test::shapes_and_layouts(*backend_, DType::f32, DType::f32); }
TEST_F(OneDnnBackendTest, PaddedLeadingDimensions) {
  vendor_test::padded_leading_dimensions(*backend_, DType::f32, DType::f32);
}
TEST_F(OneDnnBackendTest, Batched) { vendor_test::batched(*backend_, DType::f32, DType::f32); }
TEST_F(OneDnnBackendTest, DegenerateSizes) { vendor_test::degenerate_sizes(*backend_, DType::f32, DType::f32); }
TEST_F(OneDnnBackendTest, AlphaZeroReadsNeitherAnorB) { vendor_test::alpha_zero(*backend_, DType::f32, DType::f32); }
// No products to compute: C = beta * C in each output type, on every CPU (oneDNN is not called).
TEST_F(OneDnnBackendTest, NoProductsInHalfOutputTypes) {
  vendor_test::degenerate_sizes(*backend_, DType::bf16, DType::bf16);
  vendor_test::degenerate_sizes(*backend_, DType::f16, DType::f16);
  vendor_test::alpha_zero(*backend_, DType::bf16, DType::bf16);
  vendor_test::alpha_zero(*backend_, DType::f16, DType::f16);
}
TEST_F(OneDnnBackendTest, InterfaceContract) { vendor_test::interface_contract(*backend_); }

TEST_F(OneDnnBackendTest, OneThreadAndLarger) {
  vendor_test::expect_correct(*backend_, vendor_test::shaped(300, 280, 513, Layout::CR), 7, 1);
  vendor_test::expect_correct(*backend_, vendor_test::shaped(300, 280, 513, Layout::RC), 8, 0);
}

TEST_F(OneDnnBackendTest, Bf16InF32Out) {
  if (!has_path(DType::bf16, DType::f32)) GTEST_SKIP() << "SKIPPED: " << reason_;
  vendor_test::shapes_and_layouts(*backend_, DType::bf16, DType::f32);
  vendor_test::padded_leading_dimensions(*backend_, DType::bf16, DType::f32);
  vendor_test::batched(*backend_, DType::bf16, DType::f32);
}

TEST_F(OneDnnBackendTest, Bf16InBf16Out) {
  if (!has_path(DType::bf16, DType::bf16)) GTEST_SKIP() << "SKIPPED: " << reason_;
  vendor_test::shapes_and_layouts(*backend_, DType::bf16, DType::bf16);
  vendor_test::batched(*backend_, DType::bf16, DType::bf16);
  vendor_test::degenerate_sizes(*backend_, DType::bf16, DType::bf16);
}

TEST_F(OneDnnBackendTest, F16) {
  if (!has_path(DType::f16, DType::f16)) GTEST_SKIP() << "SKIPPED: " << reason_;
  vendor_test::shapes_and_layouts(*backend_, DType::f16, DType::f16);
  vendor_test::batched(*backend_, DType::f16, DType::f32);
}

TEST_F(OneDnnBackendTest, MissingPathIsRefusedWithOneDnnsReason) {
  if (has_path(DType::bf16, DType::f32)) GTEST_SKIP() << "SKIPPED: this CPU has a oneDNN BF16 path";
  EXPECT_NE(reason_.find("unimplemented"), std::string::npos) << reason_;
  const Problem p = vendor_test::shaped(16, 16, 16, Layout::RR, DType::bf16, DType::f32);
  EXPECT_EQ(backend_->prepare(p, Config{"onednn", {}}, vendor_test::cpu_device()).status().code(),
            Code::unsupported);
}

TEST_F(OneDnnBackendTest, ReportsItsBuildAndThreadSettings) {
  const VendorLibraryInfo info = onednn_info();
  EXPECT_TRUE(info.loaded);
  EXPECT_NE(info.version.find("oneDNN"), std::string::npos) << info.version;
  EXPECT_NE(info.threads.find("OMP_WAIT_POLICY"), std::string::npos) << info.threads;
  EXPECT_NE(std::getenv("OMP_WAIT_POLICY"), nullptr);
}

TEST_F(OneDnnBackendTest, IdleThreadsSleepAfterACall) {
  if (onednn_info().threads.find("set by the user") != std::string::npos) {
    GTEST_SKIP() << "SKIPPED: OMP_WAIT_POLICY was set by the user";
  }
  vendor_test::idle_after_call(*backend_);
}

}  // namespace
}  // namespace tileforge

#endif  // TILEFORGE_HAVE_ONEDNN

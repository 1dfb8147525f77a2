// What only the oneDNN backend has: no-product problems served in every type without a oneDNN path, a missing path
// refused with oneDNN's reason, its build and thread report, idle threads, and the vendor interface contract. Its
// results (f32, and bf16 and f16 where the CPU has a path) are checked by the conformance test.
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

// No products to compute (K = 0, alpha = 0, M or N = 0): the backend scales C itself and never calls oneDNN, so it
// serves these in every input and output type, on every CPU. The results are the conformance test's.
TEST_F(OneDnnBackendTest, NoProductsAreServedInEveryType) {
  for (DType in : {DType::f32, DType::bf16, DType::f16}) {
    for (DType out : {in, DType::f32}) {
      Problem k0 = vendor_test::shaped(7, 9, 0, Layout::RR, in, out);
      Problem alpha0 = vendor_test::shaped(13, 11, 9, Layout::CR, in, out);
      alpha0.alpha = 0;
      alpha0.beta = -2.0;
      Problem m0 = vendor_test::shaped(0, 5, 4, Layout::RC, in, out);
      for (const Problem& p : {k0, alpha0, m0}) {
        const Support s = backend_->supports(p, vendor_test::cpu_device());
        EXPECT_TRUE(s.ok) << p.describe() << ": " << s.reason;
      }
    }
  }
}

TEST_F(OneDnnBackendTest, InterfaceContract) { vendor_test::interface_contract(*backend_); }

// The implementation oneDNN chose is named (issue 17: the vendor's own choice beside ours).
TEST_F(OneDnnBackendTest, NamesTheImplementationItChose) {
  const Problem p = vendor_test::shaped(64, 48, 32, Layout::RR, DType::f32, DType::f32);
  auto kernel = backend_->prepare(p, Config{"onednn", {}}, vendor_test::cpu_device());
  ASSERT_TRUE(kernel) << kernel.status().to_string();
  const std::string impl = (*kernel)->implementation();
  EXPECT_TRUE(impl.starts_with("oneDNN matmul ")) << impl;
  EXPECT_GT(impl.size(), std::string("oneDNN matmul ").size()) << impl;
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

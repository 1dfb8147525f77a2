// Shared pieces of the JIT tests: scratch directories, small kernels with an embedded header, visible skips.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <string>

#include "jit/nvrtc.hpp"

namespace tileforge::jit::testing {

// A fresh directory under the system temporary directory, removed with everything in it at the end.
class TempDir {
 public:
  TempDir() {
    static std::atomic<int> n{0};
    path_ = std::filesystem::temp_directory_path() /
            ("tileforge-jit-test-" + std::to_string(::getpid()) + "-" + std::to_string(n++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string str() const { return path_.string(); }
  std::filesystem::path path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// An embedded header and a source that needs both it and the toolkit's cuda_fp16.h.
inline Header scale_header(const std::string& factor = "3.0f") {
  return {"tf_test/scale.cuh", "#pragma once\n#define TF_TEST_SCALE " + factor +
                                   "\ntemplate <int kMul> __device__ inline float tf_scale(float x) { return x * kMul * TF_TEST_SCALE; }\n"};
}

inline const char* scale_source() {
  return R"(#include <cuda_fp16.h>
#include "tf_test/scale.cuh"
template <int kMul>
__global__ void scale_kernel(const __half* in, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = tf_scale<kMul>(__half2float(in[i]));
}
extern "C" __global__ void add_one(float* data, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] += 1.0f;
}
)";
}

inline CompileRequest scale_request(const std::string& arch = "sm_90a") {
  CompileRequest r;
  r.name = "test_scale";
  r.source = scale_source();
  r.headers = {scale_header()};
  r.arch = arch;
  r.name_expressions = {"scale_kernel<2>"};
  return r;
}

inline std::string status_text(const Status& s) { return s.to_string(); }
template <class T>
std::string status_text(const Expected<T>& e) { return e.ok() ? "ok" : e.status().to_string(); }

}  // namespace tileforge::jit::testing

// Asserts that a Status or Expected is ok, printing its message otherwise.
#define TF_ASSERT_OK(expr)                                                                        \
  do {                                                                                            \
    const auto& tf_r_ = (expr);                                                                   \
    ASSERT_TRUE(tf_r_.ok()) << #expr << ": " << ::tileforge::jit::testing::status_text(tf_r_);    \
  } while (0)

// NVRTC comes with the CUDA toolkit the build found; a machine without it skips, saying so.
#define TF_REQUIRE_NVRTC()                                                        \
  do {                                                                            \
    auto tf_nvrtc_ = ::tileforge::jit::Nvrtc::get();                              \
    if (!tf_nvrtc_) GTEST_SKIP() << "SKIPPED: no NVRTC: " << tf_nvrtc_.status().message(); \
  } while (0)

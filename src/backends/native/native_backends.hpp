// CPU vendor libraries as backends (OpenBLAS, oneDNN), opened at run time, and what they report for benchmarks.
#pragma once

#include <memory>
#include <string>

#include "backends/backend.hpp"

namespace tileforge {

// What a bench environment records about one vendor library: which build ran, and how its threads behave
// between calls (DESIGN.md: neither library may leave threads spinning while the other runs).
struct VendorLibraryInfo {
  std::string name;         // "openblas", "onednn"
  bool loaded = false;      // the library was opened and every needed symbol resolved
  std::string why_not;      // when not loaded: the loader's message
  std::string library;      // the file that was opened ("libopenblas.so.0")
  std::string version;      // "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Zen MAX_THREADS=64", "oneDNN 2.6.3 (...)"
  std::string threads;      // thread settings: count, wait policy and who set them
};

// OpenBLAS (libopenblas.so.0): FP32 GEMM through cblas_sgemm; BF16 inputs through cblas_sbgemm when the build
// exports it. Loading it sets OPENBLAS_THREAD_TIMEOUT=4 first unless the user set it.
std::unique_ptr<Backend> make_openblas_backend();
VendorLibraryInfo openblas_info();  // loads the library if that has not happened yet

#ifdef TILEFORGE_HAVE_ONEDNN
// oneDNN (libdnnl.so.2) matmul primitive: f32, bf16 and (where the CPU has a path) f16 inputs. Loading it sets
// OMP_WAIT_POLICY=PASSIVE first unless the user set it.
std::unique_ptr<Backend> make_onednn_backend();
VendorLibraryInfo onednn_info();  // loads the library if that has not happened yet
#endif

#ifdef TILEFORGE_HAVE_CUDA_TOOLKIT
// cuBLAS (libcublas.so.13): cublasGemmStridedBatchedEx with its default heuristic, the native GEMM on NVIDIA GPUs.
std::unique_ptr<Backend> make_cublas_backend();
// cuBLASLt (libcublasLt.so.13): the fastest of its top 8 heuristic algorithms, timed on the first call's operands.
std::unique_ptr<Backend> make_cublaslt_backend();
// "libcublas.so.13 / libcublasLt.so.13", or why they could not be opened.
std::string cublas_library_description();
#endif

}  // namespace tileforge

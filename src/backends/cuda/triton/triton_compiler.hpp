// The triton family's compiler: Triton's own, run ahead of time in a Python subprocess (kernels/triton/compile.py)
// only when a kernel is not in tileforge's kernel cache; the binary and what the compiler reported about it are
// cached beside the NVRTC kernels, so nothing on the hot path needs Python.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/expected.hpp"

namespace tileforge::cuda::triton {

// The Python interpreter and the Triton it imports ($TILEFORGE_PYTHON, else python3 on PATH), asked once per
// process: unavailable with the reason when either is missing or Triton is older than the API compile.py uses.
struct Toolchain {
  std::string python;
  std::string version;                // "3.6.0"
  std::vector<std::string> backends;  // "amd", "nvidia"
  bool has(const std::string& backend) const;
};
Expected<Toolchain> toolchain();

// One compile: the kernel function of gemm.py, its arguments in order with Triton's type names ("*fp16", "i32",
// "fp32", or "constexpr"), the constexpr values, the arguments known to be multiples of a number (16 or 8; for a
// pointer: its address in bytes), the target ("cuda" with "90", "hip" with "gfx942") and the launch options.
struct Request {
  std::string function = "tileforge_gemm";
  std::vector<std::pair<std::string, std::string>> signature;
  std::vector<std::pair<std::string, int64_t>> constexprs;
  std::vector<std::pair<std::string, int>> divisible;
  std::string backend = "cuda";
  std::string arch = "90";
  int warp_size = 32;
  int num_warps = 4;
  int num_stages = 3;
};

// What the compiler made and said.
struct Binary {
  std::string key;         // 32 hex digits (XXH3-128)
  std::string name;        // the kernel's symbol
  std::string kind;        // "cubin" or "hsaco"
  std::string data;
  int shared_bytes = 0;    // dynamic shared memory the launch must give
  int static_shared_bytes = 0;  // the cubin's own (barriers), beside it
  int num_warps = 0;
  int registers = -1;      // per thread (VGPRs on AMD); -1 when the compiler's report had none
  int spill_bytes = 0;     // local memory per thread (spills and stack)
  int global_scratch_bytes = 0;
  int profile_scratch_bytes = 0;
  bool wgmma = false;      // the PTX holds warpgroup MMAs (Hopper)
  std::string triton_version;
  double compile_seconds = 0;  // the first compile's, as recorded
  bool cache_hit = false;
};

// The binary from `cache_dir` (its triton/ folder; "" = the shared kernel cache's), else compiled now and stored.
// A compile that fails gives compile_failed with the compiler's last lines.
Expected<Binary> compile(const Request& request, const std::string& cache_dir = "");

// The request as compile.py reads it (out: the path prefix of its outputs).
std::string request_json(const Request& request, const std::string& out);
// The cache key: Triton's version, both Python files and the request.
std::string cache_key(const Request& request, const std::string& triton_version);

}  // namespace tileforge::cuda::triton

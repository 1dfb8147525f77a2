// NVRTC opened at run time: compiles CUDA C++ with embedded headers to a cubin for one exact target.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/expected.hpp"
#include "jit/ptxas_report.hpp"

namespace tileforge::jit {

// A header the generated source can #include by `name` ("sm80/gemm.cuh"), passed to NVRTC as text, so that
// the installed tool needs no source tree.
struct Header {
  std::string name;
  std::string content;
};

// One compile. Everything here (and the compiler's identity) goes into the kernel cache's key.
struct CompileRequest {
  std::string name;                           // for people: dump and log file names ("sm80_gemm_128x128x32")
  std::string source;                         // the generated translation unit
  std::vector<Header> headers;                // resolvable with #include "name"
  std::string arch;                           // exact target: "sm_90a", "sm_80"
  std::vector<std::string> options;           // extra NVRTC options, after the defaults ("-DFOO=1", "-maxrregcount=128")
  // C++ names of __global__ template instantiations to look up after compiling
  // ("tileforge::sm80::gemm<128, 128, 32, 4>"); plain extern "C" kernels need none.
  std::vector<std::string> name_expressions;
  bool line_info = false;                     // -lineinfo (for profilers)
  bool fast_math = false;                     // --use_fast_math (off: GEMM numerics must not depend on it)
};

// What one NVRTC run produced. `ok` false means the source did not compile; `log` says why.
struct CompileOutput {
  bool ok = false;
  std::string cubin;
  std::string ptx;
  std::string log;
  std::map<std::string, std::string> lowered_names;  // name expression -> mangled symbol
  PtxasReport report;
  double seconds = 0;
};

// The loaded NVRTC library and what it can target.
class Nvrtc {
 public:
  // The process-wide instance, loaded on first use: TILEFORGE_NVRTC_PATH, else libnvrtc.so.13, then
  // libnvrtc.so.12, each by the loader's search path and then under CUDA_HOME, CUDA_PATH and /usr/local/cuda.
  static Expected<const Nvrtc*> get();

  int major() const { return major_; }
  int minor() const { return minor_; }
  const std::string& library_path() const { return library_path_; }
  // Directory holding cuda_fp16.h / cuda_bf16.h (NVRTC 13 has no built-in copy of them); "" when not found.
  const std::string& include_dir() const { return include_dir_; }
  // Version and build identity of the loaded library ("nvrtc 13.0 libnvrtc.so.13 4194304 bytes"): part of every
  // cache key, so that a toolkit update never reuses another compiler's cubins.
  const std::string& identity() const { return identity_; }
  const std::vector<int>& supported_archs() const { return archs_; }  // 75, 80, ..., 90, 100, 120

  // The complete option list for a request, in the order NVRTC gets it.
  std::vector<std::string> options_for(const CompileRequest& request) const;
  // Refuses a target this NVRTC cannot compile for ("sm_61": supported sm_75 ... sm_121).
  Status check_arch(std::string_view arch) const;
  // Compiles; an Expected failure means NVRTC itself could not run (bad target, out of memory), while a
  // source that does not compile returns ok = false with the log.
  Expected<CompileOutput> compile(const CompileRequest& request) const;

  struct Api;  // the entry points (defined in nvrtc.cpp)

 private:
  Nvrtc() = default;
  const Api* api_ = nullptr;
  int major_ = 0, minor_ = 0;
  std::string library_path_;
  std::string include_dir_;
  std::string identity_;
  std::vector<int> archs_;
};

// How many NVRTC compiles this process has run (tests check that a cache hit runs none).
uint64_t nvrtc_compile_count();

// Headers from (file name, contents) pairs, as the embedded-file tables give them, each named prefix + name.
std::vector<Header> headers_from(const std::vector<std::pair<std::string_view, std::string_view>>& files,
                                 std::string_view prefix = {});

}  // namespace tileforge::jit

// OpenBLAS as a backend: cblas_sgemm (and cblas_sbgemm where exported) from libopenblas.so.0 opened at run time.
#include <dlfcn.h>

#include <cstdint>
#include <mutex>

#include <fmt/format.h>

#include "backends/native/native_backends.hpp"
#include "backends/native/native_common.hpp"

namespace tileforge {
namespace {

using native_detail::resolve_threads;
using native_detail::same_problem;

// CBLAS enumerations (cblas.h values); C enums are passed as int.
constexpr int kRowMajor = 101, kNoTrans = 111, kTrans = 112;

using SgemmFn = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int, float, float*,
                         int);
using SbgemmFn = void (*)(int, int, int, int, int, int, float, const uint16_t*, int, const uint16_t*, int, float,
                          float*, int);
using SetThreadsFn = void (*)(int);
using GetThreadsFn = int (*)();
using GetConfigFn = char* (*)();

struct OpenBlasApi {
  void* handle = nullptr;
  std::string error;
  std::string library;
  std::string timeout_note;
  SgemmFn sgemm = nullptr;
  SbgemmFn sbgemm = nullptr;  // only in builds with BUILD_BFLOAT16 (Debian's 0.3.21 has none)
  SetThreadsFn set_threads = nullptr;
  GetThreadsFn get_threads = nullptr;
  GetConfigFn get_config = nullptr;
  GetConfigFn get_corename = nullptr;
  std::mutex call_mutex;  // the thread count is process-wide state: set it and call under one lock
};

OpenBlasApi* load_openblas() {
  auto* api = new OpenBlasApi();  // NOTE: never freed; the library stays loaded for the process's lifetime
  // OpenBLAS reads its environment once, when it is loaded. Its idle workers otherwise busy-wait about 2^28
  // cycles after each call and would steal the cores from whatever kernel is measured next; with a timeout of
  // 2^4 cycles they go to sleep at once (a wake-up costs microseconds, noise for a GEMM worth measuring).
  const bool already = native_detail::already_loaded("libopenblas.so.0");
  api->timeout_note = native_detail::default_env("OPENBLAS_THREAD_TIMEOUT", "4");
  if (already) api->timeout_note += " (but OpenBLAS was loaded before tileforge set it: it may not apply)";
  native_detail::OpenedLibrary lib = native_detail::open_first({"libopenblas.so.0", "libopenblas.so"});
  if (!lib.handle) {
    api->error = fmt::format("OpenBLAS not loadable ({})", lib.error);
    return api;
  }
  api->handle = lib.handle;
  api->library = lib.name;
  auto sym = [&](const char* name) { return dlsym(api->handle, name); };
  api->sgemm = reinterpret_cast<SgemmFn>(sym("cblas_sgemm"));
  api->sbgemm = reinterpret_cast<SbgemmFn>(sym("cblas_sbgemm"));
  api->set_threads = reinterpret_cast<SetThreadsFn>(sym("openblas_set_num_threads"));
  api->get_threads = reinterpret_cast<GetThreadsFn>(sym("openblas_get_num_threads"));
  api->get_config = reinterpret_cast<GetConfigFn>(sym("openblas_get_config"));
  api->get_corename = reinterpret_cast<GetConfigFn>(sym("openblas_get_corename"));
  std::string missing;
  if (!api->sgemm) missing += " cblas_sgemm";
  if (!api->set_threads) missing += " openblas_set_num_threads";
  if (!api->get_threads) missing += " openblas_get_num_threads";
  if (!api->get_config) missing += " openblas_get_config";
  if (!missing.empty()) {
    api->error = fmt::format("{} lacks{} (not OpenBLAS?)", api->library, missing);
    api->sgemm = nullptr;
  }
  return api;
}

OpenBlasApi& api() {
  static OpenBlasApi* const loaded = load_openblas();
  return *loaded;
}

bool ready() { return api().sgemm != nullptr; }

class OpenBlasKernel final : public Kernel {
 public:
  OpenBlasKernel(Config config, Problem problem, int threads)
      : Kernel(std::move(config)), problem_(problem.normalized()), threads_(threads) {}
  const Problem& problem() const { return problem_; }
  int threads() const { return threads_; }
  std::string implementation() const override;

 private:
  Problem problem_;
  int threads_;
};

std::string OpenBlasKernel::implementation() const {
  // OpenBLAS picks its kernels by CPU core at load time (DYNAMIC_ARCH): the core name says which set runs.
  const char* core = api().get_corename ? api().get_corename() : nullptr;
  return fmt::format("OpenBLAS {}gemm, {} kernels", problem_.precision.input == DType::f32 ? "s" : "sb",
                     core ? core : "unknown core");
}

class OpenBlasBackend final : public Backend {
 public:
  std::string_view name() const override { return "openblas"; }
  bool native() const override { return true; }
  std::string_view device_kind() const override { return "cpu"; }

  Support available() const override {
    if (!ready()) return Support::no(api().error);
    return Support::yes();
  }

  Support supports(const Problem& problem, const Device& device) const override {
    if (Support s = available(); !s) return s;
    if (device.kind != "cpu") return Support::no(fmt::format("OpenBLAS runs on the CPU, not on {}", device.kind));
    if (Status s = problem.validate(); !s) return Support::no(s.to_string());
    const Precision& pr = problem.precision;
    if (pr.accum != DType::f32) return Support::no("OpenBLAS accumulates in FP32 only (no FP16-accumulation GEMM)");
    if (pr.input == DType::f16) return Support::no("OpenBLAS has no FP16 GEMM call");
    if (pr.input == DType::bf16) {
      if (!api().sbgemm) return Support::no("OpenBLAS has no BF16 GEMM call in this build (cblas_sbgemm absent)");
      if (pr.output != DType::f32) return Support::no("OpenBLAS cblas_sbgemm writes f32 only (no bf16 output)");
    }
    if (!native_detail::fits_int32(problem)) {
      return Support::no("a size or leading dimension exceeds the 32-bit integers of OpenBLAS's LP64 interface");
    }
    return Support::yes();
  }

  ParamSpace space(const Problem&, const Device&) const override { return ParamSpace{std::string(name()), {}, {}}; }

  Expected<Config> heuristic(const Problem&, const Device&) const override { return Config{std::string(name()), {}}; }

  Expected<std::unique_ptr<Kernel>> prepare(const Problem& problem, const Config& config,
                                            const Device& device) override {
    if (Status s = problem.validate(); !s) return s;
    if (Support s = supports(problem, device); !s) {
      return ready() ? unsupported(s.reason) : not_available(s.reason);
    }
    if (config.family != name()) {
      return invalid_argument(fmt::format("config family '{}' is not 'openblas'", config.family));
    }
    if (!config.params.empty()) {
      return invalid_argument(fmt::format("openblas takes no parameters (got {})", config.describe()));
    }
    return std::unique_ptr<Kernel>(new OpenBlasKernel(config, problem, resolve_threads(device.threads)));
  }

  Status run(const Kernel& kernel, const Problem& problem, const GemmArgs& args) override {
    const auto* k = dynamic_cast<const OpenBlasKernel*>(&kernel);
    if (!k) return invalid_argument("the kernel was not prepared by the openblas backend");
    if (!same_problem(k->problem(), problem)) {
      return invalid_argument(fmt::format("problem {} differs from the one the kernel was prepared for ({})",
                                          problem.describe(), k->problem().describe()));
    }
    const Problem& p = k->problem();
    if (p.m == 0 || p.n == 0) return Status::Ok();
    if (!args.c) return invalid_argument("C is a null pointer");
    if (p.k > 0 && (!args.a || !args.b)) return invalid_argument("A or B is a null pointer");
    if (!native_detail::has_products(p)) {
      native_detail::scale_c_by_beta(p, args.c);
      return Status::Ok();
    }
    OpenBlasApi& lib = api();
    std::lock_guard<std::mutex> lock(lib.call_mutex);
    if (lib.get_threads() != k->threads()) lib.set_threads(k->threads());
    const int ta = a_row_major(p.layout) ? kNoTrans : kTrans;  // column-major M x K is row-major K x M
    const int tb = b_row_major(p.layout) ? kNoTrans : kTrans;
    const float alpha = float(p.alpha), beta = float(p.beta);
    const std::size_t in = size_of(p.precision.input);
    for (int64_t b = 0; b < p.batch; ++b) {
      const auto* a = static_cast<const unsigned char*>(args.a) + std::size_t(b * p.stride_a) * in;
      const auto* bb = static_cast<const unsigned char*>(args.b) + std::size_t(b * p.stride_b) * in;
      float* c = static_cast<float*>(args.c) + b * p.stride_c;
      if (p.precision.input == DType::bf16) {
        lib.sbgemm(kRowMajor, ta, tb, int(p.m), int(p.n), int(p.k), alpha, reinterpret_cast<const uint16_t*>(a),
                   int(p.lda), reinterpret_cast<const uint16_t*>(bb), int(p.ldb), beta, c, int(p.ldc));
      } else {
        lib.sgemm(kRowMajor, ta, tb, int(p.m), int(p.n), int(p.k), alpha, reinterpret_cast<const float*>(a),
                  int(p.lda), reinterpret_cast<const float*>(bb), int(p.ldb), beta, c, int(p.ldc));
      }
    }
    return Status::Ok();
  }
};

}  // namespace

std::unique_ptr<Backend> make_openblas_backend() { return std::make_unique<OpenBlasBackend>(); }

VendorLibraryInfo openblas_info() {
  VendorLibraryInfo info;
  info.name = "openblas";
  OpenBlasApi& lib = api();
  info.loaded = ready();
  info.library = lib.library;
  if (!info.loaded) {
    info.why_not = lib.error;
    info.threads = lib.timeout_note;
    return info;
  }
  info.version = lib.get_config ? lib.get_config() : "";
  if (lib.get_corename) info.version += fmt::format(" (core {})", lib.get_corename());
  if (lib.sbgemm) info.version += " with cblas_sbgemm";
  info.threads = fmt::format("{} threads (openblas_get_num_threads; tileforge sets the Device's count per call), {}",
                             lib.get_threads(), lib.timeout_note);
  return info;
}

}  // namespace tileforge

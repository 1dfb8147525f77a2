// oneDNN as a backend: its matmul primitive from libdnnl.so.2 opened at run time (dnnl.h supplies types only).
#include <dlfcn.h>

#include <mutex>

#include <dnnl.h>
#include <fmt/format.h>

#include "backends/native/native_backends.hpp"
#include "backends/native/native_common.hpp"
#include "core/half.hpp"

namespace tileforge {
namespace {

using native_detail::resolve_threads;
using native_detail::same_problem;

// Each entry point's type comes from dnnl.h itself, so a signature mismatch is a compile error, not a crash.
#define TF_DNNL_FUNCTIONS(X)                                                                                     \
  X(dnnl_engine_create)                                                                                          \
  X(dnnl_stream_create)                                                                                          \
  X(dnnl_stream_wait)                                                                                            \
  X(dnnl_memory_desc_init_by_strides)                                                                            \
  X(dnnl_matmul_desc_init)                                                                                       \
  X(dnnl_primitive_attr_create)                                                                                  \
  X(dnnl_primitive_attr_destroy)                                                                                 \
  X(dnnl_primitive_attr_set_output_scales)                                                                       \
  X(dnnl_primitive_attr_set_post_ops)                                                                            \
  X(dnnl_post_ops_create)                                                                                        \
  X(dnnl_post_ops_destroy)                                                                                       \
  X(dnnl_post_ops_append_sum)                                                                                    \
  X(dnnl_primitive_desc_create)                                                                                  \
  X(dnnl_primitive_desc_destroy)                                                                                 \
  X(dnnl_primitive_desc_query)                                                                                   \
  X(dnnl_primitive_create)                                                                                       \
  X(dnnl_primitive_destroy)                                                                                      \
  X(dnnl_primitive_execute)                                                                                      \
  X(dnnl_memory_create)                                                                                          \
  X(dnnl_memory_destroy)                                                                                         \
  X(dnnl_memory_set_data_handle)                                                                                 \
  X(dnnl_version)                                                                                                \
  X(dnnl_get_effective_cpu_isa)

struct DnnlApi {
#define TF_DNNL_MEMBER(fn) decltype(&::fn) fn = nullptr;
  TF_DNNL_FUNCTIONS(TF_DNNL_MEMBER)
#undef TF_DNNL_MEMBER
  void (*omp_set_num_threads)(int) = nullptr;
  int (*omp_get_max_threads)() = nullptr;

  void* handle = nullptr;
  std::string library;
  std::string error;
  std::string wait_note;
  dnnl_engine_t engine = nullptr;
  dnnl_stream_t stream = nullptr;
  // oneDNN primitives may run concurrently, but the OpenMP thread count is per calling thread and the stream
  // is shared: one call at a time keeps the recorded thread setting true.
  std::mutex call_mutex;
};

const char* status_name(dnnl_status_t s) {
  switch (s) {
    case dnnl_success: return "success";
    case dnnl_out_of_memory: return "out of memory";
    case dnnl_invalid_arguments: return "invalid arguments";
    case dnnl_unimplemented: return "unimplemented";
    case dnnl_iterator_ends: return "iterator ends";
    case dnnl_runtime_error: return "runtime error";
    case dnnl_not_required: return "not required";
  }
  return "unknown status";
}

const char* isa_name(dnnl_cpu_isa_t isa) {
  switch (isa) {
    case dnnl_cpu_isa_all: return "all";
    case dnnl_cpu_isa_sse41: return "sse41";
    case dnnl_cpu_isa_avx: return "avx";
    case dnnl_cpu_isa_avx2: return "avx2";
    case dnnl_cpu_isa_avx2_vnni: return "avx2_vnni";
    case dnnl_cpu_isa_avx512_mic: return "avx512_mic";
    case dnnl_cpu_isa_avx512_mic_4ops: return "avx512_mic_4ops";
    case dnnl_cpu_isa_avx512_core: return "avx512_core";
    case dnnl_cpu_isa_avx512_core_vnni: return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core_bf16: return "avx512_core_bf16";
    case dnnl_cpu_isa_avx512_core_amx: return "avx512_core_amx";
  }
  return "unknown";
}

DnnlApi* load_dnnl() {
  auto* api = new DnnlApi();  // NOTE: never freed; engine and stream outlive every kernel
  // oneDNN on Debian runs its threads through GNU OpenMP. Unless told otherwise, libgomp lets idle workers spin
  // for a while after each parallel region (GOMP_SPINCOUNT) before they sleep, taking cores from the kernel
  // measured next; PASSIVE makes them sleep at once. libgomp reads the policy once, when it is loaded, so it is
  // set before libdnnl (and with it libgomp) loads.
  const bool gomp_already = native_detail::already_loaded("libgomp.so.1");
  api->wait_note = native_detail::default_env("OMP_WAIT_POLICY", "PASSIVE");
  if (gomp_already) api->wait_note += " (but libgomp was loaded before tileforge set it: it may not apply)";
  native_detail::OpenedLibrary lib = native_detail::open_first({"libdnnl.so.2", "libdnnl.so"});
  if (!lib.handle) {
    api->error = fmt::format("oneDNN not loadable ({})", lib.error);
    return api;
  }
  api->handle = lib.handle;
  api->library = lib.name;
  std::string missing;
#define TF_DNNL_RESOLVE(fn)                                                  \
  api->fn = reinterpret_cast<decltype(&::fn)>(dlsym(api->handle, #fn));      \
  if (!api->fn) missing += " " #fn;
  TF_DNNL_FUNCTIONS(TF_DNNL_RESOLVE)
#undef TF_DNNL_RESOLVE
  // dlsym on the library's handle also searches its dependencies, which include libgomp when it uses OpenMP.
  api->omp_set_num_threads = reinterpret_cast<void (*)(int)>(dlsym(api->handle, "omp_set_num_threads"));
  api->omp_get_max_threads = reinterpret_cast<int (*)()>(dlsym(api->handle, "omp_get_max_threads"));
  if (!missing.empty()) {
    api->error = fmt::format("{} lacks{} (oneDNN 2.x C API expected)", api->library, missing);
    return api;
  }
  if (dnnl_status_t s = api->dnnl_engine_create(&api->engine, dnnl_cpu, 0); s != dnnl_success) {
    api->error = fmt::format("oneDNN CPU engine: {}", status_name(s));
    return api;
  }
  if (dnnl_status_t s = api->dnnl_stream_create(&api->stream, api->engine, dnnl_stream_default_flags);
      s != dnnl_success) {
    api->error = fmt::format("oneDNN CPU stream: {}", status_name(s));
    api->engine = nullptr;
  }
  return api;
}

DnnlApi& api() {
  static DnnlApi* const loaded = load_dnnl();
  return *loaded;
}

bool ready() { return api().engine != nullptr && api().stream != nullptr; }

void set_threads(int threads) {
  if (api().omp_set_num_threads) api().omp_set_num_threads(threads);
}

dnnl_data_type_t dnnl_type(DType t) {
  switch (t) {
    case DType::f32: return dnnl_f32;
    case DType::f16: return dnnl_f16;
    case DType::bf16: return dnnl_bf16;
  }
  return dnnl_f32;
}

// A batch x rows x cols matrix (2-D when batch is 1) at the given strides; no data is copied or transposed.
dnnl_status_t matrix_desc(dnnl_memory_desc_t* md, int64_t batch, int64_t rows, int64_t cols, bool row_major,
                          int64_t ld, int64_t batch_stride, DType t) {
  dnnl_dims_t dims = {}, strides = {};
  int nd = 0;
  if (batch > 1) {
    dims[nd] = batch;
    strides[nd++] = batch_stride;
  }
  dims[nd] = rows;
  strides[nd++] = row_major ? ld : 1;
  dims[nd] = cols;
  strides[nd++] = row_major ? 1 : ld;
  return api().dnnl_memory_desc_init_by_strides(md, nd, dims, dnnl_type(t), strides);
}

// The objects of one prepared matmul; destroyed with the kernel.
struct Matmul {
  dnnl_primitive_desc_t pd = nullptr;
  dnnl_primitive_t prim = nullptr;
  dnnl_memory_t mem_a = nullptr, mem_b = nullptr, mem_c = nullptr;
  std::string impl;  // oneDNN's implementation name ("gemm:jit", "brg:avx512_core_amx", ...)

  Matmul() = default;
  Matmul(const Matmul&) = delete;
  Matmul& operator=(const Matmul&) = delete;
  ~Matmul() {
    DnnlApi& d = api();
    if (mem_a) d.dnnl_memory_destroy(mem_a);
    if (mem_b) d.dnnl_memory_destroy(mem_b);
    if (mem_c) d.dnnl_memory_destroy(mem_c);
    if (prim) d.dnnl_primitive_destroy(prim);
    if (pd) d.dnnl_primitive_desc_destroy(pd);
  }
};

// Creates the primitive descriptor for a normalized problem with M, N, K > 0, and (when `create` is set) the
// primitive and its memory objects. Alpha becomes the output scale, beta a sum post-op (absent when beta is 0, so
// C is then written without being read).
Status make_matmul(const Problem& p, bool create, Matmul& mm) {
  DnnlApi& d = api();
  dnnl_memory_desc_t md_a, md_b, md_c;
  const DType in = p.precision.input, out = p.precision.output;
  if (dnnl_status_t s = matrix_desc(&md_a, p.batch, p.m, p.k, a_row_major(p.layout), p.lda, p.stride_a, in);
      s != dnnl_success) {
    return unsupported(fmt::format("oneDNN refuses A's memory descriptor: {}", status_name(s)));
  }
  if (dnnl_status_t s = matrix_desc(&md_b, p.batch, p.k, p.n, b_row_major(p.layout), p.ldb, p.stride_b, in);
      s != dnnl_success) {
    return unsupported(fmt::format("oneDNN refuses B's memory descriptor: {}", status_name(s)));
  }
  if (dnnl_status_t s = matrix_desc(&md_c, p.batch, p.m, p.n, true, p.ldc, p.stride_c, out); s != dnnl_success) {
    return unsupported(fmt::format("oneDNN refuses C's memory descriptor: {}", status_name(s)));
  }
  dnnl_matmul_desc_t desc;
  if (dnnl_status_t s = d.dnnl_matmul_desc_init(&desc, &md_a, &md_b, nullptr, &md_c); s != dnnl_success) {
    return unsupported(fmt::format("oneDNN matmul descriptor: {}", status_name(s)));
  }
  dnnl_primitive_attr_t attr = nullptr;
  dnnl_post_ops_t post_ops = nullptr;
  d.dnnl_primitive_attr_create(&attr);
  dnnl_status_t s = dnnl_success;
  if (p.alpha != 1.0) {
    const float alpha = float(p.alpha);
    s = d.dnnl_primitive_attr_set_output_scales(attr, 1, 0, &alpha);
  }
  if (s == dnnl_success && p.beta != 0.0) {
    d.dnnl_post_ops_create(&post_ops);
    s = d.dnnl_post_ops_append_sum(post_ops, float(p.beta));
    if (s == dnnl_success) s = d.dnnl_primitive_attr_set_post_ops(attr, post_ops);
  }
  if (s == dnnl_success) s = d.dnnl_primitive_desc_create(&mm.pd, &desc, attr, d.engine, nullptr);
  if (post_ops) d.dnnl_post_ops_destroy(post_ops);
  d.dnnl_primitive_attr_destroy(attr);
  if (s != dnnl_success) {
    mm.pd = nullptr;
    const dnnl_version_t* v = d.dnnl_version();
    return unsupported(fmt::format("oneDNN {}.{}.{} has no matmul for {} on this CPU (ISA {}): creating its primitive "
                                   "descriptor says '{}'",
                                   v->major, v->minor, v->patch, p.describe(), isa_name(d.dnnl_get_effective_cpu_isa()),
                                   status_name(s)));
  }
  const char* impl = nullptr;
  if (d.dnnl_primitive_desc_query(mm.pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success && impl) {
    mm.impl = impl;
  }
  if (!create) return Status::Ok();
  if (dnnl_status_t e = d.dnnl_primitive_create(&mm.prim, mm.pd); e != dnnl_success) {
    mm.prim = nullptr;
    return Status(Code::launch_failed, fmt::format("oneDNN primitive creation: {}", status_name(e)));
  }
  // Memory objects without buffers; run() points them at the caller's operands.
  for (auto [mem, md] : {std::pair{&mm.mem_a, &md_a}, std::pair{&mm.mem_b, &md_b}, std::pair{&mm.mem_c, &md_c}}) {
    if (dnnl_status_t e = d.dnnl_memory_create(mem, md, d.engine, DNNL_MEMORY_NONE); e != dnnl_success) {
      *mem = nullptr;
      return Status(Code::launch_failed, fmt::format("oneDNN memory object: {}", status_name(e)));
    }
  }
  return Status::Ok();
}

Support precision_support(const Problem& p) {
  const Precision& pr = p.precision;
  if (pr.accum != DType::f32) return Support::no("oneDNN 2.x matmul accumulates in FP32 only (no FP16 accumulation)");
  return Support::yes();
}

class OneDnnKernel final : public Kernel {
 public:
  OneDnnKernel(Config config, Problem problem, int threads)
      : Kernel(std::move(config)), problem_(problem.normalized()), threads_(threads) {}
  const Problem& problem() const { return problem_; }
  int threads() const { return threads_; }
  Matmul& matmul() const { return *matmul_; }
  bool has_matmul() const { return matmul_ != nullptr; }
  void set_matmul(std::unique_ptr<Matmul> m) { matmul_ = std::move(m); }
  std::string implementation() const override { return matmul_ ? "oneDNN matmul " + matmul_->impl : std::string(); }

 private:
  Problem problem_;
  int threads_;
  std::unique_ptr<Matmul> matmul_;  // absent when there are no products to compute (see needs_matmul)
};

// Without products (K == 0 or alpha == 0) no matmul is made: C = beta * C is computed without reading A and B (the
// BLAS convention), since oneDNN would skip zero-sized tensors entirely or multiply NaN in A by 0.
bool needs_matmul(const Problem& p) { return native_detail::has_products(p); }

class OneDnnBackend final : public Backend {
 public:
  std::string_view name() const override { return "onednn"; }
  bool native() const override { return true; }
  std::string_view device_kind() const override { return "cpu"; }

  Support available() const override {
    if (!ready()) return Support::no(api().error);
    return Support::yes();
  }

  Support supports(const Problem& problem, const Device& device) const override {
    if (Support s = available(); !s) return s;
    if (device.kind != "cpu") return Support::no(fmt::format("oneDNN runs on the CPU, not on {}", device.kind));
    if (Status s = problem.validate(); !s) return Support::no(s.to_string());
    if (Support s = precision_support(problem); !s) return s;
    const Problem p = problem.normalized();
    if (!needs_matmul(p)) return Support::yes();
    // Whether oneDNN has an implementation depends on the CPU's ISA (BF16 and FP16 need AVX-512 in 2.x): ask it.
    std::lock_guard<std::mutex> lock(api().call_mutex);
    set_threads(resolve_threads(device.threads));
    Matmul probe;
    if (Status s = make_matmul(p, false, probe); !s) return Support::no(s.message());
    return Support::yes();
  }

  ParamSpace space(const Problem&, const Device&) const override { return ParamSpace{std::string(name()), {}, {}}; }

  Expected<Config> heuristic(const Problem&, const Device&) const override { return Config{std::string(name()), {}}; }

  Expected<std::unique_ptr<Kernel>> prepare(const Problem& problem, const Config& config,
                                            const Device& device) override {
    if (Status s = problem.validate(); !s) return s;
    if (!ready()) return not_available(api().error);
    if (device.kind != "cpu") return unsupported(fmt::format("oneDNN runs on the CPU, not on {}", device.kind));
    if (Support s = precision_support(problem); !s) return unsupported(s.reason);
    if (config.family != name()) {
      return invalid_argument(fmt::format("config family '{}' is not 'onednn'", config.family));
    }
    if (!config.params.empty()) {
      return invalid_argument(fmt::format("onednn takes no parameters (got {})", config.describe()));
    }
    const int threads = resolve_threads(device.threads);
    auto kernel = std::make_unique<OneDnnKernel>(config, problem, threads);
    const Problem& p = kernel->problem();
    if (needs_matmul(p)) {
      // Primitive creation is slow (JIT code generation): done once here; run() only executes.
      std::lock_guard<std::mutex> lock(api().call_mutex);
      set_threads(threads);  // some implementations size their blocking by the thread count at creation
      auto mm = std::make_unique<Matmul>();
      if (Status s = make_matmul(p, true, *mm); !s) return s;
      kernel->set_matmul(std::move(mm));
    }
    return std::unique_ptr<Kernel>(std::move(kernel));
  }

  Status run(const Kernel& kernel, const Problem& problem, const GemmArgs& args) override {
    const auto* k = dynamic_cast<const OneDnnKernel*>(&kernel);
    if (!k) return invalid_argument("the kernel was not prepared by the onednn backend");
    if (!same_problem(k->problem(), problem)) {
      return invalid_argument(fmt::format("problem {} differs from the one the kernel was prepared for ({})",
                                          problem.describe(), k->problem().describe()));
    }
    const Problem& p = k->problem();
    if (p.m == 0 || p.n == 0) return Status::Ok();
    if (!args.c) return invalid_argument("C is a null pointer");
    if (!k->has_matmul()) {
      native_detail::scale_c_by_beta(p, args.c);
      return Status::Ok();
    }
    if (!args.a || !args.b) return invalid_argument("A or B is a null pointer");
    DnnlApi& d = api();
    Matmul& mm = k->matmul();
    std::lock_guard<std::mutex> lock(d.call_mutex);
    set_threads(k->threads());
    // oneDNN never writes through src and weights; its API takes non-const handles for all memory objects.
    d.dnnl_memory_set_data_handle(mm.mem_a, const_cast<void*>(args.a));
    d.dnnl_memory_set_data_handle(mm.mem_b, const_cast<void*>(args.b));
    d.dnnl_memory_set_data_handle(mm.mem_c, args.c);
    const dnnl_exec_arg_t exec_args[] = {
        {DNNL_ARG_SRC, mm.mem_a}, {DNNL_ARG_WEIGHTS, mm.mem_b}, {DNNL_ARG_DST, mm.mem_c}};
    if (dnnl_status_t s = d.dnnl_primitive_execute(mm.prim, d.stream, 3, exec_args); s != dnnl_success) {
      return Status(Code::launch_failed, fmt::format("oneDNN matmul ({}) execute: {}", mm.impl, status_name(s)));
    }
    if (dnnl_status_t s = d.dnnl_stream_wait(d.stream); s != dnnl_success) {
      return Status(Code::launch_failed, fmt::format("oneDNN stream wait: {}", status_name(s)));
    }
    return Status::Ok();
  }
};

}  // namespace

std::unique_ptr<Backend> make_onednn_backend() { return std::make_unique<OneDnnBackend>(); }

VendorLibraryInfo onednn_info() {
  VendorLibraryInfo info;
  info.name = "onednn";
  DnnlApi& d = api();
  info.loaded = ready();
  info.library = d.library;
  if (!info.loaded) {
    info.why_not = d.error;
    info.threads = d.wait_note;
    return info;
  }
  const dnnl_version_t* v = d.dnnl_version();
  const char* runtime = v->cpu_runtime == DNNL_RUNTIME_OMP ? "OpenMP"
                        : v->cpu_runtime == DNNL_RUNTIME_SEQ ? "sequential"
                        : v->cpu_runtime == DNNL_RUNTIME_TBB ? "TBB"
                        : v->cpu_runtime == DNNL_RUNTIME_THREADPOOL ? "threadpool"
                                                                    : "other";
  info.version = fmt::format("oneDNN {}.{}.{} (commit {}), CPU runtime {}, ISA {}", v->major, v->minor, v->patch,
                             v->hash ? v->hash : "unknown", runtime, isa_name(d.dnnl_get_effective_cpu_isa()));
  if (d.omp_get_max_threads) {
    info.threads = fmt::format("{} OpenMP threads (omp_set_num_threads per call to the Device's count), {}",
                               d.omp_get_max_threads(), d.wait_note);
  } else {
    info.threads = fmt::format("thread count not settable (no OpenMP runtime found), {}", d.wait_note);
  }
  return info;
}

}  // namespace tileforge

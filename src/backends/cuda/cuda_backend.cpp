// tileforge's own CUDA backend: sm80 instances generated per Config, compiled with NVRTC through the kernel
// cache, checked against their resource estimates, and launched with cuLaunchKernelEx.
#include "backends/cuda/cuda_backend.hpp"

#include <climits>
#include <cstdio>
#include <map>
#include <mutex>

#include <fmt/format.h>

#include "backends/cuda/sm80/sm80_family.hpp"
#include "core/embedded.hpp"
#include "hw/cuda_device.hpp"
#include "hw/cuda_driver.hpp"
#include "jit/loader.hpp"
#include "jit/nvrtc.hpp"

namespace tileforge::cuda {
namespace {

// Each operand copied by COPY_AB gets rows padded to a multiple of this many elements (128 bytes), so that the
// copies start every row on a full cache line and the GEMM can read them 16 bytes at a time.
constexpr int64_t kCopyRowAlign = 64;

int64_t round_up(int64_t v, int64_t to) { return (v + to - 1) / to * to; }

std::vector<jit::Header> kernel_headers() {
  std::vector<jit::Header> headers;
  for (const auto& [name, text] : embedded::embedded_kernel_headers()) headers.push_back({std::string(name), std::string(text)});
  return headers;
}

Expected<std::string> arch_of(int ordinal) {
  auto props = query_device(ordinal);
  if (!props) return props.status();
  return nvrtc_arch(props->cc_major, props->cc_minor);
}

// One request for every path that compiles a kernel (prepare, utilities, compile-only), so that a kernel compiled
// ahead of time is found in the cache by the same key when prepare() later asks for it.
jit::CompileRequest request_for(const std::string& name, const std::string& source, const std::string& arch) {
  jit::CompileRequest req;
  req.name = name;
  req.source = source;
  req.headers = kernel_headers();
  req.arch = arch;
  return req;
}

Expected<jit::LoadedKernel> compile_and_load(const std::string& name, const std::string& source,
                                             const std::string& entry, int ordinal) {
  auto arch = arch_of(ordinal);
  if (!arch) return arch.status();
  return jit::load_kernel(request_for(name, source, *arch), entry, ordinal);
}

// The load width prepare() compiles an instance for: 16 bytes after COPY_AB, else the config's VEC_BYTES.
int prepared_vec(const Config& config) { return config.at("COPY_AB") ? 16 : int(config.at("VEC_BYTES")); }

// One operand as the copy kernel sees it: stored rows x cols with leading dimension ld.
struct StoredShape {
  int64_t rows, cols, ld, stride;
};
StoredShape stored_a(const Problem& p) {
  return a_row_major(p.layout) ? StoredShape{p.m, p.k, p.lda, p.stride_a} : StoredShape{p.k, p.m, p.lda, p.stride_a};
}
StoredShape stored_b(const Problem& p) {
  return b_row_major(p.layout) ? StoredShape{p.k, p.n, p.ldb, p.stride_b} : StoredShape{p.n, p.k, p.ldb, p.stride_b};
}

class CudaKernel final : public Kernel {
 public:
  CudaKernel(Config config, int ordinal, std::string arch)
      : Kernel(std::move(config)), ordinal_(ordinal), arch_(std::move(arch)) {}

  struct Instance {
    jit::LoadedKernel loaded;
    GeneratedKernel generated;
  };

  int ordinal() const { return ordinal_; }
  // The instance for (vec, epilogue vec), compiled on first use: a pointer narrower than the config assumed
  // gets a narrower instance instead of a fault.
  Expected<const Instance*> instance(const Problem& p, int vec, int epi) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto key = std::make_pair(vec, epi);
    if (auto it = instances_.find(key); it != instances_.end()) return &it->second;
    GeneratedKernel gen = sm80_source(p, config(), vec, epi);
    auto loaded = compile_and_load(gen.entry, gen.source, gen.entry, ordinal_);
    if (!loaded) return loaded.status();
    Status s = check_resources(*loaded, gen);
    if (!s) return s;
    auto [it, inserted] = instances_.emplace(key, Instance{std::move(*loaded), std::move(gen)});
    return &it->second;
  }

  // Padded copies of A and B for COPY_AB, grown as needed.
  Expected<std::pair<void*, void*>> copy_buffers(std::size_t a_bytes, std::size_t b_bytes) const {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto [buf, bytes] : {std::pair{&copy_a_, a_bytes}, std::pair{&copy_b_, b_bytes}}) {
      if (buf->size() < bytes) {
        auto fresh = DeviceBuffer::allocate(bytes);
        if (!fresh) return fresh.status();
        *buf = std::move(*fresh);
      }
    }
    return std::pair<void*, void*>{copy_a_.data(), copy_b_.data()};
  }

  // The operand copy kernel of COPY_AB, loaded once: run() must not pay a cache lookup per call, since every
  // microsecond the host spends between launches is GPU time in a timed rep.
  Expected<void*> copier() const {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!copier_) {
      auto k = utility_kernel("tf_copy_u16", ordinal_);
      if (!k) return k.status();
      copier_ = k->function;
    }
    return copier_;
  }

  mutable std::vector<std::string> warnings;

 private:
  Status check_resources(const jit::LoadedKernel& k, const GeneratedKernel& gen) const {
    const auto& r = k.resources;
    if (r.spills()) {
      return unsupported(fmt::format("{} spills ({} bytes stored, {} loaded; {} registers): refused before it runs "
                                     "(choose smaller tiles or fewer stages)",
                                     config().describe(), r.spill_store_bytes, r.spill_load_bytes, r.registers));
    }
    const int estimate = sm80_register_estimate(config(), arch_);
    if (r.registers > estimate) {
      warnings.push_back(fmt::format("{}: the compiler uses {} registers, above the estimate {} (the estimate is "
                                     "meant as an upper bound)",
                                     config().describe(), r.registers, estimate));
    }
    if (k.max_threads_per_block > 0 && k.max_threads_per_block < gen.threads) {
      return unsupported(fmt::format("{} needs {} threads per block but its registers allow only {}",
                                     config().describe(), gen.threads, k.max_threads_per_block));
    }
    return {};
  }

  int ordinal_;
  std::string arch_;  // the NVRTC target, for the register estimate
  mutable std::mutex mutex_;
  mutable std::map<std::pair<int, int>, Instance> instances_;
  mutable DeviceBuffer copy_a_, copy_b_;
  mutable void* copier_ = nullptr;
};

class CudaBackend final : public Backend {
 public:
  std::string_view name() const override { return "cuda"; }
  bool native() const override { return false; }
  std::string_view device_kind() const override { return "cuda"; }

  Support available() const override {
    auto d = driver();
    if (!d) return Support::no(d.status().message());
    if (cuda_device_count() == 0) return Support::no("no CUDA device");
    auto nvrtc = jit::Nvrtc::get();
    if (!nvrtc) return Support::no(nvrtc.status().message());
    return Support::yes();
  }

  Support supports(const Problem& p, const Device& device) const override {
    if (device.kind != "cuda") return Support::no(fmt::format("the cuda backend runs on CUDA devices, not {}", device.kind));
    if (p.precision.input == DType::f32) return Support::no("the sm80 family takes f16 or bf16 inputs (f32 has no mma.sync path here)");
    if (p.precision.accum != DType::f32) return Support::no("the sm80 family accumulates in f32 (f16 accumulation comes with a later family)");
    if (p.m > INT_MAX || p.n > INT_MAX || p.k > INT_MAX) return Support::no("M, N and K must each fit a 32-bit int");
    if (p.batch > 65535) return Support::no("batch must be at most 65535 (one grid row per entry)");
    return Support::yes();
  }

  ParamSpace space(const Problem& p, const Device& device) const override { return sm80_space(p, device.profile); }

  Expected<Config> heuristic(const Problem& p, const Device& device) const override {
    if (Support s = supports(p, device); !s) return unsupported(s.reason);
    Config c = sm80_heuristic(p, device.profile);
    if (c.family.empty()) return unsupported(fmt::format("no sm80 config fits {} on {}", p.describe(), device.profile.name));
    return c;
  }

  Expected<std::unique_ptr<Kernel>> prepare(const Problem& problem, const Config& config, const Device& device) override {
    if (Status s = problem.validate(); !s) return s;
    if (Support s = supports(problem, device); !s) return unsupported(s.reason);
    const Problem p = problem.normalized();
    if (Status s = space(p, device).check(config); !s) return s;
    auto arch = arch_of(device.ordinal);
    if (!arch) return arch.status();
    auto kernel = std::make_unique<CudaKernel>(config, device.ordinal, *arch);
    auto inst = kernel->instance(p, prepared_vec(config), epilogue_vec(p));
    if (!inst) return inst.status();
    if (config.at("COPY_AB")) {
      if (auto copier = kernel->copier(); !copier) return copier.status();
    }
    return std::unique_ptr<Kernel>(std::move(kernel));
  }

  Status run(const Kernel& base, const Problem& problem, const GemmArgs& args) override {
    const auto* kernel = dynamic_cast<const CudaKernel*>(&base);
    if (!kernel) return invalid_argument("kernel was not prepared by the cuda backend");
    if (Status s = problem.validate(); !s) return s;
    const Problem p = problem.normalized();
    if (p.m == 0 || p.n == 0) return {};
    auto ctx = activate(kernel->ordinal());
    if (!ctx) return ctx.status();
    const bool reads_ab = p.k > 0;
    if (reads_ab) {
      if (Status s = check_device_pointer(args.a, "A"); !s) return s;
      if (Status s = check_device_pointer(args.b, "B"); !s) return s;
    }
    if (Status s = check_device_pointer(args.c, "C"); !s) return s;
    const Config& c = kernel->config();
    const bool copy = c.at("COPY_AB") != 0 && reads_ab;

    const void* a = args.a;
    const void* b = args.b;
    Problem launch_p = p;
    int vec = int(c.at("VEC_BYTES"));
    if (copy) {
      auto copied = copy_operands(*kernel, p, args, launch_p);
      if (!copied) return copied.status();
      std::tie(a, b) = *copied;
      vec = 16;
    } else {
      const int allowed = max_vec_bytes(p, args.a, args.b);
      if (allowed < vec) {
        note_once(*kernel, fmt::format("A or B is only {}-byte aligned; {} runs with {}-byte loads instead of {}",
                                       allowed, c.describe(), allowed, vec));
        vec = allowed;
      }
    }
    const int epi = epilogue_vec(p, args.c);
    auto inst = kernel->instance(p, vec, epi);
    if (!inst) return inst.status();

    sm80_params params{};
    params.a = a;
    params.b = b;
    params.c = args.c;
    params.m = int(p.m);
    params.n = int(p.n);
    params.k = int(p.k);
    params.lda = launch_p.lda;
    params.ldb = launch_p.ldb;
    params.ldc = p.ldc;
    params.stride_a = launch_p.stride_a;
    params.stride_b = launch_p.stride_b;
    params.stride_c = p.stride_c;
    params.alpha = float(p.alpha);
    params.beta = float(p.beta);
    void* kernel_args[] = {&params};
    LaunchDims dims;
    const int64_t bm = c.at("BLOCK_M"), bn = c.at("BLOCK_N");
    dims.grid[0] = unsigned(((p.m + bm - 1) / bm) * ((p.n + bn - 1) / bn));
    dims.grid[1] = unsigned(p.batch);
    dims.block[0] = unsigned((*inst)->generated.threads);
    dims.dynamic_smem_bytes = unsigned((*inst)->generated.smem_bytes);
    dims.stream = static_cast<CUstream>(args.stream);
    return launch((*inst)->loaded.function, dims, kernel_args, (*inst)->generated.entry);
  }

 private:
  // Mirrors tf::sm80::Params in kernels/sm80/gemm.cuh field for field (passed by value as the only argument).
  struct sm80_params {
    const void* a;
    const void* b;
    void* c;
    int m, n, k;
    long long lda, ldb, ldc;
    long long stride_a, stride_b, stride_c;
    float alpha, beta;
  };

  static void note_once(const CudaKernel& k, std::string text) {
    for (const auto& w : k.warnings)
      if (w == text) return;
    std::fprintf(stderr, "tileforge: warning: %s\n", text.c_str());
    k.warnings.push_back(std::move(text));
  }

  // Copies A and B into buffers whose rows are 128-byte aligned; `launch_p` gets their leading dimensions.
  Expected<std::pair<const void*, const void*>> copy_operands(const CudaKernel& kernel, const Problem& p,
                                                              const GemmArgs& args, Problem& launch_p) {
    const StoredShape sa = stored_a(p), sb = stored_b(p);
    const int64_t lda = round_up(sa.cols, kCopyRowAlign), ldb = round_up(sb.cols, kCopyRowAlign);
    const int64_t stride_a = lda * sa.rows, stride_b = ldb * sb.rows;
    auto bufs = kernel.copy_buffers(std::size_t(stride_a * p.batch * 2), std::size_t(stride_b * p.batch * 2));
    if (!bufs) return bufs.status();
    auto copier = kernel.copier();
    if (!copier) return copier.status();
    for (auto [src, dst, shape, ld_dst, stride_dst] :
         {std::tuple{args.a, bufs->first, sa, lda, stride_a}, std::tuple{args.b, bufs->second, sb, ldb, stride_b}}) {
      const void* s = src;
      void* d = dst;
      long long ld_src = shape.ld, st_src = shape.stride, ldd = ld_dst, std_ = stride_dst;
      int rows = int(shape.rows), cols = int(shape.cols);
      void* kargs[] = {&s, &ld_src, &st_src, &d, &ldd, &std_, &rows, &cols};
      LaunchDims dims;
      dims.block[0] = 256;
      dims.grid[0] = unsigned(std::min<int64_t>((cols + 511) / 512, 64));
      dims.grid[1] = unsigned(std::min<int64_t>(rows, 65535));
      dims.grid[2] = unsigned(p.batch);
      dims.stream = static_cast<CUstream>(args.stream);
      if (Status st = launch(static_cast<CUfunction>(*copier), dims, kargs, "tf_copy_u16"); !st) return st;
    }
    launch_p.lda = lda;
    launch_p.ldb = ldb;
    launch_p.stride_a = stride_a;
    launch_p.stride_b = stride_b;
    return std::pair<const void*, const void*>{bufs->first, bufs->second};
  }
};

std::string utility_source(const std::string& entry) {
  if (entry == "tf_copy_u16") {
    return "#include \"common/utility.cuh\"\n"
           "extern \"C\" __global__ void tf_copy_u16(const unsigned short* src, long long ld_src, long long stride_src,"
           " unsigned short* dst, long long ld_dst, long long stride_dst, int rows, int cols) {\n"
           "  tf::util::copy_rows_u16(src, ld_src, stride_src, dst, ld_dst, stride_dst, rows, cols);\n}\n";
  }
  if (entry == "tf_scrub_l2") {
    return "#include \"common/utility.cuh\"\n"
           "extern \"C\" __global__ void tf_scrub_l2(unsigned* buf, long long words, unsigned value) {\n"
           "  tf::util::scrub(buf, words, value);\n}\n";
  }
  // tf_reference_check_<in>_<out>_<layout>
  const std::string prefix = "tf_reference_check_";
  if (entry.rfind(prefix, 0) == 0) {
    auto rest = entry.substr(prefix.size());
    auto tag = [](std::string_view t) { return t == "f32" ? 0 : t == "f16" ? 1 : 2; };
    auto u1 = rest.find('_'), u2 = rest.find('_', u1 + 1);
    if (u1 == std::string::npos || u2 == std::string::npos) return {};
    const std::string in = rest.substr(0, u1), out = rest.substr(u1 + 1, u2 - u1 - 1), layout = rest.substr(u2 + 1);
    if (layout.size() != 2) return {};
    return fmt::format(
        "#include \"common/utility.cuh\"\n"
        "extern \"C\" __global__ void __launch_bounds__(256) {entry}(const void* a, const void* b, const void* c_in,"
        " const void* c_out, tf::util::ErrorTotals* totals, int m, int n, int k, long long lda, long long ldb,"
        " long long ldc, long long sa, long long sb, long long sc, double alpha, double beta) {{\n"
        "  tf::util::reference_check<{in}, {out}, {arow}, {brow}>(a, b, c_in, c_out, totals, m, n, k, lda, ldb, ldc,"
        " sa, sb, sc, alpha, beta);\n}}\n",
        fmt::arg("entry", entry), fmt::arg("in", tag(in)), fmt::arg("out", tag(out)),
        fmt::arg("arow", layout[0] == 'R' ? "true" : "false"), fmt::arg("brow", layout[1] == 'R' ? "true" : "false"));
  }
  return {};
}

}  // namespace

Expected<UtilityKernel> utility_kernel(const std::string& entry, int ordinal) {
  const std::string source = utility_source(entry);
  if (source.empty()) return invalid_argument(fmt::format("unknown utility kernel '{}'", entry));
  auto loaded = compile_and_load(entry, source, entry, ordinal);
  if (!loaded) return loaded.status();
  return UtilityKernel{loaded->function};
}

std::unique_ptr<Backend> make_cuda_backend() { return std::make_unique<CudaBackend>(); }

Expected<std::string> target_arch(const Device& device) {
  if (device.kind == "cuda") return arch_of(device.ordinal);
  if (device.profile.kind == "gpu" && device.profile.vendor == "nvidia" && !device.profile.arch.empty()) {
    return device.profile.arch;
  }
  return invalid_argument(fmt::format("no NVRTC target for device {} with profile {} (an NVIDIA GPU profile or a "
                                      "CUDA device is needed)",
                                      device.kind, device.profile.name));
}

Expected<CompiledInstance> compile_instance(const Problem& problem, const Config& config, const std::string& arch,
                                            jit::KernelCache* cache) {
  if (Status s = problem.validate(); !s) return s;
  const Problem p = problem.normalized();
  if (config.family != "sm80") {
    return invalid_argument(fmt::format("the cuda backend compiles family sm80, not '{}'", config.family));
  }
  auto nvrtc = jit::Nvrtc::get();
  if (!nvrtc) return nvrtc.status();
  if (Status s = (*nvrtc)->check_arch(arch); !s) return s;
  const GeneratedKernel gen = sm80_source(p, config, prepared_vec(config), epilogue_vec(p));
  auto compiled = (cache ? *cache : jit::KernelCache::shared()).get(request_for(gen.entry, gen.source, arch));
  if (!compiled) return compiled.status();
  CompiledInstance out;
  out.entry = gen.entry;
  out.cache_hit = compiled->cache_hit;
  out.compile_seconds = compiled->compile_seconds;
  out.cache_entry = compiled->entry_path;
  if (const jit::FunctionResources* r = compiled->resources(gen.entry)) {
    out.registers = r->registers;
    // The same refusal as prepare(): a spilling instance would be slow whatever its tiles promise.
    if (r->spills()) {
      return unsupported(fmt::format("{} spills ({} bytes stored, {} loaded; {} registers): refused before it runs "
                                     "(choose smaller tiles or fewer stages)",
                                     config.describe(), r->spill_store_bytes, r->spill_load_bytes, r->registers));
    }
  }
  return out;
}

}  // namespace tileforge::cuda

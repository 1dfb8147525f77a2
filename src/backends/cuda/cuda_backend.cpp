// tileforge's own CUDA backend: the sm80 and sm90 families' instances generated per Config, compiled with NVRTC
// through the kernel cache, checked against their resource estimates, and launched with cuLaunchKernelEx (sm90: with
// tensor maps built per call and thread-block clusters). Which family runs a problem is plan::family_for's answer.
// This file is the Backend and the compile entry points of cuda_backend.hpp; the prepared kernels are in
// sm80/sm80_kernel.* and sm90/sm90_kernel.*, what they share in common/.
#include "backends/cuda/cuda_backend.hpp"

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "backends/cuda/common/cuda_common.hpp"
#include "backends/cuda/sm80/sm80_family.hpp"
#include "backends/cuda/sm80/sm80_kernel.hpp"
#include "backends/cuda/sm90/sm90_family.hpp"
#include "backends/cuda/sm90/sm90_kernel.hpp"
#include "plan/kernel_family.hpp"
#include "hw/cuda_device.hpp"
#include "hw/cuda_driver.hpp"
#include "jit/loader.hpp"
#include "jit/nvrtc.hpp"

namespace tileforge::cuda {

// The parts of the backend in common/, sm80/ and sm90/ (library-internal).
using detail::arch_of;
using detail::compile_and_load;
using detail::CudaKernel;
using detail::prepare_sm80;
using detail::prepare_sm90;
using detail::prepared_vec;
using detail::properties_of;
using detail::request_for;
using detail::run_sm80;
using detail::Sm90Kernel;
using detail::sm90_refusal;
using detail::threads_refusal;

namespace {

// The family that runs a problem on a device: plan::family_for's answer, unless TILEFORGE_CUDA_FAMILY names another
// registered CUDA family that fits, runs on the device and takes the problem (to compare families in one run).
const plan::KernelFamily* cuda_family(const Problem& p, const Device& device) {
  if (const char* forced = std::getenv("TILEFORGE_CUDA_FAMILY"); forced && *forced && std::string_view(forced) != "auto") {
    const plan::KernelFamily* f = plan::find_family(forced);
    if (f && f->backend() == "cuda" && f->fit(device.profile).ok && f->runs_on(device) && f->supports(p).empty()) {
      return f;
    }
    static std::once_flag said;
    std::call_once(said, [&] {
      std::fprintf(stderr, "tileforge: warning: TILEFORGE_CUDA_FAMILY=%s: not a CUDA family that runs %s here; "
                   "choosing the family as usual\n", forced, p.describe().c_str());
    });
  }
  return plan::family_for("cuda", p, device);
}

// Families with code of their own (prepare, run, compile_ahead): every registered CUDA family but the two this
// backend builds in.
bool plugged(std::string_view family) { return family != "sm80" && family != "sm90"; }

std::string cuda_family_names() {
  std::string out;
  for (const plan::KernelFamily* f : plan::families()) {
    if (f->backend() == "cuda") out += (out.empty() ? "" : ", ") + std::string(f->name());
  }
  return out;
}

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
    const Problem q = p.normalized();
    if (cuda_family(q, device)) return Support::yes();
    // Why not: the first CUDA family that fits the chip record says it.
    for (const plan::KernelFamily* f : plan::families()) {
      if (f->backend() != "cuda" || !f->fit(device.profile).ok) continue;
      if (plan::SupportGap gap = f->supports(q); !gap.empty()) return Support::no(gap.why);
      if (Support s = f->runs_on(device); !s) return s;
    }
    return Support::no(fmt::format("no CUDA kernel family plans for {} ({})", device.profile.name, device.profile.arch));
  }

  ParamSpace space(const Problem& p, const Device& device) const override {
    const Problem q = p.normalized();
    const plan::KernelFamily* f = cuda_family(q, device);
    if (f && f->name() == "sm90") return sm90_space(q, device.profile, sm90_space_options());  // as the planner
    if (f && plugged(f->name())) return f->candidates(q, device.profile, 0).space;
    return sm80_space(q, device.profile);
  }

  Expected<Config> heuristic(const Problem& p, const Device& device) const override {
    if (Support s = supports(p, device); !s) return unsupported(s.reason);
    const Problem q = p.normalized();
    const plan::KernelFamily* f = cuda_family(q, device);
    if (f && plugged(f->name())) {
      const plan::FamilySpace fs = f->candidates(q, device.profile, 0);
      if (fs.reference) return *fs.reference;
      return unsupported(fmt::format("family {} has no pick of its own", f->name()));
    }
    Config c = f && f->name() == "sm90" ? sm90_heuristic(q, device.profile) : sm80_heuristic(q, device.profile);
    if (c.family.empty()) {
      return unsupported(fmt::format("no {} config fits {} on {}", f ? f->name() : "sm80", p.describe(),
                                     device.profile.name));
    }
    return c;
  }

  Expected<std::unique_ptr<Kernel>> prepare(const Problem& problem, const Config& config, const Device& device) override {
    if (Status s = problem.validate(); !s) return s;
    if (device.kind != "cuda") return unsupported(fmt::format("the cuda backend runs on CUDA devices, not {}", device.kind));
    const Problem p = problem.normalized();
    auto arch = arch_of(device.ordinal);
    if (!arch) return arch.status();
    if (config.family == "sm90") {
      const plan::KernelFamily* f = plan::find_family("sm90");
      if (plan::SupportGap gap = f->supports(p); !gap.empty()) return unsupported(gap.why);
      // A config (planned, tuned or a test's) is checked against the space that declares the optional parameters it
      // names and no others, whatever the environment asks the planner for (sm90_space_options_declaring).
      if (Status s = sm90_space(p, device.profile, sm90_space_options_declaring(config)).check(config); !s) return s;
      auto k = prepare_sm90(p, config, device, *arch);
      if (k) return k;
      // A kernel that does not compile or may not run: the sm80 family runs the problem, and says so.
      const Status why = k.status();
      if (!plan::find_family("sm80")->supports(p).empty()) return why;
      const Config fallback = sm80_heuristic(p, device.profile);
      auto f80 = prepare_sm80(p, fallback, device.ordinal, *arch);
      if (!f80) return why;
      std::fprintf(stderr, "tileforge: warning: %s could not be prepared (%s); running the sm80 family's %s instead\n",
                   config.describe().c_str(), why.message().c_str(), fallback.describe().c_str());
      return std::unique_ptr<Kernel>(std::move(*f80));
    }
    if (config.family != "sm80") {
      // A plugged-in family brings its own code.
      const plan::KernelFamily* f = plan::find_family(config.family);
      if (!f || f->backend() != name()) {
        return invalid_argument(fmt::format("family '{}' is not run by the cuda backend (allowed: {})", config.family,
                                            cuda_family_names()));
      }
      if (plan::SupportGap gap = f->supports(p); !gap.empty()) return unsupported(gap.why);
      return f->prepare(p, config, device);
    }
    if (plan::SupportGap gap = plan::find_family("sm80")->supports(p); !gap.empty()) return unsupported(gap.why);
    // A config that names SPLIT_K or STREAM_K is checked against the space that declares it, whatever the
    // environment says.
    if (Status s = sm80_space(p, device.profile, config.get("SPLIT_K").has_value(), config.get("STREAM_K").has_value())
                       .check(config);
        !s) {
      return s;
    }
    auto k = prepare_sm80(p, config, device.ordinal, *arch);
    if (!k) return k.status();
    return std::unique_ptr<Kernel>(std::move(*k));
  }

  Status run(const Kernel& base, const Problem& problem, const GemmArgs& args) override {
    const auto* k80 = dynamic_cast<const CudaKernel*>(&base);
    const auto* k90 = dynamic_cast<const Sm90Kernel*>(&base);
    const plan::KernelFamily* own = nullptr;
    if (!k80 && !k90) {
      own = plan::find_family(base.config().family);
      if (!own || own->backend() != name() || !plugged(own->name())) {
        return invalid_argument("kernel was not prepared by the cuda backend");
      }
    }
    if (Status s = problem.validate(); !s) return s;
    Problem p = problem.normalized();
    if (p.m == 0 || p.n == 0) return {};
    if (own) {
      if (p.alpha == 0.0) {
        return invalid_argument(fmt::format("the {} kernel does not run alpha = 0 (prepare an sm80 config)", own->name()));
      }
      return own->run(base, p, args);
    }
    // The BLAS convention (docs/NUMERICS.md): with alpha = 0 neither A nor B is read, and C = beta C. The sm80
    // kernel with K = 0 computes exactly that; the sm90 family does not take alpha = 0.
    if (p.alpha == 0.0) {
      if (k90) return invalid_argument("the sm90 kernel does not run alpha = 0 (prepare an sm80 config)");
      p.k = 0;
    }
    auto ctx = activate(k80 ? k80->ordinal() : k90->ordinal());
    if (!ctx) return ctx.status();
    if (p.k > 0) {
      if (Status s = check_device_pointer(args.a, "A"); !s) return s;
      if (Status s = check_device_pointer(args.b, "B"); !s) return s;
    }
    if (Status s = check_device_pointer(args.c, "C"); !s) return s;
    if (k90) return k90->run(p, args);
    return run_sm80(*k80, p, args);
  }
};

std::string utility_source(const std::string& entry) {
  if (entry == "tf_copy_u16") {
    return "#include \"common/utility.cuh\"\n"
           "extern \"C\" __global__ void tf_copy_u16(const tf::util::CopyJob job) {\n"
           "  tf::util::copy_rows_u16(job);\n}\n";
  }
  if (entry == "tf_scrub_l2") {
    return "#include \"common/utility.cuh\"\n"
           "extern \"C\" __global__ void tf_scrub_l2(unsigned* buf, long long words, unsigned value) {\n"
           "  tf::util::scrub(buf, words, value);\n}\n";
  }
  if (entry == "tf_scrub_l2_read") {
    return "#include \"common/utility.cuh\"\n"
           "extern \"C\" __global__ void tf_scrub_l2_read(const unsigned* buf, long long words, unsigned value,"
           " unsigned* sink) {\n"
           "  tf::util::scrub_read(buf, words, value, sink);\n}\n";
  }
  if (entry == "tf_spin") {
    return "#include \"common/utility.cuh\"\n"
           "extern \"C\" __global__ void tf_spin(long long ns) {\n"
           "  tf::util::spin_ns(ns);\n}\n";
  }
  auto tag = [](std::string_view t) { return t == "f32" ? 0 : t == "f16" ? 1 : 2; };
  // tf_reference_compare_<out>
  if (const std::string prefix = "tf_reference_compare_"; entry.rfind(prefix, 0) == 0) {
    return fmt::format(
        "#include \"common/utility.cuh\"\n"
        "extern \"C\" __global__ void __launch_bounds__(256) {entry}(const double* ref, const double* bound,"
        " const void* c_out, tf::util::ErrorTotals* totals, int m, int n, int batch, long long ldc, long long sc) {{\n"
        "  tf::util::reference_compare<{out}>(ref, bound, c_out, totals, m, n, batch, ldc, sc);\n}}\n",
        fmt::arg("entry", entry), fmt::arg("out", tag(entry.substr(prefix.size()))));
  }
  // tf_reference_check_<in>_<out>_<layout> and tf_reference_store_<in>_<out>_<layout>
  for (const char* what : {"check", "store"}) {
    const std::string prefix = fmt::format("tf_reference_{}_", what);
    if (entry.rfind(prefix, 0) != 0) continue;
    auto rest = entry.substr(prefix.size());
    auto u1 = rest.find('_'), u2 = rest.find('_', u1 + 1);
    if (u1 == std::string::npos || u2 == std::string::npos) return {};
    const std::string in = rest.substr(0, u1), out = rest.substr(u1 + 1, u2 - u1 - 1), layout = rest.substr(u2 + 1);
    if (layout.size() != 2) return {};
    const bool check = std::string_view(what) == "check";
    return fmt::format(
        "#include \"common/utility.cuh\"\n"
        "extern \"C\" __global__ void __launch_bounds__(256) {entry}(const void* a, const void* b, const void* c_in,"
        " {outs}, int m, int n, int k, int batch{rows_decl}, long long lda, long long ldb,"
        " long long ldc, long long sa, long long sb, long long sc, double alpha, double beta) {{\n"
        "  tf::util::reference_{what}<{in}, {out}, {arow}, {brow}>(a, b, c_in, {out_args}, m, n, k, batch{rows_arg}, lda,"
        " ldb, ldc, sa, sb, sc, alpha, beta);\n}}\n",
        fmt::arg("rows_decl", check ? ", int rows" : ""), fmt::arg("rows_arg", check ? ", rows" : ""),
        fmt::arg("entry", entry), fmt::arg("what", what), fmt::arg("in", tag(in)), fmt::arg("out", tag(out)),
        fmt::arg("outs", check ? "const void* c_out, tf::util::ErrorTotals* totals" : "double* ref, double* bound"),
        fmt::arg("out_args", check ? "c_out, totals" : "ref, bound"),
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

namespace {

// One source through the kernel cache for `arch`; an instance that spills is refused (it would be slow whatever its
// tiles promise). `warnings`: the compiler's, for the family's own refusals.
Expected<CompiledInstance> compile_cached(const std::string& entry, const std::string& source, const std::string& arch,
                                          jit::KernelCache* cache, std::vector<std::string>* warnings) {
  auto nvrtc = jit::Nvrtc::get();
  if (!nvrtc) return nvrtc.status();
  if (Status s = (*nvrtc)->check_arch(arch); !s) return s;
  auto compiled = (cache ? *cache : jit::KernelCache::shared()).get(request_for(entry, source, arch));
  if (!compiled) return compiled.status();
  CompiledInstance out;
  out.entry = entry;
  out.cache_hit = compiled->cache_hit;
  out.compile_seconds = compiled->compile_seconds;
  out.cache_entry = compiled->entry_path;
  if (warnings) *warnings = compiled->report.warnings;
  if (const jit::FunctionResources* r = compiled->resources(entry)) {
    out.registers = r->registers;
    if (r->spills()) {
      return unsupported(fmt::format("spills ({} bytes stored, {} loaded; {} registers): refused before it runs "
                                     "(choose smaller tiles or fewer stages)",
                                     r->spill_store_bytes, r->spill_load_bytes, r->registers));
    }
  }
  return out;
}

}  // namespace

Expected<jit::LoadedKernel> load_generated(const std::string& entry, const std::string& source, int ordinal,
                                           const Config& config, int threads) {
  auto loaded = compile_and_load(entry, source, entry, ordinal);
  if (!loaded) return loaded.status();
  const jit::FunctionResources& r = loaded->resources;
  if (r.spills()) {
    return unsupported(fmt::format("{} spills ({} bytes stored, {} loaded; {} registers): refused before it runs "
                                   "(choose smaller tiles or fewer stages)",
                                   config.describe(), r.spill_store_bytes, r.spill_load_bytes, r.registers));
  }
  if (std::string why = threads_refusal(*loaded, threads, config); !why.empty()) return unsupported(why);
  return loaded;
}

Expected<CompiledInstance> compile_generated(const std::string& entry, const std::string& source,
                                             const std::string& arch, jit::KernelCache* cache) {
  auto out = compile_cached(entry, source, arch, cache, nullptr);
  if (!out && out.status().code() == Code::unsupported) return unsupported(entry + " " + out.status().message());
  return out;
}

Expected<int> sm_count(int ordinal) {
  auto props = properties_of(ordinal);
  if (!props) return props.status();
  return props->sm_count;
}

Expected<CompiledInstance> compile_instance(const Problem& problem, const Config& config, const std::string& arch,
                                            jit::KernelCache* cache) {
  if (Status s = problem.validate(); !s) return s;
  const Problem p = problem.normalized();
  if (config.family != "sm80" && config.family != "sm90") {
    return invalid_argument(fmt::format("the cuda backend compiles families sm80 and sm90, not '{}'", config.family));
  }
  if (config.family == "sm90" && arch != "sm_90a") {
    return unsupported(fmt::format("the sm90 family compiles for sm_90a only, not {}", arch));
  }
  std::string entry, source;
  if (config.family == "sm90") {
    const Sm90Source gen = sm90_source(p, config);
    entry = gen.entry;
    source = gen.source;
  } else {
    const GeneratedKernel gen = sm80_source(p, config, prepared_vec(config), epilogue_vec(p));
    entry = gen.entry;
    source = gen.source;
  }
  std::vector<std::string> warnings;
  auto out = compile_cached(entry, source, arch, cache, &warnings);
  if (!out) {
    if (out.status().code() == Code::unsupported && out.status().message().find("spills") != std::string::npos) {
      return unsupported(config.describe() + " " + out.status().message());
    }
    return out.status();
  }
  if (config.family == "sm90") {
    if (std::string why = sm90_refusal(config, nullptr, warnings); !why.empty()) {
      return unsupported(why + ": refused before it runs");
    }
  }
  return out;
}

}  // namespace tileforge::cuda

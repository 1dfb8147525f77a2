// Loads cached or fresh cubins into a device once per process and hands out their functions.
#include "jit/loader.hpp"

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include "hw/cuda_driver.hpp"

namespace tileforge::jit {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

struct LoadedModule {
  CUmodule module = nullptr;
  CompiledKernel kernel;  // without cubin and PTX: names, report, log
  std::map<std::string, CUfunction, std::less<>> functions;
};

std::mutex g_mutex;
std::map<std::pair<std::string, int>, LoadedModule> g_modules;  // (cache key, device ordinal)

// Looks `kernel` up in a loaded module (g_mutex held) and fills `out`.
Status resolve_function(LoadedModule& m, std::string_view kernel, LoadedKernel& out) {
  const cuda::DriverApi& api = **cuda::driver();
  std::string symbol = m.kernel.symbol(kernel);
  CUfunction fn = nullptr;
  if (auto it = m.functions.find(symbol); it != m.functions.end()) {
    fn = it->second;
  } else {
    CUresult r = api.cuModuleGetFunction(&fn, m.module, symbol.c_str());
    if (r == CUDA_ERROR_NOT_FOUND)
      return invalid_argument(fmt::format("kernel '{}' (symbol '{}') is not in '{}': declare it extern \"C\" or list it in "
                                          "the request's name_expressions",
                                          kernel, symbol, m.kernel.name));
    if (Status s = cuda::check(r, fmt::format("cuModuleGetFunction({}) in '{}'", symbol, m.kernel.name)); !s) return s;
    m.functions.emplace(symbol, fn);
  }
  out.module = m.module;
  out.function = fn;
  out.symbol = symbol;
  if (const FunctionResources* f = m.kernel.report.find(symbol)) out.resources = *f;
  out.warnings = m.kernel.report.warnings;
  api.cuFuncGetAttribute(&out.driver_registers, CU_FUNC_ATTRIBUTE_NUM_REGS, fn);
  api.cuFuncGetAttribute(&out.driver_static_smem_bytes, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, fn);
  api.cuFuncGetAttribute(&out.max_threads_per_block, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, fn);
  api.cuFuncGetAttribute(&out.driver_local_bytes, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, fn);
  return Status::Ok();
}

}  // namespace

std::string describe(const JitTiming& t) {
  std::string context = t.context_seconds >= 0.001 ? fmt::format(", context {:.3f} s", t.context_seconds) : "";
  if (t.module_reused) return fmt::format("module already loaded ({:.4f} s){}", t.total_seconds, context);
  if (t.cache_hit) return fmt::format("cache hit ({:.4f} s), load {:.4f} s{}", t.lookup_seconds, t.load_seconds, context);
  return fmt::format("compile {:.3f} s (cache miss), load {:.4f} s{}", t.compile_seconds, t.load_seconds, context);
}

std::size_t loaded_module_count() {
  std::lock_guard lock(g_mutex);
  return g_modules.size();
}

namespace {

// `out` from the module loaded under its timing's key on its device, when there is one (false when not).
Expected<bool> reuse_module(std::string_view kernel, LoadedKernel& out, Clock::time_point t0) {
  std::lock_guard lock(g_mutex);
  auto it = g_modules.find(std::make_pair(out.timing.key, out.device));
  if (it == g_modules.end()) return false;
  if (Status s = resolve_function(it->second, kernel, out); !s) return s;
  out.timing.module_reused = true;
  out.timing.cache_hit = true;
  out.timing.total_seconds = out.timing.lookup_seconds = seconds_since(t0);
  return true;
}

}  // namespace

Expected<std::optional<LoadedKernel>> find_loaded(std::string_view key, std::string_view kernel, int ordinal) {
  auto t0 = Clock::now();
  auto drv = cuda::driver();
  if (!drv) return drv.status();
  auto tc = Clock::now();
  if (auto ctx = cuda::activate(ordinal); !ctx) return ctx.status();
  LoadedKernel out;
  out.device = ordinal;
  out.timing.context_seconds = seconds_since(tc);
  out.timing.key = std::string(key);
  auto reused = reuse_module(kernel, out, t0);
  if (!reused) return reused.status();
  if (!*reused) return std::optional<LoadedKernel>();
  return std::optional<LoadedKernel>(std::move(out));
}

Expected<LoadedKernel> load_kernel(const CompileRequest& request, std::string_view kernel, int ordinal, KernelCache* cache,
                                   std::string_view key) {
  auto t0 = Clock::now();
  auto nv = Nvrtc::get();
  if (!nv) return nv.status();
  auto drv = cuda::driver();
  if (!drv) return drv.status();
  auto tc = Clock::now();
  if (auto ctx = cuda::activate(ordinal); !ctx) return ctx.status();

  LoadedKernel out;
  out.device = ordinal;
  out.timing.context_seconds = seconds_since(tc);
  out.timing.key = key.empty() ? cache_key(request, **nv) : std::string(key);
  auto map_key = std::make_pair(out.timing.key, ordinal);
  auto reused = reuse_module(kernel, out, t0);
  if (!reused) return reused.status();
  if (*reused) return out;

  if (!cache) cache = &KernelCache::shared();
  auto compiled = cache->get(request);  // outside the map lock: a compile can take seconds
  if (!compiled) return compiled.status();
  out.timing.cache_hit = compiled->cache_hit;
  out.timing.compile_seconds = compiled->compile_seconds;
  out.timing.lookup_seconds = compiled->lookup_seconds;

  std::lock_guard lock(g_mutex);
  auto it = g_modules.find(map_key);
  if (it == g_modules.end()) {  // else another thread loaded it meanwhile: use that one
    auto tl = Clock::now();
    LoadedModule m;
    const cuda::DriverApi& api = **drv;
    if (Status s = cuda::check(api.cuModuleLoadData(&m.module, compiled->cubin.data()),
                               fmt::format("could not load '{}' ({}) on cuda:{}: cuModuleLoadData", request.name,
                                           request.arch, ordinal));
        !s)
      return s;
    m.kernel = std::move(*compiled);
    m.kernel.cubin.clear();
    m.kernel.cubin.shrink_to_fit();
    m.kernel.ptx.clear();
    m.kernel.ptx.shrink_to_fit();
    it = g_modules.emplace(map_key, std::move(m)).first;
    out.timing.load_seconds = seconds_since(tl);
  }
  auto tf = Clock::now();
  if (Status s = resolve_function(it->second, kernel, out); !s) return s;
  out.timing.load_seconds += seconds_since(tf);
  out.timing.total_seconds = seconds_since(t0);
  return out;
}

}  // namespace tileforge::jit

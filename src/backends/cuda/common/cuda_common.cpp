// The cuda backend's shared helpers (cuda_common.hpp): device properties, compile requests, refusals, warnings.
#include "backends/cuda/common/cuda_common.hpp"

#include <cstdio>
#include <map>
#include <mutex>
#include <utility>

#include <fmt/format.h>

#include "core/embedded.hpp"
#include "hw/cuda_driver.hpp"

namespace tileforge::cuda::detail {
namespace {

std::vector<jit::Header> kernel_headers() {
  std::vector<jit::Header> headers;
  for (const auto& [name, text] : embedded::embedded_kernel_headers()) headers.push_back({std::string(name), std::string(text)});
  return headers;
}

}  // namespace

std::string kernel_key(const std::string& source, const std::string& arch, const jit::Nvrtc& nvrtc) {
  // Hashing the 120 KB of headers with each source, and copying them into a request, were most of the host time of
  // a GPU prepare whose kernel this process had already loaded (a new shape, a known config).
  static std::mutex mutex;
  static std::map<std::pair<std::string, std::string>, std::string> keys;
  auto at = std::make_pair(arch, source);
  {
    std::lock_guard lock(mutex);
    if (auto it = keys.find(at); it != keys.end()) return it->second;
  }
  std::string key = jit::cache_key(request_for("", source, arch), nvrtc);
  std::lock_guard lock(mutex);
  return keys.emplace(std::move(at), std::move(key)).first->second;
}

Status allow_dynamic_smem(CUfunction function, int64_t bytes, const std::string& entry) {
  auto d = driver();
  if (!d) return d.status();
  return check((*d)->cuFuncSetAttribute(function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, int(bytes)),
               fmt::format("{}: cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES = {})", entry, bytes));
}

Expected<DeviceProperties> properties_of(int ordinal) {
  static std::mutex mutex;
  static std::map<int, DeviceProperties> known;
  {
    std::lock_guard lock(mutex);
    if (auto it = known.find(ordinal); it != known.end()) return it->second;
  }
  auto props = query_device(ordinal);
  if (!props) return props.status();
  std::lock_guard lock(mutex);
  return known.emplace(ordinal, *props).first->second;
}

Expected<std::string> arch_of(int ordinal) {
  auto props = properties_of(ordinal);
  if (!props) return props.status();
  return nvrtc_arch(props->cc_major, props->cc_minor);
}

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
  auto nvrtc = jit::Nvrtc::get();
  if (!nvrtc) return nvrtc.status();
  const std::string key = kernel_key(source, *arch, **nvrtc);
  auto loaded = jit::find_loaded(key, entry, ordinal);
  if (!loaded) return loaded.status();
  if (*loaded) return std::move(**loaded);
  return jit::load_kernel(request_for(name, source, *arch), entry, ordinal, nullptr, key);
}

std::string threads_refusal(const jit::LoadedKernel& k, int threads, const Config& config) {
  if (k.max_threads_per_block > 0 && k.max_threads_per_block < threads) {
    return fmt::format("{} needs {} threads per block but its registers allow only {}", config.describe(), threads,
                       k.max_threads_per_block);
  }
  return {};
}

void note_once(std::vector<std::string>& said, std::string text) {
  for (const auto& w : said)
    if (w == text) return;
  std::fprintf(stderr, "tileforge: warning: %s\n", text.c_str());
  said.push_back(std::move(text));
}

}  // namespace tileforge::cuda::detail

// Names the kernels a vendor library call launched: CUPTI's kernel activity records around one call, and a parser of
// what cuBLAS's kernel names say (tile, BLOCK_K, stages, cluster).
#include "backends/native/cupti_kernels.hpp"

#include <cxxabi.h>
#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#ifdef TILEFORGE_HAVE_CUDA_TOOLKIT
#include <cupti_activity.h>
#include <cupti_result.h>

#include "hw/cuda_driver.hpp"
#endif

namespace tileforge::native_detail {
namespace {

// ---- the parser ------------------------------------------------------------------------------------------------

// The name's words: runs of letters and digits (a demangled name's punctuation and template brackets split words too).
std::vector<std::string_view> words(std::string_view name) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < name.size()) {
    while (i < name.size() && !std::isalnum(static_cast<unsigned char>(name[i]))) ++i;
    std::size_t j = i;
    while (j < name.size() && std::isalnum(static_cast<unsigned char>(name[j]))) ++j;
    if (j > i) out.push_back(name.substr(i, j - i));
    i = j;
  }
  return out;
}

// A positive count of at most 6 digits (larger is no tile size: the word is something else).
std::optional<int> count(std::string_view s) {
  if (s.empty() || s.size() > 6) return std::nullopt;
  int v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  if (v <= 0) return std::nullopt;
  return v;
}

// "256x128" or "128x256x64": two or more positive counts joined by 'x'; empty when the word is anything else.
std::vector<int> dims(std::string_view word) {
  std::vector<int> out;
  std::size_t start = 0;
  while (true) {
    const std::size_t x = word.find('x', start);
    auto v = count(word.substr(start, x == std::string_view::npos ? std::string_view::npos : x - start));
    if (!v) return {};
    out.push_back(*v);
    if (x == std::string_view::npos) break;
    start = x + 1;
  }
  return out.size() >= 2 ? out : std::vector<int>{};
}

bool has_word(const std::vector<std::string_view>& w, std::string_view what) {
  return std::find(w.begin(), w.end(), what) != w.end();
}

// The words that name their field: tilesize128x256x64 and stage4 (xmma), stages_32x5 (ampere_ and volta_ names),
// cluster2x1x1.
void read_named_fields(const std::vector<std::string_view>& w, VendorKernelInfo& info) {
  for (std::size_t i = 0; i < w.size(); ++i) {
    const std::string_view word = w[i];
    if (word.starts_with("tilesize")) {
      if (auto d = dims(word.substr(8)); !d.empty() && info.tile_m == 0) {
        info.tile_m = d[0], info.tile_n = d[1];
        if (d.size() >= 3) info.block_k = d[2];
      }
    } else if (word == "stages" && i + 1 < w.size()) {
      if (auto d = dims(w[i + 1]); d.size() == 2) info.block_k = d[0], info.stages = d[1];
    } else if (word.starts_with("stage")) {
      if (auto s = count(word.substr(5))) info.stages = *s;
    } else if (word.starts_with("cluster")) {
      if (auto d = dims(word.substr(7)); !d.empty()) info.cluster = d;
    }
  }
}

// Names that give their fields by position, the tile first: nvjet's MxN_BKxSTAGES_CMxCN, CUTLASS 2's MxN_BKxSTAGES,
// CUTLASS 3's MxNxBK_CMxCNxCK, and the older MxN names (ampere_..._128x64_ldg8_...), whose next words say no more.
void read_positional_fields(const std::vector<std::string_view>& w, VendorKernelInfo& info) {
  const bool nvjet = has_word(w, "nvjet");
  const bool cutlass2 = has_word(w, "cutlass");
  for (std::size_t i = 0; i < w.size(); ++i) {
    // The first word of digits and 'x' is the tile or nothing: a later one is never promoted to the tile.
    const std::string_view word = w[i];
    if (!std::isdigit(static_cast<unsigned char>(word[0])) || word.find('x') == std::string_view::npos ||
        word.find_first_not_of("0123456789x") != std::string_view::npos) {
      continue;
    }
    const auto tile = dims(word);
    if (tile.empty() || tile.size() > 3) return;
    info.tile_m = tile[0], info.tile_n = tile[1];
    auto next = [&](std::size_t at) { return at < w.size() ? dims(w[at]) : std::vector<int>{}; };
    if (tile.size() == 3) {
      info.block_k = tile[2];
      if (auto cluster = next(i + 1); cluster.size() == 3) info.cluster = cluster;
    } else if (nvjet || cutlass2) {
      if (auto ks = next(i + 1); ks.size() == 2) {
        if (info.block_k == 0) info.block_k = ks[0], info.stages = ks[1];
        if (auto cluster = next(i + 2); nvjet && cluster.size() == 2) info.cluster = cluster;
      }
    }
    return;
  }
}

#ifdef TILEFORGE_HAVE_CUDA_TOOLKIT
// ---- CUPTI, opened at run time ----------------------------------------------------------------------------------

// The entry points capture uses, typed by the CUDA 13 headers' declarations (decltype only: nothing links CUPTI).
struct CuptiApi {
  std::string path;
  decltype(&::cuptiActivityEnable) enable = nullptr;
  decltype(&::cuptiActivityDisable) disable = nullptr;
  decltype(&::cuptiActivityRegisterCallbacks) register_callbacks = nullptr;
  decltype(&::cuptiActivityFlushAll) flush_all = nullptr;
  decltype(&::cuptiActivityGetNextRecord) next_record = nullptr;
  decltype(&::cuptiGetResultString) result_string = nullptr;
  decltype(&::cuptiGetStreamIdEx) stream_id = nullptr;  // optional: without it records are not told apart by stream
};

Expected<CuptiApi> load_cupti(const std::string& path) {
  dlerror();
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* why = dlerror();
    return not_available(fmt::format("CUPTI could not be opened at {}: {}", path, why ? why : "unknown error"));
  }
  CuptiApi a;
  a.path = path;
  std::string missing;
  auto sym = [&](auto& fn, const char* name, bool required) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(h, name));
    if (!fn && required) missing += std::string(" ") + name;
  };
  sym(a.enable, "cuptiActivityEnable", true);
  sym(a.disable, "cuptiActivityDisable", true);
  sym(a.register_callbacks, "cuptiActivityRegisterCallbacks", true);
  sym(a.flush_all, "cuptiActivityFlushAll", true);
  sym(a.next_record, "cuptiActivityGetNextRecord", true);
  sym(a.result_string, "cuptiGetResultString", true);
  sym(a.stream_id, "cuptiGetStreamIdEx", false);
  // The handle stays open even so: a library that CUPTI may have attached to the driver is never unloaded.
  if (!missing.empty()) return not_available(fmt::format("CUPTI at {} lacks entry points:{}", path, missing));
  return a;
}

std::string result_text(const CuptiApi& api, CUptiResult r) {
  const char* text = nullptr;
  if (api.result_string(r, &text) != CUPTI_SUCCESS || !text) text = "unknown";
  return fmt::format("CUPTI result {} ({})", int(r), text);
}

// The kernels recorded while a capture is open. CUPTI calls the buffer callbacks on its own threads as well as in
// cuptiActivityFlushAll, so the records have their own lock; records delivered while no capture is open are dropped.
struct Recorded {
  uint64_t start = 0;
  uint32_t stream = 0;
  std::string name;
};
struct Collector {
  std::mutex mutex;
  bool open = false;
  std::vector<Recorded> records;
  const CuptiApi* api = nullptr;
};
// Never destroyed: CUPTI may hand buffers back while the process exits, after static destructors have run.
Collector& collector() {
  static auto* c = new Collector;
  return *c;
}

// The fields read from a kernel record, where every version of the record since CUpti_ActivityKernel4 has them.
static_assert(offsetof(CUpti_ActivityKernel10, start) == offsetof(CUpti_ActivityKernel4, start));
static_assert(offsetof(CUpti_ActivityKernel10, streamId) == offsetof(CUpti_ActivityKernel4, streamId));
static_assert(offsetof(CUpti_ActivityKernel10, name) == offsetof(CUpti_ActivityKernel4, name));

constexpr std::size_t kBufferBytes = 1u << 20;
constexpr std::size_t kRecordAlignment = 8;  // CUPTI's records need 8-byte aligned buffers

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(kRecordAlignment, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;  // a null buffer makes CUPTI drop records, never fail
  *max_records = 0;                     // as many as fit
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  std::unique_ptr<uint8_t, decltype(&std::free)> owned(buffer, &std::free);
  Collector& c = collector();
  std::lock_guard lock(c.mutex);
  if (!c.open || !c.api || !buffer) return;
  CUpti_Activity* record = nullptr;
  while (c.api->next_record(buffer, valid, &record) == CUPTI_SUCCESS) {
    if (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && record->kind != CUPTI_ACTIVITY_KIND_KERNEL) continue;
    // CUDA 13's layout (CUpti_ActivityKernel10). The fields read here (start, streamId, name) sit at the same offsets
    // in every kernel record version since CUpti_ActivityKernel4, so an older or newer CUPTI reads the same.
    const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
    c.records.push_back({k->start, k->streamId, k->name ? std::string(k->name) : std::string("(unnamed kernel)")});
  }
}

std::string demangled(const std::string& name) {
  if (!name.starts_with("_Z")) return name;
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> out(abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status),
                                                  &std::free);
  return status == 0 && out ? std::string(out.get()) : name;
}

// The opened library for the current $TILEFORGE_CUPTI (reopened when that changes, as tests do), with the buffer
// callbacks registered; or why there is none. Called under the capture lock.
Expected<const CuptiApi*> cupti_for(const void* beside) {
  struct Cached {
    std::string env;
    std::optional<Expected<CuptiApi>> api;
  };
  // Never freed, as the collector: the callbacks may read an api until the process is gone.
  static auto& cache = *new std::vector<std::unique_ptr<Cached>>;
  const char* env = std::getenv("TILEFORGE_CUPTI");
  const std::string key = env ? env : "";
  for (auto& c : cache) {
    if (c->env == key && c->api) return c->api->ok() ? Expected<const CuptiApi*>(&**c->api) : c->api->status();
  }
  auto& entry = cache.emplace_back(std::make_unique<Cached>());
  entry->env = key;
  std::string tried;
  for (const std::string& path : cupti_candidates(beside)) {
    auto api = load_cupti(path);
    if (!api) {
      tried += "; " + api.status().message();
      continue;
    }
    if (CUptiResult r = api->register_callbacks(buffer_requested, buffer_completed); r != CUPTI_SUCCESS) {
      tried += fmt::format("; cuptiActivityRegisterCallbacks ({}): {}", path, result_text(*api, r));
      continue;
    }
    entry->api = std::move(api);
    return &**entry->api;
  }
  entry->api = Expected<CuptiApi>(not_available(
      tried.empty() ? std::string("CUPTI not found") : fmt::format("CUPTI not found ({})", tried.substr(2))));
  return entry->api->status();
}

std::mutex& capture_mutex() {
  static std::mutex m;
  return m;
}

// CUPTI's id of `stream` in the current context, when CUPTI can tell (a null stream is not told apart).
std::optional<uint32_t> stream_id(const CuptiApi& api, void* stream) {
  if (!stream || !api.stream_id) return std::nullopt;
  uint32_t id = 0;
  if (api.stream_id(nullptr, static_cast<CUstream>(stream), 0, &id) != CUPTI_SUCCESS) return std::nullopt;
  return id;
}

Status synchronize(void* stream) {
  auto d = cuda::driver();
  if (!d) return d.status();
  return cuda::check((*d)->cuStreamSynchronize(static_cast<CUstream>(stream)), "cuStreamSynchronize");
}

// The kernels recorded for `stream` (all of them when streams cannot be told apart), in start order.
Expected<std::vector<std::string>> names_of(std::vector<Recorded> records, std::optional<uint32_t> stream) {
  std::stable_sort(records.begin(), records.end(), [](const Recorded& a, const Recorded& b) { return a.start < b.start; });
  std::vector<std::string> names;
  for (const Recorded& r : records) {
    if (!stream || r.stream == *stream) names.push_back(demangled(r.name));
  }
  // Should CUPTI's stream ids not match (none on the stream, some elsewhere), all of the window's kernels are the
  // best answer there is: the capture lock already keeps other captures out of it.
  if (names.empty()) {
    for (const Recorded& r : records) names.push_back(demangled(r.name));
  }
  if (names.empty()) return not_available("CUPTI recorded no kernel for the call");
  return names;
}
#endif  // TILEFORGE_HAVE_CUDA_TOOLKIT

}  // namespace

VendorKernelInfo parse_vendor_kernel(std::string_view name) {
  VendorKernelInfo info;
  if (name.find("splitKreduce") != std::string_view::npos || name.find("reduce_1Block") != std::string_view::npos) {
    info.split_k_reduction = true;
    return info;
  }
  const auto w = words(name);
  read_named_fields(w, info);
  if (info.tile_m == 0) read_positional_fields(w, info);
  return info;
}

std::string describe(const VendorKernelInfo& info) {
  if (info.split_k_reduction) return "split-K reduction";
  std::vector<std::string> parts;
  if (info.tile_m > 0) parts.push_back(fmt::format("tile {}x{}", info.tile_m, info.tile_n));
  if (info.block_k > 0) parts.push_back(fmt::format("BLOCK_K {}", info.block_k));
  if (info.stages > 0) parts.push_back(fmt::format("{} stage{}", info.stages, info.stages == 1 ? "" : "s"));
  if (!info.cluster.empty()) parts.push_back(fmt::format("cluster {}", fmt::join(info.cluster, "x")));
  return fmt::format("{}", fmt::join(parts, ", "));
}

std::string describe_kernels(const std::vector<std::string>& names) {
  std::vector<std::string> each;
  for (const std::string& n : names) {
    const std::string says = describe(parse_vendor_kernel(n));
    each.push_back(says.empty() ? n : fmt::format("{} ({})", n, says));
  }
  return fmt::format("{}", fmt::join(each, " + "));
}

bool kernel_capture_disabled() {
  const char* env = std::getenv("TILEFORGE_CUPTI");
  return env && std::string_view(env) == "0";
}

std::vector<std::string> cupti_candidates(const void* beside) {
  if (const char* env = std::getenv("TILEFORGE_CUPTI"); env && *env) {
    if (std::string_view(env) == "0") return {};
    return {env};
  }
  std::vector<std::string> out = {"libcupti.so.13"};
  Dl_info info{};
  if (beside && dladdr(beside, &info) && info.dli_fname && *info.dli_fname == '/') {
    namespace fs = std::filesystem;
    const fs::path dir = fs::path(info.dli_fname).parent_path();
    // The toolkit keeps CUPTI beside cuBLAS (lib/) or under extras/CUPTI/lib64; NVIDIA's pip wheels put it in the
    // same lib/ (nvidia/cu13/lib) or in a sibling package (nvidia/cublas/lib -> nvidia/cuda_cupti/lib).
    for (const fs::path& p : {dir, dir / "../extras/CUPTI/lib64", dir / "../../../extras/CUPTI/lib64",
                              dir / "../../cuda_cupti/lib", dir / "../../cu13/lib"}) {
      const std::string candidate = (p / "libcupti.so.13").lexically_normal().string();
      if (std::find(out.begin(), out.end(), candidate) == out.end()) out.push_back(candidate);
    }
  }
  return out;
}

#ifdef TILEFORGE_HAVE_CUDA_TOOLKIT
Status probe_cupti(const std::string& path) {
  auto api = load_cupti(path);
  return api ? Status{} : api.status();
}

CapturedLaunch capture_kernel_names(const std::function<Status()>& launch, void* stream, const void* beside) {
  CapturedLaunch out;
  if (kernel_capture_disabled()) {
    out.launched = launch();
    out.names = not_available("kernel capture turned off (TILEFORGE_CUPTI=0)");
    return out;
  }
  std::lock_guard capture_lock(capture_mutex());
  auto api = cupti_for(beside);
  if (!api) {
    out.launched = launch();
    out.names = api.status();
    return out;
  }
  const CuptiApi& cupti = **api;
  Collector& c = collector();
  {
    std::lock_guard lock(c.mutex);
    c.open = true;
    c.api = &cupti;
    c.records.clear();
  }
  const CUptiResult enabled = cupti.enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  // Asked once CUPTI is attached (before, it may not be initialized yet); without an id every record counts.
  const auto id = enabled == CUPTI_SUCCESS ? stream_id(cupti, stream) : std::nullopt;
  out.launched = launch();
  // Whatever happened, the records are flushed and the kind disabled before returning: timed calls run untraced.
  const Status synced = enabled == CUPTI_SUCCESS && out.launched ? synchronize(stream) : Status{};
  const CUptiResult flushed = enabled == CUPTI_SUCCESS ? cupti.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) : enabled;
  if (enabled == CUPTI_SUCCESS) cupti.disable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  std::vector<Recorded> records;
  {
    std::lock_guard lock(c.mutex);
    c.open = false;
    records.swap(c.records);
  }
  if (enabled != CUPTI_SUCCESS) {
    out.names = not_available("cuptiActivityEnable: " + result_text(cupti, enabled));
  } else if (!out.launched) {
    out.names = not_available("the call failed");
  } else if (!synced) {
    out.names = synced;
  } else if (flushed != CUPTI_SUCCESS) {
    out.names = not_available("cuptiActivityFlushAll: " + result_text(cupti, flushed));
  } else {
    out.names = names_of(std::move(records), id);
  }
  return out;
}
#else
Status probe_cupti(const std::string& path) {
  return not_available(fmt::format("CUPTI at {} not tried: this build has no CUDA support", path));
}

CapturedLaunch capture_kernel_names(const std::function<Status()>& launch, void*, const void*) {
  CapturedLaunch out;
  out.launched = launch();
  out.names = not_available("this build has no CUDA support");
  return out;
}
#endif

}  // namespace tileforge::native_detail

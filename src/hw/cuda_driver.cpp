// Opens libcuda at run time, resolves versioned entry points, and wraps memory, streams, events and launches.
#include "hw/cuda_driver.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <vector>

#include <fmt/format.h>

namespace tileforge::cuda {
namespace {

// Names for the codes a user meets before (or without) a working driver, when cuGetErrorName is unavailable.
const char* known_error_name(CUresult r) {
  switch (r) {
    case CUDA_SUCCESS: return "CUDA_SUCCESS";
    case CUDA_ERROR_INVALID_VALUE: return "CUDA_ERROR_INVALID_VALUE";
    case CUDA_ERROR_OUT_OF_MEMORY: return "CUDA_ERROR_OUT_OF_MEMORY";
    case CUDA_ERROR_NOT_INITIALIZED: return "CUDA_ERROR_NOT_INITIALIZED";
    case CUDA_ERROR_DEINITIALIZED: return "CUDA_ERROR_DEINITIALIZED";
    case CUDA_ERROR_STUB_LIBRARY: return "CUDA_ERROR_STUB_LIBRARY";
    case CUDA_ERROR_NO_DEVICE: return "CUDA_ERROR_NO_DEVICE";
    case CUDA_ERROR_INVALID_DEVICE: return "CUDA_ERROR_INVALID_DEVICE";
    case CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER: return "CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER";
    case CUDA_ERROR_DEVICE_UNAVAILABLE: return "CUDA_ERROR_DEVICE_UNAVAILABLE";
    case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH: return "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH";
    case CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE: return "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE";
    case CUDA_ERROR_NOT_FOUND: return "CUDA_ERROR_NOT_FOUND";
    case CUDA_ERROR_NOT_SUPPORTED: return "CUDA_ERROR_NOT_SUPPORTED";
    case CUDA_ERROR_UNKNOWN: return "CUDA_ERROR_UNKNOWN";
    default: return nullptr;
  }
}

const DriverApi* loaded_driver() {
  auto d = driver();
  return d ? *d : nullptr;
}

// Resolves one entry point for the requested CUDA version; records the first failure in `error`.
template <class Fn>
void resolve(PFN_cuGetProcAddress_v12000 get_proc, const char* name, int version, Fn& out, bool required,
             std::string& error) {
  void* fn = nullptr;
  CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SUCCESS;
  CUresult r = get_proc(name, &fn, version, CU_GET_PROC_ADDRESS_DEFAULT, &found);
  if (r == CUDA_SUCCESS && found == CU_GET_PROC_ADDRESS_SUCCESS && fn) {
    out = reinterpret_cast<Fn>(fn);
    return;
  }
  out = nullptr;
  if (!required || !error.empty()) return;
  if (r != CUDA_SUCCESS) {
    const char* n = known_error_name(r);
    error = fmt::format("cuGetProcAddress({}) failed: {}", name, n ? std::string(n) : fmt::format("CUresult {}", int(r)));
  } else if (found == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT) {
    error = fmt::format("the CUDA driver is too old for {} (CUDA {}.{} or later is needed)", name, version / 1000,
                        version % 1000 / 10);
  } else {
    error = fmt::format("the CUDA driver has no entry point {}", name);
  }
}

}  // namespace

Expected<DriverApi> load_driver(const std::string& path) {
  dlerror();
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* why = dlerror();
    return not_available(fmt::format("no CUDA driver: {} not found ({})", path, why ? why : "dlopen failed"));
  }
  DriverApi api;
  api.library = lib;
  api.library_path = path;
  // cuGetProcAddress_v2 (CUDA 12.0+) is the one symbol taken by name; everything else comes through it.
  auto get_proc = reinterpret_cast<PFN_cuGetProcAddress_v12000>(dlsym(lib, "cuGetProcAddress_v2"));
  auto get_version = reinterpret_cast<PFN_cuDriverGetVersion_v2020>(dlsym(lib, "cuDriverGetVersion"));
  if (!get_proc || !get_version)
    return not_available(fmt::format("CUDA driver {} is too old: it lacks cuGetProcAddress_v2 (CUDA 12.0 or later is needed)", path));
  if (CUresult r = get_version(&api.driver_version); r != CUDA_SUCCESS) {
    const char* n = known_error_name(r);
    return not_available(fmt::format("cuDriverGetVersion failed: {}", n ? n : fmt::format("CUresult {}", int(r))));
  }
  std::string error;
#define TF_RESOLVE(fn, version) resolve(get_proc, #fn, version, api.fn, true, error)
  TF_RESOLVE(cuGetErrorString, 6000);
  TF_RESOLVE(cuGetErrorName, 6000);
  TF_RESOLVE(cuInit, 2000);
  TF_RESOLVE(cuDriverGetVersion, 2020);
  TF_RESOLVE(cuDeviceGetCount, 2000);
  TF_RESOLVE(cuDeviceGet, 2000);
  TF_RESOLVE(cuDeviceGetName, 2000);
  TF_RESOLVE(cuDeviceGetAttribute, 2000);
  TF_RESOLVE(cuDeviceTotalMem, 3020);
  TF_RESOLVE(cuDevicePrimaryCtxRetain, 7000);
  TF_RESOLVE(cuDevicePrimaryCtxGetState, 7000);
  TF_RESOLVE(cuDevicePrimaryCtxRelease, 11000);
  TF_RESOLVE(cuCtxSetCurrent, 4000);
  TF_RESOLVE(cuCtxGetCurrent, 4000);
  TF_RESOLVE(cuCtxSynchronize, 2000);
  TF_RESOLVE(cuModuleLoadData, 2000);
  TF_RESOLVE(cuModuleUnload, 2000);
  TF_RESOLVE(cuModuleGetFunction, 2000);
  TF_RESOLVE(cuModuleGetGlobal, 3020);
  TF_RESOLVE(cuFuncGetAttribute, 2020);
  TF_RESOLVE(cuFuncSetAttribute, 9000);
  TF_RESOLVE(cuLaunchKernelEx, 11060);
  TF_RESOLVE(cuMemAlloc, 3020);
  TF_RESOLVE(cuMemFree, 3020);
  TF_RESOLVE(cuMemGetInfo, 3020);
  TF_RESOLVE(cuMemcpyHtoD, 3020);
  TF_RESOLVE(cuMemcpyDtoH, 3020);
  TF_RESOLVE(cuMemcpyDtoD, 3020);
  TF_RESOLVE(cuMemcpyDtoDAsync, 3020);
  TF_RESOLVE(cuMemsetD8, 3020);
  TF_RESOLVE(cuMemsetD32, 3020);
  TF_RESOLVE(cuMemsetD32Async, 3020);
  TF_RESOLVE(cuStreamCreate, 2000);
  TF_RESOLVE(cuStreamDestroy, 4000);
  TF_RESOLVE(cuStreamSynchronize, 2000);
  TF_RESOLVE(cuEventCreate, 2000);
  TF_RESOLVE(cuEventRecord, 2000);
  TF_RESOLVE(cuEventSynchronize, 2000);
  TF_RESOLVE(cuEventDestroy, 4000);
  TF_RESOLVE(cuPointerGetAttribute, 4000);
  TF_RESOLVE(cuPointerGetAttributes, 7000);
  TF_RESOLVE(cuOccupancyMaxActiveBlocksPerMultiprocessor, 6050);
#undef TF_RESOLVE
  // Same signature in both versions; the 12.8 one where the driver has it.
  resolve(get_proc, "cuEventElapsedTime", 12080, api.cuEventElapsedTime, false, error);
  if (!api.cuEventElapsedTime) {
    PFN_cuEventElapsedTime_v2000 v1 = nullptr;
    resolve(get_proc, "cuEventElapsedTime", 2000, v1, true, error);
    api.cuEventElapsedTime = v1;
  }
  resolve(get_proc, "cuTensorMapEncodeTiled", 12000, api.cuTensorMapEncodeTiled, false, error);
  resolve(get_proc, "cuOccupancyMaxActiveClusters", 11070, api.cuOccupancyMaxActiveClusters, false, error);
  if (!error.empty()) return not_available(error);

  if (CUresult r = api.cuInit(0); r != CUDA_SUCCESS) {
    const char* s = nullptr;
    api.cuGetErrorString(r, &s);
    const char* n = known_error_name(r);
    const char* n2 = nullptr;
    if (!n && api.cuGetErrorName(r, &n2) == CUDA_SUCCESS) n = n2;
    return not_available(fmt::format("cuInit failed: {}{}{}", n ? std::string(n) : fmt::format("CUresult {}", int(r)),
                                     s ? ": " : "", s ? s : ""));
  }
  return api;
}

Expected<const DriverApi*> driver() {
  static const Expected<DriverApi> loaded = [] {
    const char* override_path = std::getenv("TILEFORGE_CUDA_DRIVER");
    return load_driver(override_path && *override_path ? override_path : "libcuda.so.1");
  }();
  if (!loaded) return loaded.status();
  return &loaded.value();
}

std::string error_name(CUresult result) {
  if (const DriverApi* d = loaded_driver()) {
    const char* n = nullptr;
    if (d->cuGetErrorName(result, &n) == CUDA_SUCCESS && n) return n;
  }
  if (const char* n = known_error_name(result)) return n;
  return fmt::format("CUresult {}", int(result));
}

std::string error_string(CUresult result) {
  if (const DriverApi* d = loaded_driver()) {
    const char* s = nullptr;
    if (d->cuGetErrorString(result, &s) == CUDA_SUCCESS && s) return s;
  }
  return {};
}

namespace {
std::mutex lost_mutex;
std::string lost_first;  // the first call that saw the context lost
}  // namespace

bool context_lost_error(CUresult result) {
  switch (result) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_LAUNCH_FAILED:
      return true;
    default:
      return false;
  }
}

std::string context_lost() {
  std::lock_guard lock(lost_mutex);
  return lost_first;
}

Status check(CUresult result, std::string_view what, Code code) {
  if (result == CUDA_SUCCESS) return Status::Ok();
  std::string text = error_string(result);
  std::string message = fmt::format("{}: {}{}{}", what, error_name(result), text.empty() ? "" : ": ", text);
  if (context_lost_error(result)) {
    std::string first;
    {
      std::lock_guard lock(lost_mutex);
      if (lost_first.empty()) lost_first = fmt::format("{}: {}", what, error_name(result));
      first = lost_first;
    }
    message += fmt::format(" (a GPU kernel faulted, first reported as \"{}\": the CUDA context is lost and nothing more "
                           "can run on this GPU in this process)",
                           first);
  }
  return Status(code, std::move(message));
}

int device_count() {
  const DriverApi* d = loaded_driver();
  int n = 0;
  if (!d || d->cuDeviceGetCount(&n) != CUDA_SUCCESS) return 0;
  return n;
}

Expected<CUcontext> activate(int ordinal) {
  auto d = driver();
  if (!d) return d.status();
  const DriverApi& api = **d;
  static std::mutex mutex;
  static std::vector<CUcontext> retained;  // index = ordinal; kept until the process ends
  CUcontext ctx = nullptr;
  {
    std::lock_guard lock(mutex);
    int count = device_count();
    if (ordinal < 0 || ordinal >= count)
      return invalid_argument(fmt::format("cuda:{}: no such CUDA device ({} present{})", ordinal, count,
                                          count > 0 ? fmt::format(", ordinals 0..{}", count - 1) : ""));
    if (retained.size() < std::size_t(count)) retained.resize(count, nullptr);
    if (!retained[ordinal]) {
      CUdevice dev = 0;
      if (Status s = check(api.cuDeviceGet(&dev, ordinal), fmt::format("cuDeviceGet({})", ordinal), Code::not_available); !s) return s;
      if (Status s = check(api.cuDevicePrimaryCtxRetain(&retained[ordinal], dev),
                           fmt::format("cuDevicePrimaryCtxRetain(device {})", ordinal), Code::not_available); !s)
        return s;
    }
    ctx = retained[ordinal];
  }
  if (Status s = check(api.cuCtxSetCurrent(ctx), "cuCtxSetCurrent"); !s) return s;
  return ctx;
}

// ---- PrimaryContext ----------------------------------------------------------------------------

Expected<PrimaryContext> PrimaryContext::open(int ordinal) {
  auto d = driver();
  if (!d) return d.status();
  const DriverApi& api = **d;
  int count = device_count();
  if (ordinal < 0 || ordinal >= count)
    return invalid_argument(fmt::format("cuda:{}: no such CUDA device ({} present)", ordinal, count));
  PrimaryContext pc;
  if (Status s = check(api.cuDeviceGet(&pc.device_, ordinal), "cuDeviceGet", Code::not_available); !s) return s;
  if (Status s = check(api.cuDevicePrimaryCtxRetain(&pc.ctx_, pc.device_), "cuDevicePrimaryCtxRetain", Code::not_available); !s)
    return s;
  pc.ordinal_ = ordinal;
  if (Status s = check(api.cuCtxSetCurrent(pc.ctx_), "cuCtxSetCurrent"); !s) return s;
  return pc;
}

PrimaryContext::~PrimaryContext() {
  if (!ctx_) return;
  if (const DriverApi* d = loaded_driver()) d->cuDevicePrimaryCtxRelease(device_);
}

Expected<std::size_t> free_device_memory() {
  auto d = driver();
  if (!d) return d.status();
  std::size_t free = 0, total = 0;
  if (Status s = check((*d)->cuMemGetInfo(&free, &total), "cuMemGetInfo"); !s) return s;
  return free;
}

// ---- DeviceBuffer ------------------------------------------------------------------------------

Expected<DeviceBuffer> DeviceBuffer::allocate(std::size_t bytes) {
  auto d = driver();
  if (!d) return d.status();
  DeviceBuffer b;
  if (bytes == 0) return b;
  if (Status s = check((*d)->cuMemAlloc(&b.ptr_, bytes), fmt::format("cuMemAlloc({} bytes)", bytes)); !s) return s;
  b.size_ = bytes;
  return b;
}

DeviceBuffer::~DeviceBuffer() {
  if (!ptr_) return;
  if (const DriverApi* d = loaded_driver()) d->cuMemFree(ptr_);
}

Status DeviceBuffer::upload(const void* host, std::size_t bytes, std::size_t offset) {
  if (offset + bytes > size_)
    return invalid_argument(fmt::format("upload of {} bytes at offset {} exceeds the buffer's {} bytes", bytes, offset, size_));
  if (bytes == 0) return Status::Ok();
  const DriverApi* d = loaded_driver();
  if (Status s = check(d->cuMemcpyHtoD(ptr_ + offset, host, bytes), fmt::format("cuMemcpyHtoD({} bytes)", bytes)); !s) {
    return s;
  }
  // From pageable memory cuMemcpyHtoD returns once the bytes are staged, before the DMA into the buffer is done, and
  // a kernel on a non-blocking stream is not ordered after it: one that read C early (a short split-K in clusters
  // with beta, 2026-12-07) read some of it before it landed. The legacy stream's sync waits for the DMA.
  return check(d->cuStreamSynchronize(nullptr), "cuStreamSynchronize after cuMemcpyHtoD");
}

Status DeviceBuffer::download(void* host, std::size_t bytes, std::size_t offset) const {
  if (offset + bytes > size_)
    return invalid_argument(fmt::format("download of {} bytes at offset {} exceeds the buffer's {} bytes", bytes, offset, size_));
  if (bytes == 0) return Status::Ok();
  const DriverApi* d = loaded_driver();
  return check(d->cuMemcpyDtoH(host, ptr_ + offset, bytes), fmt::format("cuMemcpyDtoH({} bytes)", bytes));
}

Status DeviceBuffer::fill_bytes(unsigned char value) {
  if (size_ == 0) return Status::Ok();
  const DriverApi* d = loaded_driver();
  return check(d->cuMemsetD8(ptr_, value, size_), fmt::format("cuMemsetD8({} bytes)", size_));
}

// ---- Stream and Event --------------------------------------------------------------------------

Expected<Stream> Stream::create(unsigned flags) {
  auto d = driver();
  if (!d) return d.status();
  Stream s;
  if (Status st = check((*d)->cuStreamCreate(&s.s_, flags), "cuStreamCreate"); !st) return st;
  return s;
}

Stream::~Stream() {
  if (!s_) return;
  if (const DriverApi* d = loaded_driver()) d->cuStreamDestroy(s_);
}

Status Stream::synchronize() const {
  return check(loaded_driver()->cuStreamSynchronize(s_), "cuStreamSynchronize");
}

Expected<Event> Event::create(unsigned flags) {
  auto d = driver();
  if (!d) return d.status();
  Event e;
  if (Status st = check((*d)->cuEventCreate(&e.e_, flags), "cuEventCreate"); !st) return st;
  return e;
}

Event::~Event() {
  if (!e_) return;
  if (const DriverApi* d = loaded_driver()) d->cuEventDestroy(e_);
}

Status Event::record(CUstream stream) const { return check(loaded_driver()->cuEventRecord(e_, stream), "cuEventRecord"); }
Status Event::synchronize() const { return check(loaded_driver()->cuEventSynchronize(e_), "cuEventSynchronize"); }

Expected<float> Event::elapsed_ms(const Event& start, const Event& end) {
  float ms = 0;
  if (Status s = check(loaded_driver()->cuEventElapsedTime(&ms, start.e_, end.e_), "cuEventElapsedTime"); !s) return s;
  return ms;
}

// ---- pointers and launches ---------------------------------------------------------------------

namespace {
// The memory type of an address (CU_MEMORYTYPE_*), 0 for host memory CUDA does not know, without an API error for
// the latter.
CUresult memory_type(const DriverApi& api, CUdeviceptr address, unsigned int& type) {
  type = 0;
  CUpointer_attribute attr = CU_POINTER_ATTRIBUTE_MEMORY_TYPE;
  void* data[] = {&type};
  return api.cuPointerGetAttributes(1, &attr, data, address);
}
}  // namespace

Status check_device_pointer(const void* ptr, std::string_view what) {
  if (!ptr) return invalid_argument(fmt::format("{} is a null pointer", what));
  auto d = driver();
  if (!d) return d.status();
  unsigned int type = 0;
  CUresult r = memory_type(**d, reinterpret_cast<CUdeviceptr>(ptr), type);
  if (r == CUDA_ERROR_INVALID_VALUE || (r == CUDA_SUCCESS && type == 0))
    return invalid_argument(fmt::format("{} = {} is not device memory (host memory unknown to CUDA)", what, ptr));
  if (r == CUDA_ERROR_INVALID_CONTEXT)
    return invalid_argument(fmt::format("{} = {}: no CUDA context is current to check it in", what, ptr));
  // Messages are formatted only on failure: this runs on every GEMM call, inside timed reps.
  if (r != CUDA_SUCCESS) return check(r, fmt::format("cuPointerGetAttributes({} = {})", what, ptr), Code::invalid_argument);
  if (type == CU_MEMORYTYPE_HOST)
    return invalid_argument(fmt::format("{} = {} is pinned host memory, not device memory", what, ptr));
  if (type != CU_MEMORYTYPE_DEVICE && type != CU_MEMORYTYPE_UNIFIED)
    return invalid_argument(fmt::format("{} = {} is not device memory (memory type {})", what, ptr, type));
  return Status::Ok();
}

Expected<int> device_of_pointer(const void* ptr) {
  auto d = driver();
  if (!d) return d.status();
  const auto address = reinterpret_cast<CUdeviceptr>(ptr);
  unsigned int type = 0;
  CUresult r = memory_type(**d, address, type);
  if (r == CUDA_ERROR_INVALID_CONTEXT) {
    // No context is current on this thread. Device memory exists only where some GPU's primary context is active
    // (the runtime's cudaMalloc made it, perhaps on another thread): make such a one current and ask again. With
    // none active the memory is the host's, and no context is created for a caller that only uses the CPU.
    r = CUDA_ERROR_INVALID_VALUE;
    for (int ordinal = 0; ordinal < device_count(); ++ordinal) {
      CUdevice dev = 0;
      unsigned int flags = 0;
      int active = 0;
      if ((*d)->cuDeviceGet(&dev, ordinal) != CUDA_SUCCESS ||
          (*d)->cuDevicePrimaryCtxGetState(dev, &flags, &active) != CUDA_SUCCESS || !active) {
        continue;
      }
      if (auto ctx = activate(ordinal); !ctx) return ctx.status();
      r = memory_type(**d, address, type);
      break;
    }
  }
  if (r == CUDA_ERROR_INVALID_VALUE || (r == CUDA_SUCCESS && type == 0)) return -1;  // host memory CUDA does not know
  if (r != CUDA_SUCCESS) return check(r, "cuPointerGetAttributes(MEMORY_TYPE)", Code::invalid_argument);
  if (type != CU_MEMORYTYPE_DEVICE && type != CU_MEMORYTYPE_UNIFIED) return -1;  // page-locked host memory
  int ordinal = -1;
  r = (*d)->cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, address);
  if (r != CUDA_SUCCESS) return check(r, "cuPointerGetAttribute(DEVICE_ORDINAL)", Code::invalid_argument);
  return ordinal;
}

Status launch(CUfunction function, const LaunchDims& dims, void** params, std::string_view what) {
  auto d = driver();
  if (!d) return d.status();
  const DriverApi& api = **d;
  // NOTE: without this opt-in the driver refuses any launch asking for more than 48 KB of dynamic shared memory.
  // The limit is a property of the function, so it is raised once per function (and size), not per launch:
  // every microsecond the host spends between a timed rep's events and its kernel is counted as GPU time.
  // Modules stay loaded for the life of the process, so a function handle is never reused for another kernel.
  if (dims.dynamic_smem_bytes > 48 * 1024) {
    static std::mutex mutex;
    static std::vector<std::pair<CUfunction, unsigned>> raised;
    std::lock_guard<std::mutex> lock(mutex);
    auto it = std::find_if(raised.begin(), raised.end(), [&](const auto& e) { return e.first == function; });
    if (it == raised.end() || it->second < dims.dynamic_smem_bytes) {
      const CUresult r = api.cuFuncSetAttribute(function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                                int(dims.dynamic_smem_bytes));
      if (r != CUDA_SUCCESS)
        return check(r, fmt::format("{}: cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES = {})", what,
                                    dims.dynamic_smem_bytes));
      if (it == raised.end()) {
        raised.emplace_back(function, dims.dynamic_smem_bytes);
      } else {
        it->second = dims.dynamic_smem_bytes;
      }
    }
  }
  CUlaunchConfig config{};
  config.gridDimX = dims.grid[0];
  config.gridDimY = dims.grid[1];
  config.gridDimZ = dims.grid[2];
  config.blockDimX = dims.block[0];
  config.blockDimY = dims.block[1];
  config.blockDimZ = dims.block[2];
  config.sharedMemBytes = dims.dynamic_smem_bytes;
  config.hStream = dims.stream;
  CUlaunchAttribute attrs[3] = {};
  unsigned n = 0;
  if (dims.cluster[0] || dims.cluster[1] || dims.cluster[2]) {
    attrs[n].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attrs[n].value.clusterDim.x = std::max(1u, dims.cluster[0]);
    attrs[n].value.clusterDim.y = std::max(1u, dims.cluster[1]);
    attrs[n].value.clusterDim.z = std::max(1u, dims.cluster[2]);
    ++n;
  }
  if (dims.cooperative) {
    attrs[n].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
    attrs[n].value.cooperative = 1;
    ++n;
  }
  if (dims.programmatic) {
    attrs[n].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attrs[n].value.programmaticStreamSerializationAllowed = 1;
    ++n;
  }
  if (n > 0) {
    config.attrs = attrs;
    config.numAttrs = n;
  }
  const CUresult r = api.cuLaunchKernelEx(&config, function, params, nullptr);
  if (r == CUDA_SUCCESS) return Status::Ok();
  return check(r, fmt::format("{}: cuLaunchKernelEx(grid {}x{}x{}, block {}x{}x{}, smem {} B)", what, dims.grid[0],
                              dims.grid[1], dims.grid[2], dims.block[0], dims.block[1], dims.block[2],
                              dims.dynamic_smem_bytes));
}

}  // namespace tileforge::cuda

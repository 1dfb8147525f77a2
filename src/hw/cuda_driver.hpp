// The CUDA driver API opened at run time (dlopen + cuGetProcAddress), so one binary starts with or without a GPU.
#pragma once

#include <cuda.h>  // types and enums only: nothing here links against libcuda
#include <cudaTypedefs.h>  // PFN_<name>_v<version>: one typedef per ABI version of each entry point

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "core/expected.hpp"
#include "tileforge/tileforge.hpp"

namespace tileforge::cuda {

// One pointer per driver entry point. Each is typed with a PFN_<name>_v<version> typedef of cudaTypedefs.h and
// resolved with cuGetProcAddress for exactly that <version>, so the pointer has the ABI its type says. NOTE: asking
// for the headers' CUDA_VERSION instead is not safe: on the H200 with driver 580, cuGetProcAddress("cuCtxSynchronize",
// 13000) returns cuCtxSynchronize_v2(CUcontext) while cuda.h still declares cuCtxSynchronize(void); and plain dlsym
// of unversioned names gives legacy 32-bit ABIs (cuMemAlloc with 32-bit sizes). The member names are the API's
// names (cuda.h's macros may rename a member, e.g. to cuMemAlloc_v2, consistently everywhere).
struct DriverApi {
  void* library = nullptr;       // dlopen handle; never closed (the driver lives as long as the process)
  std::string library_path;      // what was opened ("libcuda.so.1" or the override)
  int driver_version = 0;        // cuDriverGetVersion: 13000 for CUDA 13.0

  PFN_cuGetErrorString_v6000 cuGetErrorString = nullptr;
  PFN_cuGetErrorName_v6000 cuGetErrorName = nullptr;
  PFN_cuInit_v2000 cuInit = nullptr;
  PFN_cuDriverGetVersion_v2020 cuDriverGetVersion = nullptr;
  PFN_cuDeviceGetCount_v2000 cuDeviceGetCount = nullptr;
  PFN_cuDeviceGet_v2000 cuDeviceGet = nullptr;
  PFN_cuDeviceGetName_v2000 cuDeviceGetName = nullptr;
  PFN_cuDeviceGetAttribute_v2000 cuDeviceGetAttribute = nullptr;
  PFN_cuDeviceTotalMem_v3020 cuDeviceTotalMem = nullptr;
  PFN_cuDevicePrimaryCtxRetain_v7000 cuDevicePrimaryCtxRetain = nullptr;
  PFN_cuDevicePrimaryCtxGetState_v7000 cuDevicePrimaryCtxGetState = nullptr;
  PFN_cuDevicePrimaryCtxRelease_v11000 cuDevicePrimaryCtxRelease = nullptr;
  PFN_cuCtxSetCurrent_v4000 cuCtxSetCurrent = nullptr;
  PFN_cuCtxGetCurrent_v4000 cuCtxGetCurrent = nullptr;
  PFN_cuCtxSynchronize_v2000 cuCtxSynchronize = nullptr;  // the current context
  PFN_cuModuleLoadData_v2000 cuModuleLoadData = nullptr;
  PFN_cuModuleUnload_v2000 cuModuleUnload = nullptr;
  PFN_cuModuleGetFunction_v2000 cuModuleGetFunction = nullptr;
  PFN_cuModuleGetGlobal_v3020 cuModuleGetGlobal = nullptr;  // a module's __device__ variable (diagnostics read them)
  PFN_cuFuncGetAttribute_v2020 cuFuncGetAttribute = nullptr;
  PFN_cuFuncSetAttribute_v9000 cuFuncSetAttribute = nullptr;
  PFN_cuLaunchKernelEx_v11060 cuLaunchKernelEx = nullptr;
  PFN_cuMemAlloc_v3020 cuMemAlloc = nullptr;
  PFN_cuMemFree_v3020 cuMemFree = nullptr;
  PFN_cuMemGetInfo_v3020 cuMemGetInfo = nullptr;  // free and total memory of the current context's device
  PFN_cuMemcpyHtoD_v3020 cuMemcpyHtoD = nullptr;
  PFN_cuMemcpyDtoH_v3020 cuMemcpyDtoH = nullptr;
  PFN_cuMemcpyDtoD_v3020 cuMemcpyDtoD = nullptr;
  PFN_cuMemcpyDtoDAsync_v3020 cuMemcpyDtoDAsync = nullptr;  // stream-ordered: what the bandwidth measurement times
  PFN_cuMemsetD8_v3020 cuMemsetD8 = nullptr;
  PFN_cuMemsetD32_v3020 cuMemsetD32 = nullptr;
  PFN_cuMemsetD32Async_v3020 cuMemsetD32Async = nullptr;  // zeroes a caller's workspace counters in stream order
  PFN_cuStreamCreate_v2000 cuStreamCreate = nullptr;
  PFN_cuStreamDestroy_v4000 cuStreamDestroy = nullptr;
  PFN_cuStreamSynchronize_v2000 cuStreamSynchronize = nullptr;
  PFN_cuEventCreate_v2000 cuEventCreate = nullptr;
  PFN_cuEventRecord_v2000 cuEventRecord = nullptr;
  PFN_cuEventSynchronize_v2000 cuEventSynchronize = nullptr;
  PFN_cuEventElapsedTime_v12080 cuEventElapsedTime = nullptr;  // the 2.0 form where the driver predates 12.8
  PFN_cuEventDestroy_v4000 cuEventDestroy = nullptr;
  PFN_cuPointerGetAttribute_v4000 cuPointerGetAttribute = nullptr;
  // Unlike cuPointerGetAttribute, answers CUDA_SUCCESS with a memory type of 0 for host memory CUDA does not know:
  // asking whether a caller's pointer is device memory is then not an API error (compute-sanitizer reports those).
  PFN_cuPointerGetAttributes_v7000 cuPointerGetAttributes = nullptr;
  PFN_cuOccupancyMaxActiveBlocksPerMultiprocessor_v6050 cuOccupancyMaxActiveBlocksPerMultiprocessor = nullptr;
  // Optional: nullptr when the driver predates it (CUDA 12.0); callers check before use.
  PFN_cuTensorMapEncodeTiled_v12000 cuTensorMapEncodeTiled = nullptr;
  PFN_cuOccupancyMaxActiveClusters_v11070 cuOccupancyMaxActiveClusters = nullptr;
};

// The process-wide driver table, loaded and cuInit'ed on first use, or why there is none:
//   not_available "no CUDA driver: libcuda.so.1 not found (...)"
//   not_available "cuInit failed: CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected"
// TILEFORGE_CUDA_DRIVER names another library file to open instead of libcuda.so.1.
Expected<const DriverApi*> driver();
// Opens `path` and resolves every entry point, then calls cuInit (uncached; driver() uses it once).
Expected<DriverApi> load_driver(const std::string& path);

// "CUDA_ERROR_OUT_OF_MEMORY"; works without a driver for the codes it knows, else "CUresult 999".
std::string error_name(CUresult result);
// "out of memory", or "" when no driver is loaded.
std::string error_string(CUresult result);
// Ok for CUDA_SUCCESS, else `code` with "what: CUDA_ERROR_X: text", e.g.
// "cuMemAlloc(1073741824 bytes): CUDA_ERROR_OUT_OF_MEMORY: out of memory".
Status check(CUresult result, std::string_view what, Code code = Code::launch_failed);

// Whether `result` is one of the errors after which the context is unusable for the rest of the process: a kernel
// faulted (illegal address or instruction, a trap, a failed device assert, ...), and every later call in the
// context answers the same error whatever it was.
bool context_lost_error(CUresult result);
// The first call whose check() saw the context lost ("cuStreamSynchronize: CUDA_ERROR_LAUNCH_FAILED"), or "" while
// it is not. check() adds to every such message that the context is lost and where that was first seen, so that
// the calls failing after a fault do not read as faults of their own; callers stop their remaining GPU work.
std::string context_lost();

int device_count();  // 0 without a driver or device

// Makes device `ordinal`'s primary context current on the calling thread. The context is retained once and
// kept for the life of the process (modules loaded into it stay valid); an ordinal out of range is refused.
Expected<CUcontext> activate(int ordinal);

// Free device memory of the current context's device, in bytes.
Expected<std::size_t> free_device_memory();

// Retains a device's primary context and makes it current for a scope; releases it at the end.
class PrimaryContext {
 public:
  static Expected<PrimaryContext> open(int ordinal);
  PrimaryContext() = default;
  PrimaryContext(PrimaryContext&& o) noexcept { swap(o); }
  PrimaryContext& operator=(PrimaryContext&& o) noexcept { PrimaryContext(std::move(o)).swap(*this); return *this; }
  ~PrimaryContext();
  CUcontext get() const { return ctx_; }
  int ordinal() const { return ordinal_; }

 private:
  void swap(PrimaryContext& o) noexcept { std::swap(ctx_, o.ctx_); std::swap(device_, o.device_); std::swap(ordinal_, o.ordinal_); }
  CUcontext ctx_ = nullptr;
  CUdevice device_ = 0;
  int ordinal_ = -1;
};

// Device memory owned by this object (cuMemAlloc / cuMemFree) in the current context.
class DeviceBuffer {
 public:
  static Expected<DeviceBuffer> allocate(std::size_t bytes);
  DeviceBuffer() = default;
  DeviceBuffer(DeviceBuffer&& o) noexcept { swap(o); }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept { DeviceBuffer(std::move(o)).swap(*this); return *this; }
  ~DeviceBuffer();
  CUdeviceptr get() const { return ptr_; }
  void* data() const { return reinterpret_cast<void*>(ptr_); }
  std::size_t size() const { return size_; }
  Status upload(const void* host, std::size_t bytes, std::size_t offset = 0);
  Status download(void* host, std::size_t bytes, std::size_t offset = 0) const;
  Status fill_bytes(unsigned char value);

 private:
  void swap(DeviceBuffer& o) noexcept { std::swap(ptr_, o.ptr_); std::swap(size_, o.size_); }
  CUdeviceptr ptr_ = 0;
  std::size_t size_ = 0;
};

class Stream {
 public:
  static Expected<Stream> create(unsigned flags = CU_STREAM_NON_BLOCKING);
  Stream() = default;
  Stream(Stream&& o) noexcept : s_(std::exchange(o.s_, nullptr)) {}
  Stream& operator=(Stream&& o) noexcept { std::swap(s_, o.s_); return *this; }
  ~Stream();
  CUstream get() const { return s_; }
  Status synchronize() const;

 private:
  CUstream s_ = nullptr;
};

class Event {
 public:
  static Expected<Event> create(unsigned flags = CU_EVENT_DEFAULT);
  Event() = default;
  Event(Event&& o) noexcept : e_(std::exchange(o.e_, nullptr)) {}
  Event& operator=(Event&& o) noexcept { std::swap(e_, o.e_); return *this; }
  ~Event();
  CUevent get() const { return e_; }
  Status record(CUstream stream) const;
  Status synchronize() const;
  // Milliseconds from `start` to `end` (both recorded and complete).
  static Expected<float> elapsed_ms(const Event& start, const Event& end);

 private:
  CUevent e_ = nullptr;
};

// Ok when `ptr` is device (or managed) memory the current context can address; otherwise invalid_argument
// naming `what`: "A = 0x7ffd... is not device memory (host memory not registered with CUDA)".
Status check_device_pointer(const void* ptr, std::string_view what);
// The ordinal of the GPU whose memory `ptr` points into (device or managed memory), -1 for host memory (pageable or
// page-locked); not_available without a driver. What Options::device "auto" decides by.
Expected<int> device_of_pointer(const void* ptr);

// The most blocks a grid holds along y and along z (x goes to 2^31 - 1): kernels with more rows or matrices than
// that walk the rest grid-stride.
inline constexpr int64_t kMaxGridYZ = 65535;

// Grid, block, dynamic shared memory, stream and optional thread-block cluster of one launch.
struct LaunchDims {
  unsigned grid[3] = {1, 1, 1};
  unsigned block[3] = {1, 1, 1};
  unsigned cluster[3] = {0, 0, 0};  // all 0: no cluster attribute
  unsigned dynamic_smem_bytes = 0;
  CUstream stream = nullptr;
  // All CTAs resident at once or the launch fails (CU_LAUNCH_ATTRIBUTE_COOPERATIVE): for kernels whose CTAs wait
  // for one another.
  bool cooperative = false;
  // May start before the previous kernel in the stream has finished (CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_
  // SERIALIZATION): for kernels that wait for it (griddepcontrol.wait) before reading what it wrote, so that their
  // launch and set-up overlap its tail.
  bool programmatic = false;
};

// cuLaunchKernelEx with the cluster, cooperative and programmatic attributes when asked; raises the function's
// dynamic shared memory limit first when the launch needs more than the default 48 KB. `what` names the kernel (and
// config) in errors.
Status launch(CUfunction function, const LaunchDims& dims, void** params, std::string_view what);

}  // namespace tileforge::cuda

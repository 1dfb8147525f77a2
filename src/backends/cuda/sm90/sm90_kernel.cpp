// The sm90 family's prepared kernel (sm90_kernel.hpp): its tensor maps, its launch, its refusals and its prepare.
#include "backends/cuda/sm90/sm90_kernel.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "backends/cuda/common/cuda_common.hpp"
#include "backends/cuda/kernels/sm90/timeline.cuh"
#include "core/output_path.hpp"

namespace tileforge::cuda::detail {
namespace {

// The L2 promotion of an operand's map: sm90_l2_promotion_bytes (sm90_kernel.hpp) as the driver names it.
CUtensorMapL2promotion l2_promotion(const void* base, int64_t ld, DType type) {
  switch (sm90_l2_promotion_bytes(reinterpret_cast<uintptr_t>(base), ld, type,
                                  std::getenv("TILEFORGE_SM90_L2_PROMOTION"))) {
    case 0: return CU_TENSOR_MAP_L2_PROMOTION_NONE;
    case 64: return CU_TENSOR_MAP_L2_PROMOTION_L2_64B;
    case 128: return CU_TENSOR_MAP_L2_PROMOTION_L2_128B;
    default: return CU_TENSOR_MAP_L2_PROMOTION_L2_256B;
  }
}

// A 2-D map of a 16-bit matrix: `inner` contiguous elements per line, `outer` lines `ld` elements apart, 128-byte
// swizzle, out-of-bounds elements read as zero.
Status encode_map(Sm90TmaDesc& out, const void* ptr, DType type, int64_t inner, int64_t outer, int64_t ld,
                  const int box[2], std::string_view what) {
  auto d = driver();
  if (!d) return d.status();
  if (!(*d)->cuTensorMapEncodeTiled) {
    return unsupported("the CUDA driver has no cuTensorMapEncodeTiled (CUDA 12.0 or later is needed for TMA)");
  }
  CUtensorMap map;
  const cuuint64_t dims[2] = {cuuint64_t(inner), cuuint64_t(outer)};
  const cuuint64_t strides[1] = {cuuint64_t(ld) * 2};
  const cuuint32_t boxes[2] = {cuuint32_t(box[0]), cuuint32_t(box[1])};
  const cuuint32_t element_strides[2] = {1, 1};
  const CUresult r = (*d)->cuTensorMapEncodeTiled(
      &map, type == DType::bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2,
      const_cast<void*>(ptr), dims, strides, boxes, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
      CU_TENSOR_MAP_SWIZZLE_128B, l2_promotion(ptr, ld, type), CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    return check(r, fmt::format("cuTensorMapEncodeTiled({}: {} x {} elements, ld {}, box {} x {})", what, inner, outer,
                                ld, box[0], box[1]));
  }
  std::memcpy(&out, &map, sizeof out);
  return {};
}

// The timeline's stamps (sm90/timeline.cuh's kStamp*, in their order) as the CSV's columns name them. Each row of the
// module's timeline holds kTimelineSlots words: each stamp's global-timer nanoseconds and SM clock64 cycles, then the
// units the CTA ran, its SM and the grid's CTAs.
constexpr const char* kTimelineStampNames[] = {"entry",  "setup",   "first_stage", "loop_end",
                                               "stored", "arrived", "fixup_end",   "exit"};
static_assert(std::size(kTimelineStampNames) == tf::sm90::kStamps, "a name for every stamp of sm90/timeline.cuh");

// TILEFORGE_SM90_TIMELINE: the launch's timeline, waited for and written to `path` as CSV (one row per CTA of the
// grid; a stamp a CTA never took, as the fix-up's where its last unit has none, is 0). A diagnostic: the wait and
// the file cost each call far more than the kernel itself.
Status write_timeline(const jit::LoadedKernel& kernel, CUstream stream, const char* path) {
  using namespace tf::sm90;
  auto d = driver();
  if (!d) return d.status();
  CUdeviceptr ptr = 0;
  size_t bytes = 0;
  if (Status s = check((*d)->cuModuleGetGlobal(&ptr, &bytes, kernel.module, "tf_sm90_timeline"),
                       "cuModuleGetGlobal(tf_sm90_timeline)");
      !s) {
    return s;
  }
  if (bytes != sizeof(unsigned long long) * kTimelineCtas * kTimelineSlots) {
    return unsupported(fmt::format("the kernel's timeline has {} bytes, not the {} this build reads", bytes,
                                   sizeof(unsigned long long) * kTimelineCtas * kTimelineSlots));
  }
  if (Status s = check((*d)->cuStreamSynchronize(stream), "cuStreamSynchronize (the timeline)"); !s) return s;
  std::vector<unsigned long long> w(bytes / sizeof(unsigned long long));
  if (Status s = check((*d)->cuMemcpyDtoH(w.data(), ptr, bytes), "cuMemcpyDtoH (the timeline)"); !s) return s;
  std::string csv = "cta,sm,units,grid";
  for (const char* name : kTimelineStampNames) csv += fmt::format(",{}_ns", name);
  for (const char* name : kTimelineStampNames) csv += fmt::format(",{}_cycles", name);
  csv += "\n";
  // Every CTA writes the grid's size; CTA 0 always exists.
  const unsigned long long grid = std::min<unsigned long long>(w[kTimelineGrid], kTimelineCtas);
  for (unsigned long long cta = 0; cta < grid; ++cta) {
    const unsigned long long* row = w.data() + cta * kTimelineSlots;
    csv += fmt::format("{},{},{},{}", cta, row[kTimelineSm], row[kTimelineUnits], row[kTimelineGrid]);
    for (int s = 0; s < kStamps; ++s) csv += fmt::format(",{}", row[2 * s]);
    for (int s = 0; s < kStamps; ++s) csv += fmt::format(",{}", row[2 * s + 1]);
    csv += "\n";
  }
  return replace_file(path, csv, "the sm90 timeline (TILEFORGE_SM90_TIMELINE)");
}

}  // namespace

int sm90_l2_promotion_bytes(uintptr_t base, int64_t ld, DType type, const char* override_value) {
  const std::string_view s = override_value ? override_value : "";
  if (s == "none") return 0;
  if (s == "64") return 64;
  if (s == "128") return 128;
  if (s == "256") return 256;
  const uint64_t row_bytes = uint64_t(ld) * size_of(type);
  return row_bytes % 128 == 0 && base % 128 == 0 ? 256 : 128;
}

Status Sm90Kernel::run(const Problem& p, const GemmArgs& args) const {
  // COPY_AB: A and B (1), A (2) or B (3) are copied first (on the caller's stream) into buffers whose rows are
  // 128-byte aligned, and the tensor maps read the copies: leading dimensions TMA cannot take, unaligned bases, or
  // rows off 128 bytes, which slow TMA's reads (an operand already on 128-byte rows is read in place).
  const void* a_ptr = args.a;
  const void* b_ptr = args.b;
  Problem lp = p;
  if (config().get("COPY_AB").value_or(0) != 0) {
    auto copied = copy_operands(copy_, p, args, copy_which(config()), lp);
    if (!copied) return copied.status();
    std::tie(a_ptr, b_ptr) = *copied;
  }
  const bool after_copy = a_ptr != args.a || b_ptr != args.b;
  // SWAP_AB: the kernel runs C^T = B^T A^T, the caller's B as its A (sm90_kernel_problem), writing C column by column.
  const Problem kp = sm90_kernel_problem(lp, config());
  if (kp.c_order == Order::col_major) std::swap(a_ptr, b_ptr);
  // TMA reads A and B from 16-byte aligned bases; the epilogue writes C by TMA where its base and rows are on 16
  // bytes, otherwise with its own stores (staged or direct), which need C aligned to its element only.
  const uintptr_t a = reinterpret_cast<uintptr_t>(a_ptr), b = reinterpret_cast<uintptr_t>(b_ptr),
                  c = reinterpret_cast<uintptr_t>(args.c);
  const uintptr_t c_align = size_of(p.precision.output);
  if (a % 16 != 0 || b % 16 != 0 || c % c_align != 0) {
    return run_fallback(p, args,
                        fmt::format("A, B or C is not aligned for {} (A and B need 16 bytes for TMA, C {} bytes)",
                                    config().describe(), c_align));
  }
  std::lock_guard lock(mutex_);
  if (!cached_ || cached_a_ != a_ptr || cached_b_ != b_ptr || cached_c_ != args.c || !same_shape(kp)) {
    if (Status s = build_params(kp, a_ptr, b_ptr, args.c); !s) return s;
    cached_ = true;
    cached_a_ = a_ptr;
    cached_b_ = b_ptr;
    cached_c_ = args.c;
    cached_p_ = kp;
  }
  params_.alpha = float(p.alpha);
  params_.beta = float(p.beta);
  const Sm90Schedule sched = sm90_schedule(p, config(), max_clusters_);
  params_.sk_tiles = int(sched.sk_tiles);
  // Held until the launch is issued: the stream's workspace is shared with other kernels (stream_workspace.hpp).
  Expected<WorkspaceLease> lease = WorkspaceLease{};
  if (sched.workspace_bytes > 0) {
    lease = workspaces_.get(args, sched.workspace_bytes, sched.counter_bytes, config().describe());
    if (!lease) return lease.status();
    params_.counters = static_cast<int*>(lease->counters);
    params_.partials = static_cast<float*>(lease->partials);
    // REDUCE 1: the sum tiles lie in the counters' zone, which every launch leaves zero.
    params_.sums = reinterpret_cast<float*>(static_cast<char*>(lease->counters) + sched.sums_offset);
  } else {
    params_.counters = nullptr;
    params_.partials = nullptr;
    params_.sums = nullptr;
  }
  void* kernel_args[] = {&params_};
  const int64_t cs = source_.cluster;
  LaunchDims dims;
  dims.grid[0] = unsigned(sched.clusters * cs);
  dims.block[0] = unsigned(source_.threads);
  dims.dynamic_smem_bytes = unsigned(source_.smem_bytes);
  if (cs > 1) dims.cluster[0] = unsigned(cs);
  dims.stream = static_cast<CUstream>(args.stream);
  // The shared sum has the slices of a tile wait for one another, so every CTA must be resident at once: a
  // cooperative launch, which fails rather than queue CTAs. Where the driver refuses it (another kernel holding
  // SMs, or no cooperative launch with clusters), the last slice to arrive sums instead, which waits for nothing.
  params_.shared_sum = sched.shared_sum && !shared_sum_refused_ ? 1 : 0;
  dims.cooperative = params_.shared_sum != 0 && cooperative_;
  // After the copy, the kernel's launch and barrier set-up overlap the copy's last CTAs: it waits for the copy
  // (griddepcontrol.wait) before its first global read. Not with the cooperative launch, whose residency guarantee
  // should not also wait on another grid's CTAs.
  dims.programmatic = after_copy && !dims.cooperative;
  Status launched = launch(loaded_.function, dims, kernel_args, source_.entry);
  if (!launched && dims.cooperative) {
    note_once(warnings_, fmt::format("{}: the cooperative launch of the shared split-K sum failed ({}); the last "
                                     "slice of each tile sums it instead",
                                     config().describe(), launched.message()));
    shared_sum_refused_ = true;
    params_.shared_sum = 0;
    dims.cooperative = false;
    launched = launch(loaded_.function, dims, kernel_args, source_.entry);
  }
  if (launched && source_.timeline) {
    if (const char* path = std::getenv("TILEFORGE_SM90_TIMELINE"); path && *path) {
      if (Status s = write_timeline(loaded_, dims.stream, path); !s) {
        note_once(warnings_, fmt::format("{}: no timeline written ({})", config().describe(), s.message()));
      }
    }
  }
  return launched;
}

bool Sm90Kernel::same_shape(const Problem& p) const {
  const Problem& q = cached_p_;
  return q.m == p.m && q.n == p.n && q.k == p.k && q.lda == p.lda && q.ldb == p.ldb && q.ldc == p.ldc &&
         q.layout == p.layout && q.precision.input == p.precision.input && q.precision.output == p.precision.output;
}

// `p` is the kernel's problem (sm90_kernel_problem): with SWAP_AB the transposed one, whose C is column-major.
Status Sm90Kernel::build_params(const Problem& p, const void* a, const void* b, void* c) const {
  std::memset(&params_, 0, sizeof params_);
  const DType in = p.precision.input;
  const Sm90Maps maps = sm90_maps(p);
  if (Status s = encode_map(params_.a, a, in, maps.a.inner, maps.a.outer, maps.a.ld, source_.a_box, "A"); !s) return s;
  if (Status s = encode_map(params_.b, b, in, maps.b.inner, maps.b.outer, maps.b.ld, source_.b_box, "B"); !s) return s;
  // The staging epilogues store C by TMA where its rows start on 16 bytes, otherwise with the warpgroups' own
  // stores (Params::c_staged_stores, no map).
  if (config().at("EPILOGUE") != kSm90EpilogueDirect && p.precision.output != DType::f32) {
    const std::size_t row_bytes = std::size_t(p.ldc) * size_of(p.precision.output);
    if (reinterpret_cast<uintptr_t>(c) % 16 == 0 && row_bytes % 16 == 0) {
      if (Status s = encode_map(params_.c, c, p.precision.output, maps.c.inner, maps.c.outer, maps.c.ld,
                                source_.c_box, "C");
          !s) {
        return s;
      }
    } else {
      params_.c_staged_stores = 1;
    }
  }
  params_.c_ptr = c;
  params_.m = int(p.m);
  params_.n = int(p.n);
  params_.k = int(p.k);
  params_.ldc = p.ldc;
  return {};
}

Status Sm90Kernel::run_fallback(const Problem& p, const GemmArgs& args, const std::string& why) const {
  const CudaKernel* k = nullptr;
  {
    std::lock_guard lock(mutex_);
    if (!fallback_) {
      const Config c = sm80_heuristic(p, profile_);
      auto prepared = prepare_sm80(p, c, ordinal_, arch_);
      if (!prepared) {
        return Status(prepared.status().code(), fmt::format("{}, and the sm80 fallback could not be prepared: {}", why,
                                                            prepared.status().message()));
      }
      fallback_ = std::move(*prepared);
    }
    k = fallback_.get();
    note_once(warnings_, fmt::format("{}: running the sm80 family's {} instead", why, k->config().describe()));
  }
  return run_sm80(*k, p, args);
}

std::string sm90_refusal(const Config& config, const jit::FunctionResources* r, const std::vector<std::string>& warnings) {
  if (r && r->spills()) {
    return fmt::format("{} spills ({} bytes stored, {} loaded; {} registers)", config.describe(), r->spill_store_bytes,
                       r->spill_load_bytes, r->registers);
  }
  for (const std::string& w : warnings) {
    if (w.find("wgmma") != std::string::npos && w.find("serializ") != std::string::npos) {
      return fmt::format("{}: ptxas serializes its wgmma instructions ({})", config.describe(), w);
    }
  }
  return {};
}

Expected<std::unique_ptr<Kernel>> prepare_sm90(const Problem& p, const Config& config, const Device& device,
                                               const std::string& arch) {
  if (arch != "sm_90a") {
    return unsupported(fmt::format("the sm90 family's kernels need an sm_90a GPU; this one compiles for {}", arch));
  }
  const Sm90Source src = sm90_source(p, config);
  auto loaded = compile_and_load(src.entry, src.source, src.entry, device.ordinal);
  if (!loaded) return loaded.status();
  if (std::string why = sm90_refusal(config, &loaded->resources, loaded->warnings); !why.empty()) {
    return unsupported(why + ": refused before it runs");
  }
  if (std::string why = threads_refusal(*loaded, src.threads, config); !why.empty()) return unsupported(why);
  auto props = properties_of(device.ordinal);
  if (!props) return props.status();
  int max_clusters = std::max(1, props->sm_count / src.cluster);
  auto d = driver();
  if (!d) return d.status();
  // The shared memory the kernel asks for, raised before the occupancy query (which reads it from the function).
  if (Status s = allow_dynamic_smem(loaded->function, src.smem_bytes, src.entry); !s) return s;
  if (src.cluster > 1 && (*d)->cuOccupancyMaxActiveClusters) {
    CUlaunchConfig lc{};
    lc.gridDimX = unsigned(max_clusters * src.cluster);
    lc.gridDimY = lc.gridDimZ = 1;
    lc.blockDimX = unsigned(src.threads);
    lc.blockDimY = lc.blockDimZ = 1;
    lc.sharedMemBytes = unsigned(src.smem_bytes);
    CUlaunchAttribute attr{};
    attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attr.value.clusterDim.x = unsigned(src.cluster);
    attr.value.clusterDim.y = attr.value.clusterDim.z = 1;
    lc.attrs = &attr;
    lc.numAttrs = 1;
    int n = 0;
    if ((*d)->cuOccupancyMaxActiveClusters(&n, loaded->function, &lc) == CUDA_SUCCESS && n > 0) {
      max_clusters = std::min(max_clusters, n);
    }
  }
  auto kernel = std::make_unique<Sm90Kernel>(config, device.ordinal, std::move(*loaded), src, max_clusters,
                                             device.profile, arch);
  // Diagnostics only, read when a kernel is prepared (TILEFORGE_SM90_SHARED_SUM): "0", the last slice sums every
  // split-K tile even where the shared sum could run, to time the two and compare their bits in one process;
  // "uncooperative", unsafe beside other kernels, the shared sum launched without the cooperative attribute, to time
  // what that attribute costs.
  if (const char* v = std::getenv("TILEFORGE_SM90_SHARED_SUM")) {
    if (std::string_view(v) == "0") kernel->keep_last_slice_sum();
    if (std::string_view(v) == "uncooperative") kernel->launch_uncooperatively();
  }
  if (config.get("COPY_AB").value_or(0) != 0) {
    if (auto copier = kernel->operand_copy().copier(); !copier) return copier.status();
  }
  return std::unique_ptr<Kernel>(std::move(kernel));
}

}  // namespace tileforge::cuda::detail

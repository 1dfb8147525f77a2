// The sm80 family's prepared kernel (sm80_kernel.hpp): its instances, their resource checks, and its launch.
#include "backends/cuda/sm80/sm80_kernel.hpp"

#include <cstdint>
#include <tuple>

#include <fmt/format.h>

#include "backends/cuda/common/cuda_common.hpp"
#include "hw/cuda_driver.hpp"

namespace tileforge::cuda::detail {
namespace {

// Mirrors tf::sm80::Params in kernels/sm80/gemm.cuh field for field (passed by value as the only argument).
struct Sm80Params {
  const void* a;
  const void* b;
  void* c;
  int m, n, k;
  long long lda, ldb, ldc;
  long long stride_a, stride_b, stride_c;
  float alpha, beta;
  int* counters;
  float* partials;
  int sk_tiles;
};

}  // namespace

int prepared_vec(const Config& config) { return config.at("COPY_AB") ? 16 : int(config.at("VEC_BYTES")); }

Expected<const CudaKernel::Instance*> CudaKernel::instance(const Problem& p, int vec, int epi) const {
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

Status CudaKernel::check_resources(const jit::LoadedKernel& k, const GeneratedKernel& gen) const {
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
  if (std::string why = threads_refusal(k, gen.threads, config()); !why.empty()) return unsupported(why);
  return {};
}

// STREAM_K's persistent grid: every SM's resident blocks of the compiled instance (its registers, threads and shared
// memory, as the driver counts them), so that the grid is one wave.
Expected<int64_t> stream_k_workers(const CudaKernel::Instance& inst, int ordinal) {
  auto props = properties_of(ordinal);
  if (!props) return props.status();
  const std::string& entry = inst.generated.entry;
  if (Status s = allow_dynamic_smem(inst.loaded.function, inst.generated.smem_bytes, entry); !s) return s;
  auto d = driver();
  if (!d) return d.status();
  int blocks = 0;
  if (Status s = check((*d)->cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, inst.loaded.function,
                                                                          inst.generated.threads,
                                                                          std::size_t(inst.generated.smem_bytes)),
                       fmt::format("{}: cuOccupancyMaxActiveBlocksPerMultiprocessor", entry));
      !s) {
    return s;
  }
  return int64_t(props->sm_count) * std::max(1, blocks);
}

Expected<std::unique_ptr<CudaKernel>> prepare_sm80(const Problem& p, const Config& config, int ordinal,
                                                   const std::string& arch) {
  auto kernel = std::make_unique<CudaKernel>(config, ordinal, arch);
  auto inst = kernel->instance(p, prepared_vec(config), epilogue_vec(p));
  if (!inst) return inst.status();
  if (sm80_stream_k(config)) {
    auto workers = stream_k_workers(**inst, ordinal);
    if (!workers) return workers.status();
    kernel->set_workers(*workers);
  }
  if (config.at("COPY_AB")) {
    if (auto copier = kernel->operand_copy().copier(); !copier) return copier.status();
  }
  return kernel;
}

Status run_sm80(const CudaKernel& kernel, const Problem& p, const GemmArgs& args) {
  const Config& c = kernel.config();
  const bool copy = c.at("COPY_AB") != 0 && p.k > 0;
  const void* a = args.a;
  const void* b = args.b;
  Problem launch_p = p;
  int vec = int(c.at("VEC_BYTES"));
  if (copy) {
    auto copied = copy_operands(kernel.operand_copy(), p, args, copy_which(c), launch_p);
    if (!copied) return copied.status();
    std::tie(a, b) = *copied;
    vec = 16;
  } else {
    const int allowed = max_vec_bytes(p, args.a, args.b);
    if (allowed < vec) {
      note_once(kernel.warnings, fmt::format("A or B is only {}-byte aligned; {} runs with {}-byte loads instead of {}",
                                             allowed, c.describe(), allowed, vec));
      vec = allowed;
    }
  }
  const int epi = epilogue_vec(p, args.c);
  auto inst = kernel.instance(p, vec, epi);
  if (!inst) return inst.status();

  Sm80Params params{};
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
  // Held until the launch is issued: the stream's workspace is shared with other kernels (stream_workspace.hpp).
  const Sm80Workspace ws = sm80_workspace(p, c, kernel.workers());
  Expected<WorkspaceLease> lease = WorkspaceLease{};
  if (ws.workspace_bytes > 0) {
    lease = kernel.workspaces().get(args, ws.workspace_bytes, ws.counter_bytes, c.describe());
    if (!lease) return lease.status();
    params.counters = static_cast<int*>(lease->counters);
    params.partials = static_cast<float*>(lease->partials);
  }
  void* kernel_args[] = {&params};
  LaunchDims dims;
  if (sm80_stream_k(c)) {
    // One wave of persistent blocks over the tiles (batch 1: the space refuses STREAM_K with a batch).
    const Sm80StreamK s = sm80_stream_k_schedule(p, c, kernel.workers());
    params.sk_tiles = int(s.sk_tiles);
    dims.grid[0] = unsigned(s.workers);
  } else {
    const int64_t bm = c.at("BLOCK_M"), bn = c.at("BLOCK_N");
    dims.grid[0] = unsigned(((p.m + bm - 1) / bm) * ((p.n + bn - 1) / bn));
    dims.grid[1] = unsigned(p.batch);
    dims.grid[2] = unsigned(sm80_split_k(c));
  }
  dims.block[0] = unsigned((*inst)->generated.threads);
  dims.dynamic_smem_bytes = unsigned((*inst)->generated.smem_bytes);
  dims.stream = static_cast<CUstream>(args.stream);
  return launch((*inst)->loaded.function, dims, kernel_args, (*inst)->generated.entry);
}

}  // namespace tileforge::cuda::detail

// COPY_AB's operand copy (operand_copy.hpp): which operands need it, their padded buffers, and the copy's launch.
#include "backends/cuda/common/operand_copy.hpp"

#include <algorithm>
#include <cstdint>
#include <tuple>

#include "backends/cuda/cuda_backend.hpp"
#include "backends/cuda/kernels/common/copy_job.cuh"

namespace tileforge::cuda::detail {
namespace {

// Each operand copied by COPY_AB gets rows padded to a multiple of this many elements (128 bytes), so that the
// copies start every row on a full cache line and the GEMM can read them 16 bytes at a time.
constexpr int64_t kCopyRowAlign = 64;

int64_t round_up(int64_t v, int64_t to) { return (v + to - 1) / to * to; }

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

// Whether an operand must be copied for COPY_AB: its rows do not start on 32-byte sectors (TMA reads such rows
// slowly, sm90_cost_constants.hpp), or its base or batch stride is off 16 bytes. An operand whose rows are on sectors
// is read in place, which saves its read and write.
bool needs_copy(const StoredShape& shape, const void* base, int64_t batch) {
  return (shape.ld * 2) % 32 != 0 || reinterpret_cast<uintptr_t>(base) % 16 != 0 ||
         (batch > 1 && (shape.stride * 2) % 16 != 0);
}

}  // namespace

Expected<std::pair<void*, void*>> OperandCopy::buffers(CUstream stream, std::size_t a_bytes,
                                                       std::size_t b_bytes) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto& [a, b] = buffers_[stream];
  for (auto [buf, bytes] : {std::pair{&a, a_bytes}, std::pair{&b, b_bytes}}) {
    if (buf->size() < bytes) {
      auto fresh = DeviceBuffer::allocate(bytes);
      if (!fresh) return fresh.status();
      *buf = std::move(*fresh);
    }
  }
  return std::pair<void*, void*>{a.data(), b.data()};
}

Expected<void*> OperandCopy::copier() const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!copier_) {
    auto k = utility_kernel("tf_copy_u16", ordinal_);
    if (!k) return k.status();
    copier_ = k->function;
  }
  return copier_;
}

CopyWhich copy_which(const Config& c) {
  const int64_t v = c.get("COPY_AB").value_or(0);
  return {v == 1 || v == 2, v == 1 || v == 3};
}

uint64_t copy_bytes(const Problem& p, CopyWhich which) {
  double bytes = 0;
  for (auto [wanted, shape] : {std::pair{which.a, stored_a(p)}, std::pair{which.b, stored_b(p)}}) {
    if (wanted) bytes += double(round_up(shape.cols, kCopyRowAlign)) * double(shape.rows) * double(p.batch) * 2.0;
  }
  return bytes >= 1.8e19 ? UINT64_MAX : uint64_t(bytes);
}

Expected<std::pair<const void*, const void*>> copy_operands(const OperandCopy& copy, const Problem& p,
                                                            const GemmArgs& args, CopyWhich which,
                                                            Problem& launch_p) {
  const StoredShape sa = stored_a(p), sb = stored_b(p);
  const bool copy_a = which.a && needs_copy(sa, args.a, p.batch), copy_b = which.b && needs_copy(sb, args.b, p.batch);
  const int64_t lda = round_up(sa.cols, kCopyRowAlign), ldb = round_up(sb.cols, kCopyRowAlign);
  const int64_t stride_a = lda * sa.rows, stride_b = ldb * sb.rows;
  auto bufs = copy.buffers(static_cast<CUstream>(args.stream), copy_a ? std::size_t(stride_a * p.batch * 2) : 0,
                           copy_b ? std::size_t(stride_b * p.batch * 2) : 0);
  if (!bufs) return bufs.status();
  auto copier = copy.copier();
  if (!copier) return copier.status();
  std::pair<const void*, const void*> read{args.a, args.b};
  tf::util::CopyJob job{};
  job.batch = int(p.batch);
  int64_t rows = 0, cols = 0;
  for (auto [wanted, src, dst, shape, ld_dst, stride_dst] :
       {std::tuple{copy_a, args.a, bufs->first, sa, lda, stride_a},
        std::tuple{copy_b, args.b, bufs->second, sb, ldb, stride_b}}) {
    if (!wanted) continue;
    tf::util::CopyMatrix& m = job.matrix[job.count++];
    m.src = static_cast<const unsigned short*>(src);
    m.dst = static_cast<unsigned short*>(dst);
    // One matrix has no batch stride to honour (it may be anything).
    m.ld_src = shape.ld;
    m.stride_src = p.batch > 1 ? shape.stride : 0;
    m.ld_dst = ld_dst;
    m.stride_dst = stride_dst;
    m.rows = int(shape.rows);
    m.cols = int(shape.cols);
    rows = std::max(rows, shape.rows);
    cols = std::max(cols, shape.cols);
  }
  if (job.count > 0) {
    // Both copies in one launch (blockIdx.z: matrix x batch), 16 bytes per thread and row, rows kRows at a time
    // (copy_rows_u16): about two waves of blocks at 8 per SM, each walking rows gridDim.y apart.
    constexpr int64_t kThreads = 256, kRows = 4, kBlocksWanted = 2048;
    LaunchDims dims;
    dims.block[0] = unsigned(kThreads);
    dims.grid[0] = unsigned(std::min<int64_t>((cols + kThreads * 8 - 1) / (kThreads * 8), 64));
    const int64_t per_row_band = int64_t(dims.grid[0]) * job.count * p.batch;
    const int64_t bands = std::min<int64_t>((rows + kRows - 1) / kRows, kMaxGridYZ);
    dims.grid[1] = unsigned(std::clamp<int64_t>(kBlocksWanted / per_row_band, 1, bands));
    dims.grid[2] = unsigned(std::min<int64_t>(job.count * p.batch, kMaxGridYZ));  // the kernel walks the rest
    dims.stream = static_cast<CUstream>(args.stream);
    void* kargs[] = {&job};
    if (Status st = launch(static_cast<CUfunction>(*copier), dims, kargs, "tf_copy_u16"); !st) return st;
  }
  if (copy_a) {
    launch_p.lda = lda;
    launch_p.stride_a = stride_a;
    read.first = bufs->first;
  }
  if (copy_b) {
    launch_p.ldb = ldb;
    launch_p.stride_b = stride_b;
    read.second = bufs->second;
  }
  return read;
}

}  // namespace tileforge::cuda::detail

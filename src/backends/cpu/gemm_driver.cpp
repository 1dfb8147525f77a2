// The BLIS-style loop nest around the micro-kernel: jc (NC) -> pc (KC) -> ic (MC) -> jr (NR) -> ir (MR),
// with B packed once per (jc, pc) by all threads together and A packed per thread into its own L2.
#include "backends/cpu/gemm_driver.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "backends/cpu/thread_pool.hpp"
#include "core/half.hpp"

namespace tileforge::cpu {
namespace {

// Largest MR x NR of any micro-kernel (AVX-512 14x32, 6x64), for the on-stack edge tile.
constexpr int kMaxTile = 512;

// Grow-only, 64-byte aligned float storage, so that steady-state calls allocate and page-fault nothing.
class AlignedBuffer {
 public:
  ~AlignedBuffer() { std::free(data_); }
  float* get(std::size_t floats) {
    if (floats > capacity_) {
      std::free(data_);
      const std::size_t bytes = (floats * sizeof(float) + 63) / 64 * 64;
      data_ = static_cast<float*>(std::aligned_alloc(64, bytes));
      if (!data_) throw std::bad_alloc();
      capacity_ = floats;
    }
    return data_;
  }

 private:
  float* data_ = nullptr;
  std::size_t capacity_ = 0;
};

// An operand as the packing routines see it: element (mn, k) at base[mn * s_mn + k * s_k].
struct View {
  const void* base;
  DType type;
  int64_t s_mn, s_k;
  const void* at(int64_t mn, int64_t k) const {
    return static_cast<const char*>(base) + (mn * s_mn + k * s_k) * int64_t(size_of(type));
  }
};

// One GEMM on f32 C: C = alpha * A * B + beta * C.
struct Job {
  const MicroKernel* uk;
  int64_t m, n, k;
  View a, b;
  float* c;
  int64_t ldc;
  float alpha, beta;
  int64_t mc, kc, nc;
  bool pack_b;
};

struct Range {
  int64_t begin, end;
};
// The t-th of `parts` near-equal shares of [0, count).
Range share(int64_t count, int parts, int t) { return {count * t / parts, count * (t + 1) / parts}; }

thread_local AlignedBuffer t_a_block;    // MC x KC block of A, this thread's own
thread_local AlignedBuffer t_b_edge;     // one KC x NR micro-panel (B's last, partial panel when B is read in place)
thread_local AlignedBuffer t_b_private;  // KC x NC panel of B when this thread runs a GEMM alone
AlignedBuffer g_b_shared;                // KC x NC panel of B shared by a team
AlignedBuffer g_c_workspace;             // f32 accumulator for f16/bf16 outputs
std::mutex g_gemm_mutex;                 // one team GEMM at a time: the shared buffers and the pool are global

// Writes an edge micro-tile (computed with alpha = 1, beta = 0) into C with alpha and beta.
void merge_tile(const float* tile, int nr, int64_t mrem, int64_t nrem, float* c, int64_t ldc, float alpha,
                float beta) {
  for (int64_t i = 0; i < mrem; ++i) {
    float* row = c + i * ldc;
    const float* t = tile + i * nr;
    if (beta == 0.0f) {
      for (int64_t j = 0; j < nrem; ++j) row[j] = alpha * t[j];
    } else {
      for (int64_t j = 0; j < nrem; ++j) row[j] = alpha * t[j] + beta * row[j];
    }
  }
}

float load_f32(const void* base, DType t, int64_t i) {
  switch (t) {
    case DType::f32: return static_cast<const float*>(base)[i];
    case DType::bf16: return bf16_to_float(static_cast<const uint16_t*>(base)[i]);
    case DType::f16: return f16_to_float(static_cast<const uint16_t*>(base)[i]);
  }
  return 0;
}

void store_f32(void* base, DType t, int64_t i, float v) {
  switch (t) {
    case DType::f32: static_cast<float*>(base)[i] = v; return;
    case DType::bf16: static_cast<uint16_t*>(base)[i] = float_to_bf16(v); return;
    case DType::f16: static_cast<uint16_t*>(base)[i] = float_to_f16(v); return;
  }
}

// C = alpha * W + beta * C on rows [r0, r1) and columns [c0, c1), converting to C's type; W is f32 with
// leading dimension n. With w == nullptr the product is empty (K = 0 or alpha = 0): C = beta * C.
void finish_block(const Problem& p, const float* w, void* c, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  const DType t = p.precision.output;
  const float alpha = float(p.alpha), beta = float(p.beta);
  for (int64_t i = r0; i < r1; ++i) {
    for (int64_t j = c0; j < c1; ++j) {
      const int64_t idx = i * p.ldc + j;
      const float prod = w ? alpha * w[i * p.n + j] : 0.0f;
      store_f32(c, t, idx, beta == 0.0f ? prod : prod + beta * load_f32(c, t, idx));
    }
  }
}
void finish_rows(const Problem& p, const float* w, void* c, int64_t r0, int64_t r1) {
  finish_block(p, w, c, r0, r1, 0, p.n);
}

// The micro-kernel loops (jr, ir) for rows [ic, ic + mcur) of C, whose A block is packed in a_block, against
// micro-panels [p0, p1) of B's (jc, pc) block: packed in b_block (NR x kcur each, in order), or read in place when
// b_block is null (then b_edge holds a packed copy of a partial last panel).
void compute_block(const Job& job, const float* a_block, int64_t ic, int64_t mcur, int64_t jc, int64_t ncur,
                   int64_t pc, int64_t kcur, float beta, const float* b_block, int64_t p0, int64_t p1,
                   float* b_edge) {
  const MicroKernel& uk = *job.uk;
  const int mr = uk.mr, nr = uk.nr;
  alignas(64) float tile[kMaxTile];
  for (int64_t p = p0; p < p1; ++p) {
    const int64_t j = jc + p * nr;
    const int64_t nrem = std::min<int64_t>(nr, ncur - p * nr);
    const float* bp;
    int64_t b_stride;
    ComputeFn compute;
    if (b_block) {
      bp = b_block + p * nr * kcur;
      b_stride = nr;
      compute = uk.compute;
    } else if (nrem == nr) {
      bp = static_cast<const float*>(job.b.at(j, pc));
      b_stride = job.b.s_k;
      compute = uk.compute_stream;
    } else {
      // Reading a partial panel in place would run past column N: pack just this one.
      uk.pack_b(nrem, kcur, job.b.at(j, pc), job.b.s_mn, job.b.s_k, job.b.type, b_edge);
      bp = b_edge;
      b_stride = nr;
      compute = uk.compute;
    }
    for (int64_t ir = 0; ir < mcur; ir += mr) {
      const int64_t mrem = std::min<int64_t>(mr, mcur - ir);
      float* cp = job.c + (ic + ir) * job.ldc + j;
      const float* ap = a_block + ir * kcur;
      if (mrem == mr && nrem == nr) {
        compute(kcur, ap, bp, b_stride, cp, job.ldc, job.alpha, beta);
      } else {
        compute(kcur, ap, bp, b_stride, tile, nr, 1.0f, 0.0f);
        merge_tile(tile, nr, mrem, nrem, cp, job.ldc, job.alpha, beta);
      }
    }
  }
}

// The whole loop nest on the calling thread alone; b_panel holds KC x NC floats when the job packs B.
void gemm_serial(const Job& job, float* b_panel) {
  const MicroKernel& uk = *job.uk;
  const int mr = uk.mr, nr = uk.nr;
  float* a_block = t_a_block.get(std::size_t(std::min(job.mc, job.m) + mr) * job.kc);
  float* b_edge = job.pack_b ? nullptr : t_b_edge.get(std::size_t(nr) * job.kc);
  for (int64_t jc = 0; jc < job.n; jc += job.nc) {
    const int64_t ncur = std::min(job.nc, job.n - jc);
    const int64_t n_panels = (ncur + nr - 1) / nr;
    for (int64_t pc = 0; pc < job.k; pc += job.kc) {
      const int64_t kcur = std::min(job.kc, job.k - pc);
      const float beta = pc == 0 ? job.beta : 1.0f;
      if (job.pack_b) uk.pack_b(ncur, kcur, job.b.at(jc, pc), job.b.s_mn, job.b.s_k, job.b.type, b_panel);
      for (int64_t ic = 0; ic < job.m; ic += job.mc) {
        const int64_t mcur = std::min(job.mc, job.m - ic);
        uk.pack_a(mcur, kcur, job.a.at(ic, pc), job.a.s_mn, job.a.s_k, job.a.type, a_block);
        compute_block(job, a_block, ic, mcur, jc, ncur, pc, kcur, beta, job.pack_b ? b_panel : nullptr, 0,
                      n_panels, b_edge);
      }
    }
  }
}

// A team GEMM without barriers, so that a thread the OS deschedules (a busy machine, a virtual CPU taken away)
// delays the others by the work it holds, not by a phase: C is cut into units (row blocks x column parts of
// column chunks), claimed one at a time by whichever threads are running, each unit running every K block of
// its chunk in order. A thread that reaches a K block whose B is not packed yet claims the block's packing
// pieces first, then waits only for pieces that others hold. Two chunk buffers alternate, so packing chunk c
// waits only for chunk c - 2's units.
class TeamGemm {
 public:
  TeamGemm(const Job& job, int nthreads, const Problem* finish, float* w, void* c)
      : job_(job), finish_(finish), w_(w), c_(c) {
    const int64_t nr = job.uk->nr;
    const TeamSplit split =
        team_split(job.m, job.n, job.k, job.uk->mr, job.uk->nr, job.mc, job.nc, job.pack_b, nthreads);
    rows_ = split.rows;
    row_units_ = split.row_units;
    col_parts_ = split.col_parts;
    chunk_cols_ = split.chunk_cols;
    chunks_ = split.chunks;
    units_per_chunk_ = row_units_ * col_parts_;
    const int64_t chunk = chunk_cols_;
    k_blocks_ = (job.k + job.kc - 1) / job.kc;
    const int64_t chunk_panels = (chunk + nr - 1) / nr;
    pack_pieces_ = std::clamp<int64_t>(2 * nthreads, 1, chunk_panels);
    if (job.pack_b) {
      const std::size_t slab = std::size_t(chunk_panels * nr) * std::size_t(job.k);
      float* base = g_b_shared.get(slab * std::min<int64_t>(2, chunks_));
      slabs_[0] = base;
      slabs_[1] = chunks_ > 1 ? base + slab : base;
      pack_state_ = std::make_unique<PackState[]>(std::size_t(chunks_ * k_blocks_));
    }
    units_done_ = std::make_unique<std::atomic<int64_t>[]>(std::size_t(chunks_));
  }

  // Run by every thread that joins: claims units until none are left.
  void work() {
    const int64_t nr = job_.uk->nr;
    float* a_block = t_a_block.get(std::size_t(std::min(job_.mc, rows_) + job_.uk->mr) * job_.kc);
    float* b_edge = job_.pack_b ? nullptr : t_b_edge.get(std::size_t(nr) * job_.kc);
    const int64_t total = chunks_ * units_per_chunk_;
    for (int64_t u = next_unit_.fetch_add(1); u < total; u = next_unit_.fetch_add(1)) {
      const int64_t c = u / units_per_chunk_, in_chunk = u % units_per_chunk_;
      const int64_t r = in_chunk / col_parts_, s = in_chunk % col_parts_;
      const int64_t jc = c * chunk_cols_, ncur = std::min(chunk_cols_, job_.n - jc);
      const int64_t n_panels = (ncur + nr - 1) / nr;
      const Range part = share(n_panels, int(col_parts_), int(s));
      const int64_t r0 = r * rows_, r1 = std::min(job_.m, r0 + rows_);
      if (part.end > part.begin) {
        for (int64_t q = 0; q < k_blocks_; ++q) {
          const int64_t pc = q * job_.kc, kcur = std::min(job_.kc, job_.k - pc);
          const float beta = pc == 0 ? job_.beta : 1.0f;
          const float* b_block = job_.pack_b ? packed(c, q) : nullptr;
          for (int64_t ic = r0; ic < r1; ic += job_.mc) {
            const int64_t mcur = std::min(job_.mc, r1 - ic);
            job_.uk->pack_a(mcur, kcur, job_.a.at(ic, pc), job_.a.s_mn, job_.a.s_k, job_.a.type, a_block);
            compute_block(job_, a_block, ic, mcur, jc, ncur, pc, kcur, beta, b_block, part.begin, part.end, b_edge);
          }
        }
        if (finish_) {
          finish_block(*finish_, w_, c_, r0, r1, jc + part.begin * nr, std::min(jc + ncur, jc + part.end * nr));
        }
      }
      units_done_[c].fetch_add(1, std::memory_order_acq_rel);
      units_done_[c].notify_all();
    }
  }

 private:
  struct PackState {
    std::atomic<int64_t> next{0}, done{0};
  };

  // B's (chunk c, K block q) packed, this thread packing the pieces nobody has claimed yet.
  const float* packed(int64_t c, int64_t q) {
    const int64_t nr = job_.uk->nr;
    const int64_t jc = c * chunk_cols_, ncur = std::min(chunk_cols_, job_.n - jc);
    const int64_t n_panels = (ncur + nr - 1) / nr, npad = n_panels * nr;
    const int64_t pc = q * job_.kc, kcur = std::min(job_.kc, job_.k - pc);
    float* block = slabs_[c % 2] + pc * npad;
    PackState& st = pack_state_[c * k_blocks_ + q];
    const int64_t pieces = std::min(pack_pieces_, n_panels);
    if (st.done.load(std::memory_order_acquire) == pieces) return block;
    for (int64_t i = st.next.fetch_add(1); i < pieces; i = st.next.fetch_add(1)) {
      // The buffer held chunk c - 2 until all of its units finished.
      if (c >= 2) wait_at_least(units_done_[c - 2], units_per_chunk_);
      const Range piece = share(n_panels, int(pieces), int(i));
      const int64_t cols = std::min(ncur - piece.begin * nr, (piece.end - piece.begin) * nr);
      job_.uk->pack_b(cols, kcur, job_.b.at(jc + piece.begin * nr, pc), job_.b.s_mn, job_.b.s_k, job_.b.type,
                      block + piece.begin * nr * kcur);
      st.done.fetch_add(1, std::memory_order_acq_rel);
      st.done.notify_all();
    }
    wait_at_least(st.done, pieces);
    return block;
  }

  const Job& job_;
  const Problem* finish_;  // 16-bit C: each unit rounds its own block of the f32 workspace w_ into c_
  float* w_;
  void* c_;
  int64_t rows_ = 0, row_units_ = 0, col_parts_ = 0, units_per_chunk_ = 0;
  int64_t chunk_cols_ = 0, chunks_ = 0, k_blocks_ = 0, pack_pieces_ = 0;
  float* slabs_[2] = {nullptr, nullptr};
  std::unique_ptr<PackState[]> pack_state_;
  std::unique_ptr<std::atomic<int64_t>[]> units_done_;
  std::atomic<int64_t> next_unit_{0};
};

Job make_job(const Problem& p, const void* a, const void* b, float* c, int64_t ldc, float alpha, float beta,
             const CpuPlan& plan) {
  const bool a_row = a_row_major(p.layout), b_row = b_row_major(p.layout);
  Job job{};
  job.uk = plan.kernel;
  job.m = p.m;
  job.n = p.n;
  job.k = p.k;
  job.a = View{a, p.precision.input, a_row ? p.lda : 1, a_row ? 1 : p.lda};
  job.b = View{b, p.precision.input, b_row ? 1 : p.ldb, b_row ? p.ldb : 1};
  job.c = c;
  job.ldc = ldc;
  job.alpha = alpha;
  job.beta = beta;
  job.mc = plan.mc;
  job.kc = plan.kc;
  job.nc = plan.nc;
  // Reading B in place needs f32 elements contiguous along N; otherwise it is packed whatever the plan says.
  job.pack_b = plan.pack_b || p.precision.input != DType::f32 || !b_row;
  return job;
}

// One batch entry: a team of nthreads threads (or a single thread) computes it.
void run_entry(const Problem& p, const void* a, const void* b, void* c, const CpuPlan& plan, int nthreads,
               bool alone) {
  if (p.m == 0 || p.n == 0) return;
  ThreadPool& pool = ThreadPool::instance();
  const bool f32_out = p.precision.output == DType::f32;
  const bool empty_product = p.k == 0 || p.alpha == 0.0;
  if (empty_product) {
    // BLAS semantics: A and B are not read; C = beta * C (beta == 0 writes zeros without reading C).
    if (alone) {
      finish_rows(p, nullptr, c, 0, p.m);
    } else {
      // Rows in chunks claimed as threads arrive.
      const int64_t rows = std::max<int64_t>(1, (p.m + 4 * nthreads - 1) / (4 * nthreads));
      std::atomic<int64_t> next{0};
      pool.run(nthreads, [&] {
        for (int64_t r0 = next.fetch_add(rows); r0 < p.m; r0 = next.fetch_add(rows))
          finish_rows(p, nullptr, c, r0, std::min(p.m, r0 + rows));
      });
    }
    return;
  }

  float* w = nullptr;
  Job job;
  if (f32_out) {
    job = make_job(p, a, b, static_cast<float*>(c), p.ldc, float(p.alpha), float(p.beta), plan);
  } else {
    // 16-bit C: accumulate all of K in an f32 workspace, then apply alpha, beta and round once.
    thread_local AlignedBuffer t_c_workspace;
    w = (alone ? t_c_workspace : g_c_workspace).get(std::size_t(p.m) * p.n);
    job = make_job(p, a, b, w, p.n, 1.0f, 0.0f, plan);
  }

  if (alone) {
    const std::size_t width = std::size_t(std::min(job.nc, job.n) + job.uk->nr);  // NC columns padded to NR
    float* b_panel = job.pack_b ? t_b_private.get(std::size_t(job.kc) * width) : nullptr;
    gemm_serial(job, b_panel);
    if (!f32_out) finish_rows(p, w, c, 0, p.m);
    return;
  }
  if (rows_split(p.m, plan.kernel->mr, nthreads) == 1) {
    // Few rows: threads take whole column chunks, each packing its own A and B. Chunks are claimed as threads
    // arrive, so a worker that wakes late (a sleeping thread can take milliseconds to wake on a virtual machine)
    // only does less of the work instead of holding everyone up.
    const int nr = plan.kernel->nr;
    const int64_t chunk = std::max<int64_t>(4 * nr, (p.n + 4 * nthreads - 1) / (4 * nthreads) + nr - 1) / nr * nr;
    std::atomic<int64_t> next{0};
    pool.run(nthreads, [&] {
      const int64_t width = std::min(chunk, job.nc);
      float* b_panel = job.pack_b ? t_b_private.get(std::size_t(job.kc) * std::size_t(width + nr)) : nullptr;
      for (int64_t j0 = next.fetch_add(chunk); j0 < p.n; j0 = next.fetch_add(chunk)) {
        Job sub = job;
        sub.n = std::min(chunk, p.n - j0);
        sub.nc = std::min(job.nc, sub.n);
        sub.b.base = job.b.at(j0, 0);
        sub.c = job.c + j0;
        gemm_serial(sub, b_panel);
        if (!f32_out) finish_block(p, w, c, 0, p.m, j0, j0 + sub.n);
      }
    });
    return;
  }
  TeamGemm team(job, nthreads, f32_out ? nullptr : &p, w, c);
  pool.run(nthreads, [&] { team.work(); });
}

const void* offset(const void* base, DType t, int64_t elements) {
  return static_cast<const char*>(base) + elements * int64_t(size_of(t));
}

}  // namespace

// Largest packed-B chunk (K x chunk columns, f32; 64 MB): bigger problems run in column chunks, each of which
// packs A again (4096^3 in 4 chunks of 16 MB packed A 4 times and ran 8% slower on the Zen 5 guest).
constexpr int64_t kChunkFloats = int64_t(16) << 20;

uint64_t run_workspace_bytes(const Problem& q, int64_t mr, int64_t nr, int64_t mc, int64_t kc, int64_t nc,
                             bool pack_b, int threads) {
  if (q.m <= 0 || q.n <= 0 || q.k <= 0) return 0;
  const bool packs_b = pack_b || q.precision.input != DType::f32 || !b_row_major(q.layout);
  const double width = double(std::min(nc, q.n) + nr);
  double floats = q.precision.output == DType::f32 ? 0.0 : double(q.m) * double(q.n);  // 16-bit C's accumulator
  if (packs_b) floats += std::min(double(q.k) * width, double(kChunkFloats));            // the team's chunk of B
  // per thread: the block of A holds at most M rows (the driver sizes it by min(MC, M)), and a panel of B
  floats += double(std::max(1, threads)) * (double(std::min(mc, q.m) + mr) * double(kc) + double(kc) * width);
  const double bytes = floats * sizeof(float);
  return bytes >= 1.8e19 ? UINT64_MAX : uint64_t(bytes);
}

TeamSplit team_split(int64_t m, int64_t n, int64_t k, int mr, int nr, int64_t mc, int64_t nc, bool pack_b,
                     int threads) {
  threads = std::max(1, threads);
  TeamSplit best;
  int64_t chunk = std::max<int64_t>(1, std::min(n, nc));
  if (pack_b && k * chunk > kChunkFloats) {
    chunk = std::max<int64_t>(nr, kChunkFloats / std::max<int64_t>(1, k) / nr * nr);
  }
  best.chunk_cols = chunk;
  best.chunks = (n + chunk - 1) / chunk;
  const int64_t m_panels = (m + mr - 1) / mr, chunk_panels = (chunk + nr - 1) / nr;
  // Two to four units per thread: enough that a late or slow thread's share is small, few enough that every
  // unit's A block spans many micro-tiles of each B micro-panel it streams. Of those, the cut that keeps the
  // team busiest when every thread runs (whole rounds of equal units, no short last row block), the larger
  // units on a tie.
  double best_busy = -1;
  for (int64_t per_thread = 4; per_thread >= 2; --per_thread) {
    const int64_t target = per_thread * threads;
    const int64_t h_panels =
        std::min(std::max<int64_t>(1, (m_panels + target - 1) / target), std::max<int64_t>(1, mc / mr));
    TeamSplit s = best;
    s.rows = h_panels * mr;
    s.row_units = (m + s.rows - 1) / s.rows;
    s.col_parts = std::clamp<int64_t>((target + s.row_units - 1) / s.row_units, 1, chunk_panels);
    const int64_t units = s.row_units * s.col_parts, rounds = (units + threads - 1) / threads;
    const double busy = double(m_panels) / double(s.row_units * h_panels) * double(units) / double(threads * rounds);
    if (busy > best_busy + 1e-9) {
      best_busy = busy;
      best = s;
    }
  }
  return best;
}

WorkSplit work_split(const Problem& q, int64_t mr, int64_t nr, int64_t mc, int64_t nc, bool pack_b, int threads) {
  auto cdiv = [](int64_t a, int64_t b) { return (a + b - 1) / b; };
  threads = std::max(1, threads);
  WorkSplit w;
  const int64_t m_panels = cdiv(q.m, mr);
  const int64_t nc_eff = std::min(nc, q.n), n_panels = cdiv(nc_eff, nr);
  if (threads == 1 || rows_split(q.m, int(mr), threads) == 1) {
    // One thread, or few rows: each thread's share of the columns with all rows (the driver claims narrower
    // chunks; the share is what each thread ends up with on a quiet machine).
    w.rows = m_panels * mr;
    w.row_units = 1;
    w.col_parts = threads;
    w.a_packs = cdiv(q.n, nc);
    w.balance_n = double(n_panels) / double(threads * cdiv(n_panels, threads));
    return w;
  }
  const TeamSplit s = team_split(q.m, q.n, q.k, int(mr), int(nr), mc, nc, pack_b, threads);
  w.rows = s.rows;
  w.row_units = s.row_units;
  w.row_blocks = int(std::min<int64_t>(threads, s.row_units));
  w.col_parts = s.col_parts;
  w.chunks = s.chunks;
  w.a_packs = s.chunks * s.col_parts;
  // Threads claim units as they run: the team waits at the end for the last round's units only.
  const int64_t units = s.row_units * s.col_parts, rounds = cdiv(units, threads);
  w.balance_m = double(m_panels) / double(s.row_units * (s.rows / mr));
  w.balance_n = double(units) / double(threads * rounds);
  return w;
}

// Rows of C go to tm threads when there are enough MR-panels for each; otherwise columns are split.
int rows_split(int64_t m, int mr, int nthreads) {
  const int64_t m_panels = (m + mr - 1) / mr;
  for (int d = nthreads; d > 1; --d)
    if (nthreads % d == 0 && m_panels >= 2 * d) return d;
  return 1;
}

void run_gemm(const Problem& p, const void* a, const void* b, void* c, const CpuPlan& plan) {
  ThreadPool& pool = ThreadPool::instance();
  int nthreads = std::clamp(plan.threads > 0 ? plan.threads : pool.max_threads(), 1, pool.max_threads());
  // Below ~2 MFLOP per entry a parallel region costs more than it saves.
  const double entry_flops = 2.0 * double(p.m) * double(p.n) * double(p.k);
  if (entry_flops < 2.0e6) nthreads = 1;
  const DType in = p.precision.input, out = p.precision.output;

  std::lock_guard<std::mutex> lock(g_gemm_mutex);
  if (p.batch >= nthreads && nthreads > 1 && entry_flops < 5.0e7) {
    // Many small entries: threads claim whole entries as they arrive and run them alone.
    std::atomic<int64_t> next{0};
    pool.run(nthreads, [&] {
      for (int64_t e = next.fetch_add(1); e < p.batch; e = next.fetch_add(1)) {
        run_entry(p, offset(a, in, e * p.stride_a), offset(b, in, e * p.stride_b),
                  const_cast<void*>(offset(c, out, e * p.stride_c)), plan, 1, true);
      }
    });
    return;
  }
  for (int64_t e = 0; e < p.batch; ++e) {
    run_entry(p, offset(a, in, e * p.stride_a), offset(b, in, e * p.stride_b),
              const_cast<void*>(offset(c, out, e * p.stride_c)), plan, nthreads, nthreads == 1);
  }
}

}  // namespace tileforge::cpu

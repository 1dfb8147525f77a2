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

// Thread `tid` of a team of `nthreads` split as tm (rows) x tn (columns); b_panel is the team's shared B panel.
void gemm_team(const Job& job, int tid, int nthreads, int tm, Barrier& barrier, float* b_panel) {
  const MicroKernel& uk = *job.uk;
  const int mr = uk.mr, nr = uk.nr;
  const int tn = nthreads / tm;
  const int ti = tid / tn, tj = tid % tn;
  const int64_t m_panels = (job.m + mr - 1) / mr;
  const Range my_panels_m = share(m_panels, tm, ti);
  const int64_t m0 = my_panels_m.begin * mr, m1 = std::min(job.m, my_panels_m.end * mr);
  float* a_block = t_a_block.get(std::size_t(std::min(job.mc, std::max<int64_t>(m1 - m0, 1)) + mr) * job.kc);
  float* b_edge = job.pack_b ? nullptr : t_b_edge.get(std::size_t(nr) * job.kc);
  alignas(64) float tile[kMaxTile];

  for (int64_t jc = 0; jc < job.n; jc += job.nc) {
    const int64_t ncur = std::min(job.nc, job.n - jc);
    const int64_t n_panels = (ncur + nr - 1) / nr;
    const Range my_panels_n = share(n_panels, tn, tj);
    for (int64_t pc = 0; pc < job.k; pc += job.kc) {
      const int64_t kcur = std::min(job.kc, job.k - pc);
      const float beta = pc == 0 ? job.beta : 1.0f;
      if (job.pack_b) {
        // All threads pack the KC x NC panel together, each a share of its NR micro-panels.
        const Range q = share(n_panels, nthreads, tid);
        if (q.end > q.begin) {
          const int64_t cols = std::min(ncur - q.begin * nr, (q.end - q.begin) * nr);
          uk.pack_b(cols, kcur, job.b.at(jc + q.begin * nr, pc), job.b.s_mn, job.b.s_k, job.b.type,
                    b_panel + q.begin * nr * kcur);
        }
        barrier.arrive_and_wait();
      }
      for (int64_t ic = m0; ic < m1; ic += job.mc) {
        const int64_t mcur = std::min(job.mc, m1 - ic);
        uk.pack_a(mcur, kcur, job.a.at(ic, pc), job.a.s_mn, job.a.s_k, job.a.type, a_block);
        for (int64_t p = my_panels_n.begin; p < my_panels_n.end; ++p) {
          const int64_t j = jc + p * nr;
          const int64_t nrem = std::min<int64_t>(nr, ncur - p * nr);
          const float* bp;
          int64_t b_stride;
          ComputeFn compute;
          if (job.pack_b) {
            bp = b_panel + p * nr * kcur;
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
      if (job.pack_b) barrier.arrive_and_wait();  // nobody repacks B while another thread still reads it
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
      pool.run(nthreads, [&](int tid, int nt) {
        Range r = share(p.m, nt, tid);
        finish_rows(p, nullptr, c, r.begin, r.end);
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
    Barrier solo(1);
    float* b_panel = job.pack_b ? t_b_private.get(std::size_t(job.kc) * job.nc) : nullptr;
    gemm_team(job, 0, 1, 1, solo, b_panel);
    if (!f32_out) finish_rows(p, w, c, 0, p.m);
    return;
  }
  const int tm = rows_split(p.m, plan.kernel->mr, nthreads);
  if (tm == 1) {
    // Few rows: threads take whole column chunks, each packing its own A and B, with no barrier. Chunks are
    // claimed as threads arrive, so a worker that wakes late (a sleeping thread can take milliseconds to wake
    // on a virtual machine) only does less of the work instead of holding everyone up.
    const int nr = plan.kernel->nr;
    const int64_t chunk = std::max<int64_t>(4 * nr, (p.n + 4 * nthreads - 1) / (4 * nthreads) + nr - 1) / nr * nr;
    std::atomic<int64_t> next{0};
    pool.run(nthreads, [&](int, int) {
      Barrier solo(1);
      const int64_t width = std::min(chunk, job.nc);
      float* b_panel = job.pack_b ? t_b_private.get(std::size_t(job.kc) * std::size_t(width + nr)) : nullptr;
      for (int64_t j0 = next.fetch_add(chunk); j0 < p.n; j0 = next.fetch_add(chunk)) {
        Job sub = job;
        sub.n = std::min(chunk, p.n - j0);
        sub.nc = std::min(job.nc, sub.n);
        sub.b.base = job.b.at(j0, 0);
        sub.c = job.c + j0;
        gemm_team(sub, 0, 1, 1, solo, b_panel);
        if (!f32_out) finish_block(p, w, c, 0, p.m, j0, j0 + sub.n);
      }
    }, ThreadPool::Participation::optional);
    return;
  }
  float* b_panel = job.pack_b ? g_b_shared.get(std::size_t(job.kc) * job.nc) : nullptr;
  Barrier barrier(nthreads);
  pool.run(nthreads, [&](int tid, int nt) {
    gemm_team(job, tid, nt, tm, barrier, b_panel);
    if (!f32_out) {
      barrier.arrive_and_wait();
      Range r = share(p.m, nt, tid);
      finish_rows(p, w, c, r.begin, r.end);
    }
  });
}

const void* offset(const void* base, DType t, int64_t elements) {
  return static_cast<const char*>(base) + elements * int64_t(size_of(t));
}

}  // namespace

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
    // Many small entries: each thread takes whole entries and runs them alone.
    pool.run(nthreads, [&](int tid, int nt) {
      const Range r = share(p.batch, nt, tid);
      for (int64_t e = r.begin; e < r.end; ++e) {
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

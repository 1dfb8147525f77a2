// The sm80 kernel family on the host side: parameter space, resource estimates, heuristic and code generation.
#include "backends/cuda/sm80/sm80_family.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string_view>

#include <fmt/format.h>

#include "backends/cuda/common/elem_tag.hpp"
#include "backends/cuda/kernels/common/work_schedule.cuh"
#include "backends/cuda/sm80/sm80_cost_model.hpp"
#include "core/int_math.hpp"

namespace tileforge::cuda {
namespace {

constexpr int kMaxRegistersPerThread = 255;
constexpr int kMaxThreadsPerBlock = 512;
// Registers for indices, loop counters, the batch offset, each operand's copy state (source address, rows and
// columns left, shared address: computed once before the k loop), alpha/beta and the epilogue's addresses. Fitted
// with the rest of sm80_register_estimate to ptxas's reports (CUDA 13.0, `__launch_bounds__(threads, 1)`) for sm_80
// and sm_90a over 276 configs (14 tile shapes, BLOCK_K 32 and 64, FRAG_PIPE 0 and 1, VEC_BYTES 2 to 16, row- and
// column-major operands), so that the estimate stays an upper bound: CI checks it for the configs the heuristic
// picks, the largest legal one and the BLOCK_K 64 pipelined tiles (tests/backends/cuda/sm80_family_test.cpp).
constexpr int kRegisterOverhead = 20;
// The registers STREAM_K adds to an instance (see sm80_register_estimate).
constexpr int kStreamKRegisters = 40;

int widest_alignment(uint64_t bytes_ld, uintptr_t base) {
  for (int w : {16, 8, 4}) {
    if (bytes_ld % unsigned(w) == 0 && base % unsigned(w) == 0) return w;
  }
  return 2;
}

int64_t p(const Config& c, const char* name) { return c.params.at(name); }

struct TileShape {
  int bm, bn, warps_m, warps_n;
  int frag_pipe;
  // Throughput of one SM running this tile, relative to the best, measured on the H200 at 4096^3 and 1024^3
  // (bench/results/h200: 128x256 with FRAG_PIPE 323 TFLOP/s, 128x128 without it 317, 64x128 with it 256;
  // smaller tiles scaled by their bytes per FLOP). The planner's cost model will replace these numbers.
  double efficiency;
};

// The tile shapes the heuristic considers, largest first.
constexpr TileShape kHeuristicTiles[] = {
    {128, 256, 2, 4, 1, 1.00}, {256, 128, 4, 2, 1, 0.99}, {128, 128, 2, 2, 0, 0.98}, {128, 64, 2, 2, 1, 0.80},
    {64, 128, 2, 2, 1, 0.80},  {64, 64, 2, 2, 1, 0.60},   {32, 128, 1, 4, 0, 0.40},  {32, 64, 1, 2, 0, 0.35},
    {16, 128, 1, 4, 0, 0.25},  {16, 64, 1, 2, 0, 0.20},
};

}  // namespace

int max_vec_bytes(const Problem& problem, const void* a, const void* b) {
  const Problem q = problem.normalized();
  const int wa = widest_alignment(uint64_t(q.lda) * 2, reinterpret_cast<uintptr_t>(a));
  const int wb = widest_alignment(uint64_t(q.ldb) * 2, reinterpret_cast<uintptr_t>(b));
  // Batch entries start at stride * 2 bytes from the first: they must keep the alignment too.
  const int wsa = q.batch > 1 ? widest_alignment(uint64_t(q.stride_a) * 2, 0) : 16;
  const int wsb = q.batch > 1 ? widest_alignment(uint64_t(q.stride_b) * 2, 0) : 16;
  return std::min({wa, wb, wsa, wsb});
}

int epilogue_vec(const Problem& problem, const void* c) {
  const Problem q = problem.normalized();
  const uint64_t pair = 2 * size_of(q.precision.output);
  const bool ok = q.ldc % 2 == 0 && reinterpret_cast<uintptr_t>(c) % pair == 0 && (q.batch == 1 || q.stride_c % 2 == 0);
  return ok ? 2 : 1;
}

int sm80_threads(const Config& c) { return int(32 * p(c, "WARPS_M") * p(c, "WARPS_N")); }

int64_t sm80_smem_bytes(const Config& c) {
  return p(c, "STAGES") * (p(c, "BLOCK_M") * p(c, "BLOCK_K") + p(c, "BLOCK_K") * p(c, "BLOCK_N")) * 2;
}

int sm80_register_estimate(const Config& c, std::string_view arch) {
  const int64_t wm = p(c, "BLOCK_M") / p(c, "WARPS_M"), wn = p(c, "BLOCK_N") / p(c, "WARPS_N");
  const int64_t mi = wm / 16, ni = wn / 8;
  const int64_t vec = p(c, "COPY_AB") ? 16 : p(c, "VEC_BYTES");
  const int threads = sm80_threads(c);
  const int64_t chunks = (p(c, "BLOCK_M") * p(c, "BLOCK_K") + p(c, "BLOCK_K") * p(c, "BLOCK_N")) * 2 / vec / threads;
  // Chunk i of a k-tile is a compile-time offset from the copy state, but ptxas keeps about one register per chunk
  // live (its bound or predicate); 2-byte copies go four at a time through registers.
  const int64_t copy_regs = vec >= 4 ? chunks : 16;
  const int64_t accumulators = mi * ni * 4;
  // Two k-steps of A and B fragments: the compiler loads the next step's while the current one's mma run.
  const int64_t fragments = 2 * (mi * 4 + ni * 2);
  // Double-buffering across the barrier keeps more addresses and predicates live: ptxas for sm_90a reported 244
  // at 128x256x64 (192 for accumulators and fragments); for sm_80 loads narrower than 16 bytes need 20 more
  // (202 at 128x64x32 with 4-byte loads), so other targets get more.
  int64_t pipe = 0;
  if (p(c, "FRAG_PIPE")) pipe = arch == "sm_90a" ? 26 : (vec < 16 ? 46 : 26);
  // STREAM_K's loop over pieces keeps what the body hoists out of it live across every piece, with the walk's state:
  // ptxas reported 194-200 registers at 64x128x64 with FRAG_PIPE (160 without the loop) for sm_80 and sm_90a, and
  // 254-255 with spills at 128x256x32 (238 without).
  const int64_t stream = sm80_stream_k(c) ? kStreamKRegisters : 0;
  return int(accumulators + fragments + copy_regs + kRegisterOverhead + pipe + stream);
}

bool sm80_split_k_declared() {
  const char* v = std::getenv("TILEFORGE_SM80_SPLIT_K");
  return !(v && std::string_view(v) == "0");
}

bool sm80_stream_k_declared() {
  const char* v = std::getenv("TILEFORGE_SM80_STREAM_K");
  return v && std::string_view(v) == "1";
}

int64_t sm80_split_k(const Config& c) { return std::max<int64_t>(1, c.get("SPLIT_K").value_or(1)); }

bool sm80_stream_k(const Config& c) { return c.get("STREAM_K").value_or(0) != 0; }

int64_t sm80_stream_k_workers(const Config& c, const hw::HwProfile& profile) {
  return int64_t(std::max(1, profile.cores)) * std::max(1, sm80_occupancy(c, profile).blocks);
}

Sm80StreamK sm80_stream_k_schedule(const Problem& problem, const Config& c, int64_t workers) {
  const Problem q = problem.normalized();
  Sm80StreamK s;
  s.tiles = cdiv(q.m, p(c, "BLOCK_M")) * cdiv(q.n, p(c, "BLOCK_N"));
  s.k_blocks = cdiv(q.k, p(c, "BLOCK_K"));
  s.workers = std::max<int64_t>(1, std::min(workers, s.tiles * s.k_blocks));
  s.sk_tiles = tf::stream_k_shared_tiles(s.tiles, s.workers);
  return s;
}

Sm80Workspace sm80_workspace(const Problem& problem, const Config& c, int64_t workers) {
  const Problem q = problem.normalized();
  const int64_t split = sm80_split_k(c);
  Sm80Workspace w;
  if (q.m == 0 || q.n == 0 || q.k == 0) return w;
  const int64_t bm = p(c, "BLOCK_M"), bn = p(c, "BLOCK_N");
  int64_t counters = 0, slots = 0;
  if (split > 1) {
    counters = cdiv(q.m, bm) * cdiv(q.n, bn) * q.batch;
    slots = counters * split;
  } else if (sm80_stream_k(c)) {
    const Sm80StreamK s = sm80_stream_k_schedule(q, c, workers);
    if (s.sk_tiles == 0) return w;
    counters = s.sk_tiles;
    slots = 2 * s.workers;
  } else {
    return w;
  }
  w.counter_bytes = cdiv(counters * 4, 256) * 256;
  w.workspace_bytes = w.counter_bytes + slots * bm * bn * 4;
  return w;
}

Problem sm80_slice_problem(const Problem& problem, int64_t split_k, int64_t block_k) {
  Problem q = problem.normalized();
  if (split_k <= 1 || block_k <= 0) return q;
  q.k = std::min(q.k, cdiv(cdiv(q.k, block_k), split_k) * block_k);
  q.batch *= split_k;
  return q;
}

ParamSpace sm80_space(const Problem& problem, const hw::HwProfile& profile) {
  return sm80_space(problem, profile, sm80_split_k_declared(), sm80_stream_k_declared());
}

namespace {

// SPLIT_K's and STREAM_K's constraints, where declared: every slice holds a k-tile, slices only where whole tiles
// leave SMs idle, one way of sharing K, and stream-K's 32-bit schedule over one matrix.
void add_split_constraints(ParamSpace& s, const Problem& q, const hw::HwProfile& profile, bool split_k, bool stream_k) {
  if (split_k) {
    const int64_t k = q.k;
    s.constraints.push_back({Layer::data_scheduling, "SPLIT_K <= ceil(K / BLOCK_K) (every slice holds a k-tile)",
                             [k](const Config& c) {
                               return p(c, "SPLIT_K") <= std::max<int64_t>(1, cdiv(k, p(c, "BLOCK_K")));
                             },
                             {"SPLIT_K", "BLOCK_K"}});
    // Slices only where whole tiles leave SMs idle: where the tiles fill every SM the split adds its fix-up and no
    // work per SM (and a full plan of a large shape prices the whole-K space, not seven times it).
    const int64_t m = q.m, n = q.n, batch = q.batch, cores = std::max(1, profile.cores);
    s.constraints.push_back(
        {Layer::data_scheduling,
         fmt::format("SPLIT_K == 1 unless the whole-K tiles, ceil(M / BLOCK_M) * ceil(N / BLOCK_N) * batch, are fewer "
                     "than the {} SMs",
                     cores),
         [m, n, batch, cores](const Config& c) {
           return p(c, "SPLIT_K") == 1 || cdiv(m, p(c, "BLOCK_M")) * cdiv(n, p(c, "BLOCK_N")) * batch < cores;
         },
         {"SPLIT_K", "BLOCK_M", "BLOCK_N"}});
  }
  if (split_k && stream_k) {
    s.constraints.push_back({Layer::data_scheduling, "SPLIT_K == 1 when STREAM_K == 1 (one way of sharing K)",
                             [](const Config& c) { return p(c, "STREAM_K") == 0 || p(c, "SPLIT_K") == 1; },
                             {"SPLIT_K", "STREAM_K"}});
  }
  if (stream_k) {
    const int64_t m = q.m, n = q.n, k = q.k;
    s.constraints.push_back({Layer::data_scheduling,
                             "STREAM_K == 0 unless tiles x ceil(K / BLOCK_K) < 2^31 (the kernel's 32-bit schedule)",
                             [m, n, k](const Config& c) {
                               return p(c, "STREAM_K") == 0 || cdiv(m, p(c, "BLOCK_M")) * cdiv(n, p(c, "BLOCK_N")) *
                                                                     cdiv(k, p(c, "BLOCK_K")) <
                                                                 (int64_t(1) << 31);
                             },
                             {"STREAM_K", "BLOCK_M", "BLOCK_N", "BLOCK_K"}});
    const int64_t batch = q.batch;
    s.constraints.push_back({Layer::data_scheduling,
                             "STREAM_K == 0 unless batch == 1 (the persistent grid walks one matrix)",
                             [batch](const Config& c) { return p(c, "STREAM_K") == 0 || batch == 1; },
                             {"STREAM_K"}});
  }
}

}  // namespace

ParamSpace sm80_space(const Problem& problem, const hw::HwProfile& profile, bool split_k, bool stream_k) {
  ParamSpace s;
  s.family = "sm80";
  s.version = kSm80Version;
  s.params = {
      {"BLOCK_M", {16, 32, 64, 128, 256}, "data scheduling", "rows of C per block"},
      {"BLOCK_N", {16, 32, 64, 128, 256}, "data scheduling", "columns of C per block"},
      {"BLOCK_K", {16, 32, 64}, "data scheduling", "depth of one pipeline stage"},
      {"WARPS_M", {1, 2, 4, 8}, "parameter adaptation", "warps along M"},
      {"WARPS_N", {1, 2, 4, 8}, "parameter adaptation", "warps along N"},
      {"STAGES", {2, 3, 4, 5, 6}, "compute pipeline", "cp.async stages in flight"},
      {"GROUP_M", {1, 4, 8, 16}, "data scheduling", "row-blocks per L2-friendly group (rasterization)"},
      {"VEC_BYTES", {2, 4, 8, 16}, "hardware mapping", "bytes per global load of A and B"},
      {"COPY_AB", {0, 1}, "hardware mapping", "copy A and B into 16-byte-aligned buffers first (timed)"},
      {"FRAG_PIPE", {0, 1}, "compute pipeline",
       "1: double-buffer mma fragments across k-steps and across the stage barrier"},
  };
  if (split_k) {
    s.params.push_back({"SPLIT_K", {1, 2, 3, 4, 6, 8, 16}, "data scheduling",
                        "slices of K per output tile, run by different blocks (gridDim.z) and summed in slice order "
                        "by the last to arrive from f32 partials in a workspace (1: none)"});
  }
  if (stream_k) {
    s.params.push_back({"STREAM_K", {0, 1}, "data scheduling",
                        "1: a persistent grid of one wave of blocks; the last tiles' k-blocks shared out evenly, "
                        "their pieces summed in block order by the last to arrive"});
  }
  const int align = max_vec_bytes(problem);
  // Limits the profile does not record are not assumed: the constraint then admits no config and says which
  // number is missing.
  const int64_t smem_limit = profile.smem_per_block_bytes;
  const int64_t regs_per_sm = profile.registers_per_core;
  const std::string smem_text =
      smem_limit > 0
          ? fmt::format("shared memory STAGES * (BLOCK_M*BLOCK_K + BLOCK_K*BLOCK_N) * 2 <= {} bytes per block", smem_limit)
          : std::string("shared memory per block: the profile records no smem_per_block_bytes");
  const std::string regs_text = regs_per_sm > 0
                                    ? fmt::format("estimated registers * threads <= {} per SM", regs_per_sm)
                                    : std::string("registers per SM: the profile records no registers_per_core");
  // Each constraint names the parameters it reads (Constraint::reads): a walk then evaluates it once per
  // combination of those, not once per config through the config's map, and dispatch's walk prunes on it.
  const std::vector<std::string> tile_reads = {"BLOCK_M", "BLOCK_N", "BLOCK_K", "WARPS_M", "WARPS_N", "VEC_BYTES",
                                               "COPY_AB"};
  std::vector<std::string> register_reads = tile_reads;
  register_reads.push_back("FRAG_PIPE");
  if (stream_k) register_reads.push_back("STREAM_K");  // sm80_register_estimate counts its loop
  s.constraints = {
      {Layer::parameter_adaptation, "BLOCK_M % (16 * WARPS_M) == 0 (whole 16-row fragments per warp)",
       [](const Config& c) { return p(c, "BLOCK_M") % (16 * p(c, "WARPS_M")) == 0; },
       {"BLOCK_M", "WARPS_M"}},
      {Layer::parameter_adaptation, "BLOCK_N % (16 * WARPS_N) == 0 (whole 16-column fragment pairs per warp)",
       [](const Config& c) { return p(c, "BLOCK_N") % (16 * p(c, "WARPS_N")) == 0; },
       {"BLOCK_N", "WARPS_N"}},
      {Layer::parameter_adaptation, fmt::format("32 * WARPS_M * WARPS_N <= {} threads", kMaxThreadsPerBlock),
       [](const Config& c) { return sm80_threads(c) <= kMaxThreadsPerBlock; },
       {"WARPS_M", "WARPS_N"}},
      {Layer::hardware_mapping, "each thread copies whole chunks: BLOCK_M*BLOCK_K*2/VEC and BLOCK_K*BLOCK_N*2/VEC divide by the threads",
       [](const Config& c) {
         const int64_t vec = p(c, "COPY_AB") ? 16 : p(c, "VEC_BYTES");
         const int t = sm80_threads(c);
         return (p(c, "BLOCK_M") * p(c, "BLOCK_K") * 2 / vec) % t == 0 &&
                (p(c, "BLOCK_K") * p(c, "BLOCK_N") * 2 / vec) % t == 0;
       },
       tile_reads},
      {Layer::hardware_mapping, fmt::format("VEC_BYTES <= {} (the alignment of A and B rows), unless COPY_AB = 1 with VEC_BYTES = 16", align),
       [align](const Config& c) {
         return p(c, "COPY_AB") ? p(c, "VEC_BYTES") == 16 : p(c, "VEC_BYTES") <= align;
       },
       {"VEC_BYTES", "COPY_AB"}},
      {Layer::data_scheduling, smem_text,
       [smem_limit](const Config& c) { return smem_limit > 0 && sm80_smem_bytes(c) <= smem_limit; },
       {"STAGES", "BLOCK_M", "BLOCK_N", "BLOCK_K"}},
      {Layer::compute_pipeline, "FRAG_PIPE == 0 or BLOCK_K % 32 == 0 (double buffering needs an even number of 16-deep k-steps)",
       [](const Config& c) { return p(c, "FRAG_PIPE") == 0 || p(c, "BLOCK_K") % 32 == 0; },
       {"FRAG_PIPE", "BLOCK_K"}},
      {Layer::parameter_adaptation, fmt::format("estimated registers <= {} per thread", kMaxRegistersPerThread),
       [arch = profile.arch](const Config& c) { return sm80_register_estimate(c, arch) <= kMaxRegistersPerThread; },
       register_reads},
      {Layer::parameter_adaptation, regs_text,
       [regs_per_sm, arch = profile.arch](const Config& c) {
         return regs_per_sm > 0 && int64_t(sm80_register_estimate(c, arch)) * sm80_threads(c) <= regs_per_sm;
       },
       register_reads},
  };
  add_split_constraints(s, problem.normalized(), profile, split_k, stream_k);
  return s;
}

Config sm80_heuristic(const Problem& problem, const hw::HwProfile& profile) {
  const Problem q = problem.normalized();
  const int sms = profile.cores > 0 ? profile.cores : 1;
  const int align = max_vec_bytes(q);
  // Copying A and B costs two passes over them; it pays when the GEMM has enough work per byte.
  const bool copy = align < 16 && q.m >= 512 && q.n >= 512 && q.k >= 512;
  const ParamSpace space = sm80_space(q, profile);
  const bool split_declared = space.find("SPLIT_K") != nullptr;

  Config best;
  double best_cost = 0;
  for (const TileShape& t : kHeuristicTiles) {
    Config c{"sm80",
             {{"BLOCK_M", t.bm}, {"BLOCK_N", t.bn}, {"BLOCK_K", 32}, {"WARPS_M", t.warps_m}, {"WARPS_N", t.warps_n},
              {"STAGES", 4}, {"GROUP_M", 8}, {"VEC_BYTES", copy ? 16 : align}, {"COPY_AB", copy ? 1 : 0},
              {"FRAG_PIPE", t.frag_pipe}}};
    // The heuristic's tiles run the whole K.
    if (split_declared) c.params["SPLIT_K"] = 1;
    if (space.find("STREAM_K")) c.params["STREAM_K"] = 0;
    while (c.params["STAGES"] > 2 && !space.admits(c)) --c.params["STAGES"];
    if (!space.admits(c)) continue;
    const int64_t tiles = ((q.m + t.bm - 1) / t.bm) * ((q.n + t.bn - 1) / t.bn) * q.batch;
    // The cost model's occupancy (shared memory, registers, threads and blocks per SM from the profile).
    const int64_t occupancy = std::max<int64_t>(1, sm80_occupancy(c, profile).blocks);
    // Blocks resident together share their SM: a wave of `resident` blocks per SM takes `resident` tile-times.
    // A wave that does not fill the chip runs fewer blocks per SM, each faster.
    const int64_t per_wave = std::min<int64_t>(tiles, int64_t(sms) * occupancy);
    const int64_t resident = (per_wave + sms - 1) / sms;
    const double waves = std::ceil(double(tiles) / double(per_wave));
    const double cost = waves * double(resident) * t.bm * t.bn / t.efficiency;
    if (best.family.empty() || cost < best_cost) {
      best = c;
      best_cost = cost;
    }
  }
  return best;
}

GeneratedKernel sm80_source(const Problem& problem, const Config& c, int vec_bytes, int epi_vec) {
  const Problem q = problem.normalized();
  GeneratedKernel k;
  k.threads = sm80_threads(c);
  k.smem_bytes = sm80_smem_bytes(c);
  const int64_t split = sm80_split_k(c);
  const bool stream = sm80_stream_k(c);
  // SPLIT_K and STREAM_K only where they share K: an unshared instance keeps the source (and the cached binary) it
  // had before.
  const std::string split_arg = stream ? ", 1, true" : split > 1 ? fmt::format(", {}", split) : std::string();
  k.entry = fmt::format("sm80_gemm_{}_{}_{}_{}x{}x{}_w{}x{}_s{}_g{}_v{}_e{}_p{}{}", to_string(q.precision.input),
                        to_string(q.precision.output), to_string(q.layout), p(c, "BLOCK_M"), p(c, "BLOCK_N"),
                        p(c, "BLOCK_K"), p(c, "WARPS_M"), p(c, "WARPS_N"), p(c, "STAGES"), p(c, "GROUP_M"), vec_bytes,
                        epi_vec, p(c, "FRAG_PIPE"),
                        stream ? "_stk" : split > 1 ? fmt::format("_sk{}", split) : "");
  // __launch_bounds__(threads, 1): one block per SM is enough, so ptxas may use up to 255 registers; without the
  // minimum it caps some mid-sized tiles at 128 registers to fit four blocks and spills to get there.
  k.source = fmt::format(
      "// Generated by tileforge for {config}\n"
      "#include \"sm80/gemm.cuh\"\n"
      "using Cfg = tf::sm80::Config<{bm}, {bn}, {bk}, {wm}, {wn}, {st}, {gm}, {vec}, {arow}, {brow}, {in}, {out}, "
      "{epi}, {pipe}{split}>;\n"
      "extern \"C\" __global__ void __launch_bounds__(Cfg::THREADS, 1) {entry}(tf::sm80::Params p) {{\n"
      "  tf::sm80::gemm<Cfg>(p);\n"
      "}}\n",
      fmt::arg("config", c.describe()), fmt::arg("bm", p(c, "BLOCK_M")), fmt::arg("bn", p(c, "BLOCK_N")),
      fmt::arg("bk", p(c, "BLOCK_K")), fmt::arg("wm", p(c, "WARPS_M")), fmt::arg("wn", p(c, "WARPS_N")),
      fmt::arg("st", p(c, "STAGES")), fmt::arg("gm", p(c, "GROUP_M")), fmt::arg("vec", vec_bytes),
      fmt::arg("arow", a_row_major(q.layout) ? "true" : "false"),
      fmt::arg("brow", b_row_major(q.layout) ? "true" : "false"), fmt::arg("in", elem_tag(q.precision.input)),
      fmt::arg("out", elem_tag(q.precision.output)), fmt::arg("epi", epi_vec),
      fmt::arg("pipe", p(c, "FRAG_PIPE") ? "true" : "false"), fmt::arg("split", split_arg), fmt::arg("entry", k.entry));
  return k;
}

}  // namespace tileforge::cuda

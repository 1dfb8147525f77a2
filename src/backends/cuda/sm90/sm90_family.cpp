// The sm90 kernel family on the host side: resource estimates, the schedule, the heuristic and code generation (the
// parameter space is sm90_space.cpp's).
#include "backends/cuda/sm90/sm90_family.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string_view>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "backends/cuda/common/elem_tag.hpp"
#include "backends/cuda/kernels/common/work_schedule.cuh"
#include "backends/cuda/sm90/sm90_config_reads.hpp"
#include "core/c_order.hpp"
#include "core/int_math.hpp"

namespace tileforge::cuda {

using namespace sm90_detail;

namespace {

int64_t sm90_default_copy(const Problem& q) {
  const bool a = !tma_ld_refusal(q, q.lda, "lda").empty(), b = !tma_ld_refusal(q, q.ldb, "ldb").empty();
  return a && b ? 1 : a ? (sm90_rows_off_sectors(q, q.ldb) ? 1 : 2) : b ? (sm90_rows_off_sectors(q, q.lda) ? 1 : 3) : 0;
}

struct TileShape {
  int bm, bn, consumers;
  // Throughput of one SM running this tile, relative to the best. 128x256: 766.6 TFLOP/s at 4096^3 (L16);
  // 128x192: 686.8 at 4096^3 with 6 instead of 4 tiles per SM in 5.33 waves, 0.98 per tile area (L18); the others
  // are estimates the planner's cost model replaces: one consumer warpgroup at 0.88 (sm90_cost_constants.hpp), a
  // 128-wide tile reads 1.5x the L2 bytes per FLOP of 128x256, a 64x64 tile is bound by shared memory.
  double efficiency;
};

constexpr TileShape kHeuristicTiles[] = {
    {128, 256, 2, 1.00}, {256, 128, 2, 0.97}, {128, 192, 2, 0.98}, {128, 128, 2, 0.85},
    {64, 256, 1, 0.85},  {64, 128, 1, 0.75},  {64, 64, 1, 0.55},
};

}  // namespace

int sm90_threads(const Config& c) { return int(128 * (1 + p(c, "CONSUMERS"))); }

int sm90_cluster_size(const Config& c) { return int(p(c, "CLUSTER_M") * p(c, "CLUSTER_N")); }

int64_t sm90_resident_clusters(const hw::HwProfile& profile, int64_t cluster_size) {
  const int64_t sms = std::max(1, profile.cores), cs = std::max<int64_t>(1, cluster_size);
  if (auto it = profile.resident_clusters.find(int(cs)); it != profile.resident_clusters.end() && it->second > 0)
    return std::min<int64_t>(it->second, std::max<int64_t>(1, sms / cs));
  return cs <= 2 ? std::max<int64_t>(1, sms / cs) : 0;
}

int64_t sm90_epi_rounds(int64_t block_n, int64_t epi_split) {
  if (epi_split <= 1) return 1;
  return block_n % 128 == 0 ? 2 : std::max<int64_t>(1, block_n / 64);
}

int64_t sm90_consumer_rows(const Config& c) {
  return consumer_cols_of(c) || consumer_k_of(c) ? p(c, "BLOCK_M")
                                                 : p(c, "BLOCK_M") / std::max<int64_t>(1, p(c, "CONSUMERS"));
}

int64_t sm90_consumer_cols(const Config& c) {
  return consumer_cols_of(c) ? p(c, "BLOCK_N") / std::max<int64_t>(1, p(c, "CONSUMERS")) : p(c, "BLOCK_N");
}

int64_t sm90_ring_bytes(const Config& c) {
  return p(c, "STAGES") * (p(c, "BLOCK_M") + p(c, "BLOCK_N")) * p(c, "BLOCK_K") * 2;
}

int64_t sm90_smem_bytes(const Config& c) {
  const int64_t bm = p(c, "BLOCK_M"), bn = p(c, "BLOCK_N"), stages = p(c, "STAGES");
  const int64_t c_tile = p(c, "EPILOGUE") != kSm90EpilogueDirect
                             ? bm * bn * 2 / sm90_epi_rounds(sm90_consumer_cols(c), p(c, "EPI_SPLIT"))
                             : 0;
  const int64_t half_tile = consumer_k_of(c) ? bm * bn * 4 : 0;
  return sm90_ring_bytes(c) + c_tile + half_tile + 2 * stages * 8 + 16 + 1024;
}

namespace {

// The view's field for a parameter name, or null for a name the family does not know. Dispatched on the first
// letter, then checked whole by named(): a view is built for every price and bound, and comparing the names as
// strings was 1/8 of a new shape's dispatch.
std::optional<int64_t> Sm90ConfigView::*view_field(std::string_view n) {
  using V = Sm90ConfigView;
  auto is = [n]<std::size_t N>(const char (&name)[N]) { return named(n, name); };
  if (n.empty()) return nullptr;
  switch (n.front()) {
    case 'B':
      if (is("BLOCK_K")) return &V::block_k;
      if (is("BLOCK_M")) return &V::block_m;
      if (is("BLOCK_N")) return &V::block_n;
      break;
    case 'C':
      if (is("CLUSTER_M")) return &V::cluster_m;
      if (is("CLUSTER_N")) return &V::cluster_n;
      if (is("CONSUMERS")) return &V::consumers;
      if (is("CONSUMER_COLS")) return &V::consumer_cols;
      if (is("CONSUMER_K")) return &V::consumer_k;
      if (is("COPY_AB")) return &V::copy_ab;
      break;
    case 'E':
      if (is("EPILOGUE")) return &V::epilogue;
      if (is("EPI_SPLIT")) return &V::epi_split;
      break;
    case 'G':
      if (is("GROUP_M")) return &V::group_m;
      break;
    case 'R':
      if (is("REDUCE")) return &V::reduce;
      break;
    case 'S':
      if (is("SPLIT_CLUSTER")) return &V::split_cluster;
      if (is("SPLIT_K")) return &V::split_k;
      if (is("STAGES")) return &V::stages;
      if (is("STMATRIX")) return &V::stmatrix;
      if (is("STREAM_K")) return &V::stream_k;
      if (is("SWAP_AB")) return &V::swap_ab;
      break;
    default:
      break;
  }
  return nullptr;
}

}  // namespace

Sm90ConfigView::Sm90ConfigView(const Config& config) {
  for (const auto& [name, value] : config.params) {
    if (auto field = view_field(name)) this->*field = value;
  }
}

bool sm90_swap_ab(const Config& c) { return swap_of(c) != 0; }

bool sm90_atomic_sum(const Config& c) { return c.get("REDUCE").value_or(0) != 0; }

bool sm90_cluster_sum(const Sm90ConfigView& c) {
  return c.split_cluster.value_or(0) != 0 && c.split_k.value_or(1) > 1;
}
bool sm90_cluster_sum(const Config& c) { return sm90_cluster_sum(Sm90ConfigView(c)); }

int64_t sm90_launch_cluster(const Sm90ConfigView& c) {
  return sm90_cluster_sum(c) ? *c.split_k : c.cluster_m.value_or(1) * c.cluster_n.value_or(1);
}
int64_t sm90_launch_cluster(const Config& c) { return sm90_launch_cluster(Sm90ConfigView(c)); }

Problem sm90_kernel_problem(const Problem& problem, const Config& c) {
  const Problem q = problem.normalized();
  return sm90_swap_ab(c) ? transposed(q) : q;  // the families' problems have a row-major C: this one column-major
}

Sm90Maps sm90_maps(const Problem& kernel_problem) {
  const Problem& p = kernel_problem;
  Sm90Maps m;
  m.a = a_row_major(p.layout) ? Sm90MapShape{p.k, p.m, p.lda} : Sm90MapShape{p.m, p.k, p.lda};
  m.b = b_row_major(p.layout) ? Sm90MapShape{p.n, p.k, p.ldb} : Sm90MapShape{p.k, p.n, p.ldb};
  m.c = p.c_order == Order::col_major ? Sm90MapShape{p.m, p.n, p.ldc} : Sm90MapShape{p.n, p.m, p.ldc};
  return m;
}

Sm90Schedule sm90_schedule(const Problem& problem, const Config& c, int64_t max_clusters) {
  return sm90_schedule(sm90_kernel_problem(problem, c), Sm90ConfigView(c), max_clusters);
}

Sm90Schedule sm90_schedule(const Problem& problem, const Sm90ConfigView& c, int64_t max_clusters) {
  const Problem q = problem.normalized();
  // Priced for any config, legal or not (the cost model's contract): a missing parameter takes its neutral value.
  auto get = [](std::optional<int64_t> v, int64_t fallback) { return std::max<int64_t>(1, v.value_or(fallback)); };
  const int64_t bm = get(c.block_m, 128), bn = get(c.block_n, 128), cm = get(c.cluster_m, 1), cn = get(c.cluster_n, 1);
  Sm90Schedule s;
  s.cluster_tiles = cdiv(q.m, bm * cm) * cdiv(q.n, bn * cn);
  s.k_blocks = cdiv(q.k, get(c.block_k, kSm90BlockK));
  s.split_k = get(c.split_k, 1);
  s.stream_k = c.stream_k.value_or(0) != 0;
  max_clusters = std::max<int64_t>(1, max_clusters);
  if (s.cluster_tiles == 0 || s.k_blocks == 0) {
    s.split_k = 1;
    s.stream_k = false;
    s.clusters = std::min(s.cluster_tiles, max_clusters);
    return s;
  }
  if (sm90_cluster_sum(c)) {
    // Clusters of the tile's slices (max_clusters counts such clusters): whole tiles, summed in the cluster.
    s.cluster_sum = true;
    s.clusters = std::min(s.cluster_tiles, max_clusters);
    return s;
  }
  if (s.split_k > 1) {
    s.clusters = std::min(s.cluster_tiles * s.split_k, max_clusters);
    s.slots = s.cluster_tiles * s.split_k;
    s.shared_sum = s.slots <= max_clusters && s.split_k >= kSm90SharedSumMinSplit;
  } else if (s.stream_k) {
    const int64_t g = std::min(max_clusters, s.cluster_tiles * s.k_blocks);
    s.sk_tiles = tf::stream_k_shared_tiles(s.cluster_tiles, g);
    s.clusters = g;
    s.slots = s.sk_tiles > 0 ? 2 * g : 0;
  } else {
    s.clusters = std::min(s.cluster_tiles, max_clusters);
  }
  if (s.slots > 0 && c.reduce.value_or(0) != 0) {
    // The atomic sum: one sum tile per shared tile, in the zone every launch leaves zero; no partials.
    s.atomic_sum = true;
    s.shared_sum = false;
    s.sum_tiles = s.split_k > 1 ? s.cluster_tiles : s.sk_tiles;
    s.slots = 0;
  }
  if (s.slots > 0 || s.atomic_sum) {
    const int64_t ctas_per_cluster = cm * cn;
    s.sums_offset = (s.cluster_tiles * ctas_per_cluster * 4 * (s.shared_sum ? 2 : 1) + 255) / 256 * 256;
    s.counter_bytes = s.sums_offset + s.sum_tiles * ctas_per_cluster * bm * bn * 4;
    s.workspace_bytes = s.counter_bytes + s.slots * ctas_per_cluster * bm * bn * 4;
  }
  return s;
}

int sm90_accumulators(const Config& c) {
  return int(std::max<int64_t>(1, sm90_consumer_rows(c) / 64) * sm90_consumer_cols(c) / 2);
}

int sm90_producer_regs(const Config& c) { return p(c, "CONSUMERS") >= 2 ? kProducerRegs : 0; }
int sm90_consumer_regs(const Config& c) {
  const int64_t cons = p(c, "CONSUMERS");
  return cons == 2 ? kConsumerRegs : cons >= 3 ? kConsumerRegs3 : 0;
}
int sm90_max_accumulators(const Config& c) {
  if (consumer_k_of(c)) return kMaxAccumulatorsK;
  return p(c, "CONSUMERS") >= 3 ? kMaxAccumulators3 : 128;
}

int64_t sm90_register_budget(const Config& c) {
  if (sm90_producer_regs(c) == 0) return int64_t(sm90_threads(c)) * kMaxRegistersPerThread;
  return 128 * int64_t(sm90_producer_regs(c)) + 128 * p(c, "CONSUMERS") * int64_t(sm90_consumer_regs(c));
}

bool sm90_rows_off_sectors(const Problem& q, int64_t ld) {
  return ld % (32 / int64_t(size_of(q.precision.input))) != 0;
}

Config sm90_heuristic(const Problem& problem, const hw::HwProfile& profile) {
  return sm90_heuristic(problem, profile, sm90_space(problem, profile));
}

Config sm90_heuristic(const Problem& problem, const hw::HwProfile& profile, const ParamSpace& space) {
  const Problem q = problem.normalized();
  const int64_t sms = std::max(1, profile.cores);
  const bool tma_store = tma_store_refusal(q).empty() && q.beta == 0.0;
  Config best;
  double best_cost = 0;
  const int64_t k_blocks = cdiv(q.k, int64_t(kSm90BlockK));
  // One config, its tile, split and stages set in place for each try (each Config built anew was a map of 14 names).
  Config c{"sm90",
           {{"BLOCK_M", 0}, {"BLOCK_N", 0}, {"BLOCK_K", kSm90BlockK}, {"STAGES", 8}, {"CONSUMERS", 0},
            {"CLUSTER_M", 1}, {"CLUSTER_N", 1}, {"GROUP_M", 8},
            {"EPILOGUE", tma_store ? kSm90EpilogueTmaStore : kSm90EpilogueDirect}, {"EPI_SPLIT", 1},
            {"STMATRIX", tma_store ? 1 : 0}, {"SPLIT_K", 0}, {"STREAM_K", 0}, {"COPY_AB", sm90_default_copy(q)}}};
  if (space.find("SWAP_AB")) c.params["SWAP_AB"] = 0;  // the heuristic's tiles are the problem's own
  if (space.find("REDUCE")) c.params["REDUCE"] = 0;    // and its sums in slice order
  if (space.find("SPLIT_CLUSTER")) c.params["SPLIT_CLUSTER"] = 0;  // through the workspace
  int64_t &bm = c.params.at("BLOCK_M"), &bn = c.params.at("BLOCK_N"), &consumers = c.params.at("CONSUMERS");
  int64_t &stages = c.params.at("STAGES"), &split_k = c.params.at("SPLIT_K");
  // A constraint that does not read STAGES (their reads are declared, and a test holds them to it) gives the same
  // answer at every stage count: a try one of them refuses is dropped at once, and the stage counts are tried
  // against the others alone; the whole check then runs once, on the count found.
  std::vector<const Constraint*> stage_free, staged;
  for (const Constraint& k : space.constraints) {
    const bool reads_stages = k.reads.empty() || std::find(k.reads.begin(), k.reads.end(), "STAGES") != k.reads.end();
    (reads_stages ? staged : stage_free).push_back(&k);
  }
  auto all_hold = [&](const std::vector<const Constraint*>& ks) {
    return std::all_of(ks.begin(), ks.end(), [&](const Constraint* k) { return k->holds(c); });
  };
  const ParamDecl* stages_decl = space.find("STAGES");
  auto stages_fit = [&] {
    return stages_decl && std::find(stages_decl->values.begin(), stages_decl->values.end(), stages) !=
                              stages_decl->values.end() && all_hold(staged);
  };
  for (const TileShape& t : kHeuristicTiles) {
    for (const int64_t split : {1, 2, 4, 8, 16, 32}) {
      // Time ~ (work units the busiest SM runs) x (k-blocks per unit) x tile area / efficiency, and a split tile
      // also stores its partial and one CTA reads all of them back (a k-block's worth of tile traffic each).
      const int64_t units = cdiv(q.m, t.bm) * cdiv(q.n, t.bn) * split;
      const int64_t per_sm = cdiv(units, sms);
      const double cost = double(per_sm) * double(cdiv(k_blocks, split) + (split > 1 ? split : 0)) * t.bm * t.bn /
                          t.efficiency;
      // The price does not depend on legality: a try that would not replace the best is not checked (the checks, a
      // dozen constraints for each stage count, were most of a new GPU shape's dispatch).
      if (!best.family.empty() && !(cost < best_cost)) continue;
      bm = t.bm;
      bn = t.bn;
      consumers = t.consumers;
      split_k = split;
      if (!all_hold(stage_free)) continue;
      // As many stages as fit, from 8 down to 2.
      stages = 8;
      while (stages > 2 && !stages_fit()) --stages;
      if (!space.admits(c)) continue;
      best = c;
      best_cost = cost;
    }
  }
  return best;
}

namespace {

// The generated source's experiment switches (issue 13), each a define read by the kernel headers and a suffix on the
// entry, from the environment: none is set in normal use. `row_split`: TILEFORGE_SM90_ROW_SPLIT applies (a shared
// M/N-major operand); `shared`: CTAs of a cluster share operands.
std::string experiment_defines(std::string& entry, bool row_split, bool shared, int64_t split_k) {
  // A diagnostic of the fix-up (gemm.cuh, TF_SM90_FIXUP_PROBE): never set in normal use, it makes C wrong.
  std::string probe;
  if (const char* v = std::getenv("TILEFORGE_SM90_FIXUP_PROBE"); v && *v && *v != '0') {
    probe = fmt::format("#define TF_SM90_FIXUP_PROBE {}\n", std::atoi(v));
    entry += fmt::format("_probe{}", std::atoi(v));
  }
  if (row_split) {
    probe += "#define TF_SM90_ROW_SPLIT 1\n";
    entry += "_rows";
  }
  // Another (issue 13): rank 0 of the CTAs sharing an operand copies all of it (sm90/mainloop.cuh).
  if (const char* v = std::getenv("TILEFORGE_SM90_LEADER_MULTICAST"); v && std::string_view(v) == "1" && shared) {
    probe += "#define TF_SM90_LEADER_MULTICAST 1\n";
    entry += "_lead";
  }
  // Another (issue 13): split-K's slices read interleaved k-blocks (sm90/config.cuh, TF_SM90_K_INTERLEAVE).
  if (const char* v = std::getenv("TILEFORGE_SM90_K_INTERLEAVE"); v && std::string_view(v) == "1" && split_k > 1) {
    probe += "#define TF_SM90_K_INTERLEAVE 1\n";
    entry += "_kil";
  }
  // Another (issue 13): the producer requests k-blocks into the L2 ahead of its copies (sm90/config.cuh,
  // TF_SM90_L2_PREFETCH); a distance outside 1..256 k-blocks leaves the default kernel.
  if (const char* v = std::getenv("TILEFORGE_SM90_L2_PREFETCH"); v && *v) {
    const int ahead = std::atoi(v);
    if (ahead >= 1 && ahead <= 256) {
      probe += fmt::format("#define TF_SM90_L2_PREFETCH {}\n", ahead);
      entry += fmt::format("_pf{}", ahead);
    }
  }
  // A diagnostic: each CTA's phases stamped in the kernel (sm90/timeline.cuh, TF_SM90_TIMELINE) and written after
  // every launch to the file TILEFORGE_SM90_TIMELINE names (sm90_kernel.cpp).
  if (const char* v = std::getenv("TILEFORGE_SM90_TIMELINE"); v && *v) {
    probe += "#define TF_SM90_TIMELINE 1\n";
    entry += "_tl";
  }
  // Another (issue 13): an L2 eviction priority on the operand loads (sm90/ptx.cuh, TF_SM90_L2_HINT).
  if (const char* v = std::getenv("TILEFORGE_SM90_L2_HINT"); v && *v) {
    const std::string_view hint(v);
    const int code = hint == "first" ? 1 : hint == "last" ? 2 : hint == "normal" ? 3 : 0;
    if (code != 0) {
      probe += fmt::format("#define TF_SM90_L2_HINT {}\n", code);
      entry += fmt::format("_l2{}", hint);
    }
  }
  return probe;
}

}  // namespace

Sm90Source sm90_source(const Problem& problem, const Config& c) {
  // The kernel's problem: with SWAP_AB the transposed one, whose C is column-major.
  const Problem q = sm90_kernel_problem(problem, c);
  const bool c_col = q.c_order == Order::col_major;
  Sm90Source k;
  const int64_t bm = p(c, "BLOCK_M"), bn = p(c, "BLOCK_N"), bk = p(c, "BLOCK_K"), cons = p(c, "CONSUMERS");
  const int64_t cm = p(c, "CLUSTER_M"), cn = p(c, "CLUSTER_N"), gm = p(c, "GROUP_M");
  const bool a_row = a_row_major(q.layout), b_row = b_row_major(q.layout);
  k.threads = sm90_threads(c);
  k.smem_bytes = sm90_smem_bytes(c);
  k.cluster = int(sm90_launch_cluster(c));
  // An M/N-major tile's boxes are split by K rows where the CTAs sharing it do not divide them evenly
  // (sm90/config.cuh's *_ROW_PARTS), or always with TILEFORGE_SM90_ROW_SPLIT=1: an experiment (issue 13) on where a
  // multicast's L2 requests go when each CTA copies part of every box rather than whole boxes.
  const char* row_split_env = std::getenv("TILEFORGE_SM90_ROW_SPLIT");
  const bool row_split = row_split_env && std::string_view(row_split_env) == "1";
  const int64_t a_row_parts = (bm / 64) % cn == 0 && !(row_split && cn > 1) ? 1 : cn;
  const int64_t b_row_parts = (bn / 64) % cm == 0 && !(row_split && cm > 1) ? 1 : cm;
  // A K-major tile's rows per CTA, or one 8-row atom where they are not whole atoms (sm90/config.cuh's *_K_BOX).
  const auto k_box = [](int64_t rows, int64_t split) { return (rows / split) % 8 == 0 ? rows / split : int64_t{8}; };
  k.a_box[0] = 64;
  k.a_box[1] = int(a_row ? k_box(bm, cn) : 64 / a_row_parts);
  k.b_box[0] = 64;
  k.b_box[1] = int(b_row ? 64 / b_row_parts : k_box(bn, cm));
  k.c_box[0] = 64;
  const int64_t wg_n = sm90_consumer_cols(c);
  k.c_box[1] = int(c_col ? wg_n / sm90_epi_rounds(wg_n, p(c, "EPI_SPLIT")) : sm90_consumer_rows(c));
  const int64_t split_k = c.get("SPLIT_K").value_or(1), stream_k = c.get("STREAM_K").value_or(0);
  const bool acc_f16 = q.precision.accum == DType::f16;
  const bool atomic = sm90_atomic_sum(c) && (split_k > 1 || stream_k);
  // The template's trailing arguments (kCCol, kAtomicSum) only where they differ from their defaults: other instances
  // keep the source (and the cached binary) they had before.
  const bool cols = consumer_cols_of(c) != 0, halves = consumer_k_of(c) != 0, slices = sm90_cluster_sum(c);
  const std::string tail = slices   ? fmt::format(", {}, {}, {}, {}, true", c_col, atomic, cols, halves)
                           : halves ? fmt::format(", {}, {}, false, true", c_col, atomic)
                           : cols   ? fmt::format(", {}, {}, true", c_col, atomic)
                           : atomic ? fmt::format(", {}, true", c_col)
                           : c_col  ? ", true"
                                    : "";
  k.entry = fmt::format("sm90_gemm_{}_{}_{}{}_{}x{}x{}_c{}_s{}_k{}x{}_g{}_e{}{}{}{}{}{}", to_string(q.precision.input),
                        to_string(q.precision.output), to_string(q.layout), c_col ? "_swap" : "", bm, bn, bk, cons,
                        p(c, "STAGES"), cm, cn,
                        gm == 0 ? std::string("h") : std::to_string(gm), p(c, "EPILOGUE"), p(c, "EPI_SPLIT"), p(c, "STMATRIX"),
                        split_k > 1 ? fmt::format("_sk{}", split_k) : stream_k ? "_stk" : "", atomic ? "_atom" : "",
                        acc_f16 ? "_acc16" : "");
  if (cols) k.entry += "_ncols";
  if (halves) k.entry += "_khalves";
  if (slices) k.entry += "_csum";
  // One CTA per SM is the design (persistent, up to 227 KB of shared memory), so __launch_bounds__(threads, 1).
  const std::string probe =
      experiment_defines(k.entry, row_split && ((!a_row && cn > 1) || (b_row && cm > 1)), cm * cn > 1, split_k);
  k.timeline = probe.find("TF_SM90_TIMELINE") != std::string::npos;
  k.source = fmt::format(
      "// Generated by tileforge for {config}\n"
      "{probe}"
      "#include \"sm90/gemm.cuh\"\n"
      "using Cfg = tf::sm90::Config<{bm}, {bn}, {bk}, {st}, {cons}, {cm}, {cn}, {order}, {gm}, {in}, {out}, {arow}, "
      "{brow}, {epi}, {preg}, {creg}, {split}, {stm}, {splitk}, {streamk}, {acc16}{ccol}>;\n"
      "extern \"C\" __global__ void __launch_bounds__(Cfg::THREADS, 1) {entry}(const __grid_constant__ "
      "tf::sm90::Params p) {{\n"
      "  tf::sm90::gemm<Cfg>(p);\n"
      "}}\n",
      fmt::arg("config", c.describe()), fmt::arg("probe", probe), fmt::arg("bm", bm), fmt::arg("bn", bn), fmt::arg("bk", bk),
      fmt::arg("st", p(c, "STAGES")), fmt::arg("cons", cons), fmt::arg("cm", cm), fmt::arg("cn", cn),
      fmt::arg("order", gm == 0 ? 2 : gm > 1 ? 1 : 0), fmt::arg("gm", gm), fmt::arg("in", elem_tag(q.precision.input)),
      fmt::arg("out", elem_tag(q.precision.output)), fmt::arg("arow", a_row ? "true" : "false"),
      fmt::arg("brow", b_row ? "true" : "false"), fmt::arg("epi", p(c, "EPILOGUE")),
      fmt::arg("preg", sm90_producer_regs(c)), fmt::arg("creg", sm90_consumer_regs(c)),
      fmt::arg("split", p(c, "EPI_SPLIT")), fmt::arg("stm", p(c, "STMATRIX") ? "true" : "false"),
      fmt::arg("splitk", split_k), fmt::arg("streamk", stream_k ? "true" : "false"),
      fmt::arg("acc16", acc_f16 ? "true" : "false"), fmt::arg("ccol", tail),
      fmt::arg("entry", k.entry));
  return k;
}

}  // namespace tileforge::cuda

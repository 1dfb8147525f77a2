// The sm90 kernel family on the host side: parameter space, resource estimates, heuristic and code generation.
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
#include "core/int_math.hpp"

namespace tileforge::cuda {
namespace {

// setmaxnreg targets with two consumer warpgroups (the probe's, bench/results/h200/2026-12-01-sm90-probe: 40 for
// the producer, which only issues TMA copies; 232 for each consumer, which holds up to 128 f32 accumulators).
constexpr int kProducerRegs = 40;
constexpr int kConsumerRegs = 232;
// With three: the 65536 registers less the producer's 128 x 40 leave 157 per consumer thread, 152 in whole eights;
// beside the addressing and the barriers' phases (about 56 in the two-consumer kernel) that holds 96 accumulators.
constexpr int kConsumerRegs3 = 152;
constexpr int kMaxAccumulators3 = 96;
// Registers per thread a kernel may use without setmaxnreg.
constexpr int kMaxRegistersPerThread = 255;

// Whether `key` is the literal `name`: lengths first, then a fixed-size compare the compiler inlines (a std::string
// compare calls memcmp). The constraints and Sm90ConfigView match parameter names this way thousands of times per
// plan.
template <std::size_t N>
bool named(std::string_view key, const char (&name)[N]) {
  return key.size() == N - 1 && std::memcmp(key.data(), name, N - 1) == 0;
}

// A parameter of a complete config, by its literal name: a scan of the map's (at most fourteen) names. A map lookup
// built a std::string and called memcmp at each level.
template <std::size_t N>
int64_t p(const Config& c, const char (&name)[N]) {
  for (const auto& [key, value] : c.params) {
    if (named(key, name)) return value;
  }
  throw std::out_of_range(fmt::format("sm90 config lacks {}", name));
}

// Why TMA cannot read the operand with leading dimension `ld` (named `what`) in place: a row pitch that is not a
// multiple of 16 bytes; "" when it can.
std::string tma_ld_refusal(const Problem& q, int64_t ld, const char* what) {
  const int64_t elems = 16 / int64_t(size_of(q.precision.input));
  if (ld % elems == 0) return {};
  return fmt::format("{} = {} is not a multiple of {} elements (TMA reads rows 16 bytes apart)", what, ld, elems);
}

int64_t sm90_default_copy(const Problem& q) {
  const bool a = !tma_ld_refusal(q, q.lda, "lda").empty(), b = !tma_ld_refusal(q, q.ldb, "ldb").empty();
  return a && b ? 1 : a ? (sm90_rows_off_sectors(q, q.ldb) ? 1 : 2) : b ? (sm90_rows_off_sectors(q, q.lda) ? 1 : 3) : 0;
}

// Why the staging epilogues cannot write this problem's C, or "" when they can. Where a TMA store cannot write C
// (ldc not a multiple of 8 elements, or C's base off 16 bytes), the warpgroups store the staged tile themselves.
std::string tma_store_refusal(const Problem& q) {
  if (q.precision.output == DType::f32) return "C is f32 and the staging epilogues write 16-bit tiles";
  return {};
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

int64_t sm90_smem_bytes(const Config& c) {
  const int64_t bm = p(c, "BLOCK_M"), bn = p(c, "BLOCK_N"), bk = p(c, "BLOCK_K"), stages = p(c, "STAGES");
  const int64_t stage = (bm + bn) * bk * 2;
  const int64_t c_tile =
      p(c, "EPILOGUE") != kSm90EpilogueDirect ? bm * bn * 2 / sm90_epi_rounds(bn, p(c, "EPI_SPLIT")) : 0;
  return stages * stage + c_tile + 2 * stages * 8 + 16 + 1024;
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
      if (is("COPY_AB")) return &V::copy_ab;
      break;
    case 'E':
      if (is("EPILOGUE")) return &V::epilogue;
      if (is("EPI_SPLIT")) return &V::epi_split;
      break;
    case 'G':
      if (is("GROUP_M")) return &V::group_m;
      break;
    case 'S':
      if (is("SPLIT_K")) return &V::split_k;
      if (is("STAGES")) return &V::stages;
      if (is("STMATRIX")) return &V::stmatrix;
      if (is("STREAM_K")) return &V::stream_k;
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

Sm90Schedule sm90_schedule(const Problem& problem, const Config& c, int64_t max_clusters) {
  return sm90_schedule(problem, Sm90ConfigView(c), max_clusters);
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
  if (s.split_k > 1) {
    s.clusters = std::min(s.cluster_tiles * s.split_k, max_clusters);
    s.slots = s.cluster_tiles * s.split_k;
    s.shared_sum = s.slots <= max_clusters && s.split_k >= kSm90SharedSumMinSplit;
  } else if (s.stream_k) {
    const int64_t g = std::min(max_clusters, s.cluster_tiles * s.k_blocks);
    const int64_t rest = s.cluster_tiles % g;
    s.sk_tiles = rest == 0 ? 0 : s.cluster_tiles < g ? s.cluster_tiles : rest + g;
    s.clusters = g;
    s.slots = s.sk_tiles > 0 ? 2 * g : 0;
  } else {
    s.clusters = std::min(s.cluster_tiles, max_clusters);
  }
  if (s.slots > 0) {
    const int64_t ctas_per_cluster = cm * cn;
    s.counter_bytes = (s.cluster_tiles * ctas_per_cluster * 4 * (s.shared_sum ? 2 : 1) + 255) / 256 * 256;
    s.workspace_bytes = s.counter_bytes + s.slots * ctas_per_cluster * bm * bn * 4;
  }
  return s;
}

int sm90_accumulators(const Config& c) {
  const int64_t cons = std::max<int64_t>(1, p(c, "CONSUMERS"));
  return int(std::max<int64_t>(1, p(c, "BLOCK_M") / cons / 64) * p(c, "BLOCK_N") / 2);
}

int sm90_producer_regs(const Config& c) { return p(c, "CONSUMERS") >= 2 ? kProducerRegs : 0; }
int sm90_consumer_regs(const Config& c) {
  const int64_t cons = p(c, "CONSUMERS");
  return cons == 2 ? kConsumerRegs : cons >= 3 ? kConsumerRegs3 : 0;
}
int sm90_max_accumulators(const Config& c) { return p(c, "CONSUMERS") >= 3 ? kMaxAccumulators3 : 128; }

int64_t sm90_register_budget(const Config& c) {
  if (sm90_producer_regs(c) == 0) return int64_t(sm90_threads(c)) * kMaxRegistersPerThread;
  return 128 * int64_t(sm90_producer_regs(c)) + 128 * p(c, "CONSUMERS") * int64_t(sm90_consumer_regs(c));
}

bool sm90_rows_off_sectors(const Problem& q, int64_t ld) {
  return ld % (32 / int64_t(size_of(q.precision.input))) != 0;
}

namespace {

// Work units of a config's persistent walk: its cluster tiles (of every batch entry) times SPLIT_K slices. The
// Hilbert rule and the cluster-size rule compare it with the clusters resident at once.
int64_t cluster_units(const Problem& q, const Config& c) {
  return cdiv(q.m, p(c, "BLOCK_M") * p(c, "CLUSTER_M")) * cdiv(q.n, p(c, "BLOCK_N") * p(c, "CLUSTER_N")) * q.batch *
         p(c, "SPLIT_K");
}

// The family's parameters, their values and what each one decides. Clusters of 4 and 8 are declared only where
// `large_clusters` (sm90_space says where they can pay): declared everywhere they would triple the product the
// planner walks.
std::vector<ParamDecl> sm90_params(bool large_clusters) {
  const ParamValues clusters = large_clusters ? ParamValues{1, 2, 4, 8} : ParamValues{1, 2};
  return {
      {"BLOCK_M", {64, 128, 192, 256}, "data scheduling", "rows of C per CTA tile (whole 64-row wgmma blocks)"},
      {"BLOCK_N", {64, 128, 192, 256}, "data scheduling", "columns of C per CTA tile (the wgmma N)"},
      {"BLOCK_K", {kSm90BlockK}, "data scheduling", "depth of one stage: one 128-byte swizzle row of 16-bit elements"},
      {"STAGES", {2, 3, 4, 5, 6, 7, 8}, "compute pipeline", "shared-memory stages in the TMA ring"},
      {"CONSUMERS", {1, 2, 3}, "parameter adaptation",
       "consumer warpgroups (they split BLOCK_M); one producer beside them"},
      {"CLUSTER_M", clusters, "hardware mapping",
       "CTAs per cluster along M: they share the B tile through TMA multicast (4 and 8 only for operands with rows off "
       "32-byte sectors, on grids that can be one wave of them, as many as the chip record lists resident)"},
      {"CLUSTER_N", clusters, "hardware mapping",
       "CTAs per cluster along N: they share the A tile through TMA multicast (4 and 8 as for CLUSTER_M)"},
      {"GROUP_M", {1, 4, 8, 16, 0}, "data scheduling",
       "tile rows per group of the persistent walk, walked column by column (1: row-major order; 0: no groups, a "
       "generalized Hilbert curve over the whole grid of tiles)"},
      {"EPILOGUE", {kSm90EpilogueDirect, kSm90EpilogueTmaStore, kSm90EpilogueDeferred}, "hardware mapping",
       "0: direct stores from registers; 1: staged in shared memory and written by TMA; 2: as 1, deferred under the "
       "next tile's main loop"},
      {"EPI_SPLIT", {1, 2}, "data scheduling",
       "staging rounds per tile of the TMA-store epilogue (2: half tiles, or thirds of a 192-column tile, whose smaller "
       "staging tile leaves room for another stage)"},
      {"STMATRIX", {0, 1}, "hardware mapping", "1: the TMA-store epilogue writes its staging tile with stmatrix"},
      {"SPLIT_K", {1, 2, 3, 4, 6, 8, 16, 32}, "data scheduling",
       "slices of K per output tile, run by different CTAs and summed in slice order in a workspace (1: none); from "
       "4 slices with every slice on an SM of its own, each sums its share of the tile"},
      {"STREAM_K", {0, 1}, "data scheduling",
       "1: the last partial wave (and one full wave) shared out by k-blocks over every CTA, summed in order"},
      {"COPY_AB", {0, 1, 2, 3}, "hardware mapping",
       "operands copied first into buffers with 128-byte aligned rows, which TMA reads (any leading dimension; an "
       "operand already on 128-byte rows is read in place): 1 A and B, 2 A only, 3 B only"},
  };
}

// COPY_AB's constraints: which operands a copy may name on this problem, and those TMA cannot read in place.
void add_copy_constraints(ParamSpace& s, const Problem& q) {
  // COPY_AB names only copies that happen: an operand on 32-byte sectors is read in place, so a value copying only
  // such operands would be COPY_AB 0 again under another name (and tie with it in every ranking).
  {
    const bool a_off = sm90_rows_off_sectors(q, q.lda), b_off = sm90_rows_off_sectors(q, q.ldb);
    const std::vector<int64_t> useful = a_off && b_off ? std::vector<int64_t>{0, 1, 2, 3}
                                        : a_off        ? std::vector<int64_t>{0, 2}
                                        : b_off        ? std::vector<int64_t>{0, 3}
                                                       : std::vector<int64_t>{0};
    if (useful.size() < 4) {
      s.constraints.push_back(
          {Layer::hardware_mapping,
           fmt::format("COPY_AB in {{{}}}: {} (an operand whose rows start on 32-byte sectors is read in place)",
                       fmt::join(useful, ", "),
                       a_off ? "only A's rows are off 32-byte sectors"
                             : b_off ? "only B's rows are off 32-byte sectors" : "no operand's rows are off 32-byte sectors"),
           [useful](const Config& c) {
             return std::find(useful.begin(), useful.end(), p(c, "COPY_AB")) != useful.end();
           },
           {"COPY_AB"}});
    }
  }
  if (const std::string why = tma_ld_refusal(q, q.lda, "lda"); !why.empty()) {
    s.constraints.push_back({Layer::hardware_mapping, fmt::format("COPY_AB in {{1, 2}} (A copied): {}", why),
                             [](const Config& c) { return p(c, "COPY_AB") == 1 || p(c, "COPY_AB") == 2; },
                             {"COPY_AB"}});
  }
  if (const std::string why = tma_ld_refusal(q, q.ldb, "ldb"); !why.empty()) {
    s.constraints.push_back({Layer::hardware_mapping, fmt::format("COPY_AB in {{1, 3}} (B copied): {}", why),
                             [](const Config& c) { return p(c, "COPY_AB") == 1 || p(c, "COPY_AB") == 3; },
                             {"COPY_AB"}});
  }
}

// The constraints of the operands' layouts, the epilogue and shared memory.
void add_layout_and_memory_constraints(ParamSpace& s, const Problem& q, const hw::HwProfile& profile) {
  const int64_t smem_limit = profile.smem_per_block_bytes;
  const bool a_row = a_row_major(q.layout), b_row = b_row_major(q.layout);
  // A K-major operand's tile is split over the CTAs that share it by rows: whole 8-row swizzle atoms each. An
  // M/N-major one's 64-row boxes are split by whole boxes or, where their count does not divide, each box by K rows
  // (64 / CTAs, at least 8): always whole atoms for clusters of up to 8.
  if (a_row) {
    s.constraints.push_back({Layer::hardware_mapping,
                             "(BLOCK_M / CLUSTER_N) % 8 == 0 (A is row-major: the CTAs that share it copy whole "
                             "8-row swizzle atoms of its tile)",
                             [](const Config& c) { return (p(c, "BLOCK_M") / p(c, "CLUSTER_N")) % 8 == 0; },
                             {"BLOCK_M", "CLUSTER_N"}});
  }
  if (!b_row) {
    s.constraints.push_back({Layer::hardware_mapping,
                             "(BLOCK_N / CLUSTER_M) % 8 == 0 (B is column-major: the CTAs that share it copy whole "
                             "8-row swizzle atoms of its tile)",
                             [](const Config& c) { return (p(c, "BLOCK_N") / p(c, "CLUSTER_M")) % 8 == 0; },
                             {"BLOCK_N", "CLUSTER_M"}});
  }
  if (const std::string why = tma_store_refusal(q); !why.empty()) {
    s.constraints.push_back({Layer::hardware_mapping, fmt::format("EPILOGUE == 0: {}", why),
                             [](const Config& c) { return p(c, "EPILOGUE") == kSm90EpilogueDirect; }, {"EPILOGUE"}});
  }
  s.constraints.push_back(
      {Layer::data_scheduling,
       "EPI_SPLIT == 1 unless the epilogue stages through shared memory (EPILOGUE 1 or 2), and EPI_SPLIT == 2 only "
       "with BLOCK_N of at least 128 (halves, or thirds of 192, in whole 64-column boxes per round)",
       [](const Config& c) {
         const int64_t split = p(c, "EPI_SPLIT");
         if (p(c, "EPILOGUE") == kSm90EpilogueDirect) return split == 1;
         return split == 1 || sm90_epi_rounds(p(c, "BLOCK_N"), split) > 1;
       },
       {"EPI_SPLIT", "EPILOGUE", "BLOCK_N"}});
  if (!profile.has("stmatrix")) {
    s.constraints.push_back({Layer::hardware_mapping, "STMATRIX == 0 (the chip record lists no stmatrix)",
                             [](const Config& c) { return p(c, "STMATRIX") == 0; }, {"STMATRIX"}});
  }
  s.constraints.push_back({Layer::hardware_mapping,
                           "STMATRIX == 0 unless the epilogue stages through shared memory (EPILOGUE 1 or 2)",
                           [](const Config& c) {
                             return p(c, "STMATRIX") == 0 || p(c, "EPILOGUE") != kSm90EpilogueDirect;
                           },
                           {"STMATRIX", "EPILOGUE"}});
  s.constraints.push_back(
      {Layer::data_scheduling,
       smem_limit > 0
           ? fmt::format("shared memory STAGES * (BLOCK_M + BLOCK_N) * 128 + the C staging tile (BLOCK_M * BLOCK_N * "
                         "2 over its rounds, EPILOGUE 1 or 2) + barriers + 1024 <= {} bytes per block",
                         smem_limit)
           : std::string("shared memory per block: the profile records no smem_per_block_bytes"),
       [smem_limit](const Config& c) { return smem_limit > 0 && sm90_smem_bytes(c) <= smem_limit; },
       {"BLOCK_M", "BLOCK_N", "BLOCK_K", "STAGES", "EPILOGUE", "EPI_SPLIT"}});
}

// The constraints of the consumer warpgroups: whole m64 blocks each, the accumulators and the rules of three
// consumers (their registers), and the register file.
std::vector<Constraint> consumer_constraints(const hw::HwProfile& profile) {
  // Limits the profile does not record are not assumed: the constraint then admits no config and names the field.
  const int64_t regs_per_sm = profile.registers_per_core;
  return {
      {Layer::parameter_adaptation, "BLOCK_M % (64 * CONSUMERS) == 0 (each consumer warpgroup owns whole 64-row wgmma blocks)",
       [](const Config& c) { return p(c, "BLOCK_M") % (64 * p(c, "CONSUMERS")) == 0; }, {"BLOCK_M", "CONSUMERS"}},
      {Layer::parameter_adaptation,
       fmt::format("(BLOCK_M / CONSUMERS / 64) * BLOCK_N / 2 <= 128 f32 accumulators per consumer thread ({} with "
                   "three consumers, whose {} registers hold fewer)",
                   kMaxAccumulators3, kConsumerRegs3),
       [](const Config& c) { return sm90_accumulators(c) <= sm90_max_accumulators(c); },
       {"BLOCK_M", "BLOCK_N", "CONSUMERS"}},
      {Layer::parameter_adaptation,
       fmt::format("EPILOGUE != 2 with three consumers (the deferred epilogue's 16-bit tile does not fit beside the "
                   "accumulators in {} registers)",
                   kConsumerRegs3),
       [](const Config& c) { return p(c, "CONSUMERS") < 3 || p(c, "EPILOGUE") != kSm90EpilogueDeferred; },
       {"CONSUMERS", "EPILOGUE"}},
      {Layer::parameter_adaptation,
       fmt::format("SPLIT_K == 1 and STREAM_K == 0 with three consumers (the fix-up's loads spill beside their "
                   "accumulators in {} registers: 56 bytes for 192x128 stream-K)",
                   kConsumerRegs3),
       [](const Config& c) { return p(c, "CONSUMERS") < 3 || (p(c, "SPLIT_K") == 1 && p(c, "STREAM_K") == 0); },
       {"CONSUMERS", "SPLIT_K", "STREAM_K"}},
      {Layer::parameter_adaptation,
       regs_per_sm > 0
           ? fmt::format("registers: 128 x {} (producer) + 128 x CONSUMERS x {} ({} with three; consumers, "
                         "setmaxnreg), or 255 per thread with one consumer, <= {} per SM",
                         kProducerRegs, kConsumerRegs, kConsumerRegs3, regs_per_sm)
           : std::string("registers per SM: the profile records no registers_per_core"),
       [regs_per_sm](const Config& c) { return regs_per_sm > 0 && sm90_register_budget(c) <= regs_per_sm; },
       {"CONSUMERS"}},
  };
}

}  // namespace

ParamSpace sm90_space(const Problem& problem, const hw::HwProfile& profile) {
  const Problem q = problem.normalized();
  ParamSpace s;
  s.family = "sm90";
  s.version = kSm90Version;
  // Clusters of 4 or 8 are declared where they paid: an operand read in place with rows off 32-byte sectors (its
  // TMA rows cost more requests; a wider multicast reads each of them for more CTAs), on a grid that can be one wave
  // of them (the constraint below), i.e. where even the largest tiles, 256 x 256 per CTA, make no more cluster tiles
  // than are resident. Aligned, they measured slower (1024^3: 11.4 us in 4x2 clusters of 64x192 against 9.4).
  auto one_wave_possible = [&](int64_t cs) {
    const int64_t resident = sm90_resident_clusters(profile, cs);
    return resident > 0 && double(q.m) * double(q.n) * double(q.batch) / (256.0 * 256.0 * double(cs)) <= resident;
  };
  const bool rows_off = sm90_rows_off_sectors(q, q.lda) || sm90_rows_off_sectors(q, q.ldb);
  s.params = sm90_params(profile.has("cluster") && rows_off && (one_wave_possible(4) || one_wave_possible(8)));
  s.constraints = consumer_constraints(profile);
  add_copy_constraints(s, q);
  const int64_t k_blocks = cdiv(q.k, int64_t(kSm90BlockK));
  s.constraints.push_back({Layer::data_scheduling,
                           fmt::format("SPLIT_K <= ceil(K / BLOCK_K) = {} (every slice holds a k-block)", k_blocks),
                           [k_blocks](const Config& c) { return p(c, "SPLIT_K") <= k_blocks; }, {"SPLIT_K"}});
  s.constraints.push_back(
      {Layer::data_scheduling,
       "tiles x SPLIT_K, and with STREAM_K tiles x ceil(K / BLOCK_K), below 2^31 (the kernel's 32-bit schedule)",
       [q, k_blocks](const Config& c) {
         const int64_t tiles = cdiv(q.m, p(c, "BLOCK_M")) * cdiv(q.n, p(c, "BLOCK_N"));
         return tiles * p(c, "SPLIT_K") < (int64_t(1) << 31) &&
                (p(c, "STREAM_K") == 0 || tiles * k_blocks < (int64_t(1) << 31));
       },
       {"BLOCK_M", "BLOCK_N", "SPLIT_K", "STREAM_K"}});
  // The order of the walk matters only when its tiles do not all run at once; this keeps the Hilbert walk out of the
  // (far more numerous) spaces of small grids, where it would tie with every grouped order.
  {
    const int64_t sms = std::max(1, profile.cores);
    const std::array<int64_t, 4> resident = {sm90_resident_clusters(profile, 1), sm90_resident_clusters(profile, 2),
                                             sm90_resident_clusters(profile, 4), sm90_resident_clusters(profile, 8)};
    s.constraints.push_back(
        {Layer::data_scheduling,
         fmt::format("GROUP_M == 0 (Hilbert) only when the cluster tiles outnumber the clusters the {} SMs hold", sms),
         [q, resident](const Config& c) {
           if (p(c, "GROUP_M") != 0) return true;
           const int64_t cs = sm90_cluster_size(c);
           // Other sizes (up to 8 x 8 are declared) are the cluster-size constraint's to refuse.
           if (cs < 1 || cs > 8 || !std::has_single_bit(uint64_t(cs))) return true;
           return cluster_units(q, c) > resident[std::bit_width(uint64_t(cs)) - 1];
         },
         {"GROUP_M", "BLOCK_M", "BLOCK_N", "CLUSTER_M", "CLUSTER_N", "SPLIT_K"}});
  }
  s.constraints.push_back({Layer::data_scheduling, "SPLIT_K == 1 when STREAM_K == 1 (one way of sharing K)",
                           [](const Config& c) { return p(c, "STREAM_K") == 0 || p(c, "SPLIT_K") == 1; },
                           {"STREAM_K", "SPLIT_K"}});
  if (profile.has("cluster")) {
    // Clusters of four and eight share each operand tile among more CTAs (fewer L2 reads, fewer rows read off
    // sectors), but every CTA waits for all of them to release a stage, tile after tile: 1000^3 ran 11.9 us in 4x1
    // clusters of 64x192 against 12.5 in dispatch's 2x1 of 64x128, while 4096^3 in 2x2 clusters took 243 us against
    // 204 without (bench/sweeps/sm90-clusters-4-8.txt). So they are offered where the grid is one wave of them, at
    // the count the chip record says are resident (GPCs leave SMs over), and not with stream-K's shared waves.
    const int64_t r4 = sm90_resident_clusters(profile, 4), r8 = sm90_resident_clusters(profile, 8);
    s.constraints.push_back(
        {Layer::hardware_mapping,
         r4 + r8 == 0
             ? std::string("CLUSTER_M * CLUSTER_N <= 2 (the chip record lists no resident_clusters for larger ones)")
             : fmt::format("CLUSTER_M * CLUSTER_N <= 2, or 4 or 8 without stream-K where the cluster tiles x SPLIT_K "
                           "fit one wave of resident clusters ({} of 4, {} of 8: the chip record's resident_clusters)",
                           r4, r8),
         [q, r4, r8](const Config& c) {
           const int64_t cs = sm90_cluster_size(c);
           if (cs <= 2) return true;
           if ((cs != 4 && cs != 8) || p(c, "STREAM_K") != 0) return false;
           return cluster_units(q, c) <= (cs == 4 ? r4 : r8);
         },
         {"CLUSTER_M", "CLUSTER_N", "BLOCK_M", "BLOCK_N", "SPLIT_K", "STREAM_K"}});
  } else {
    s.constraints.push_back({Layer::hardware_mapping,
                             "CLUSTER_M = CLUSTER_N = 1 (the chip record lists no thread-block clusters)",
                             [](const Config& c) { return sm90_cluster_size(c) == 1; }, {"CLUSTER_M", "CLUSTER_N"}});
  }
  add_layout_and_memory_constraints(s, q, profile);
  return s;
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

Sm90Source sm90_source(const Problem& problem, const Config& c) {
  const Problem q = problem.normalized();
  Sm90Source k;
  const int64_t bm = p(c, "BLOCK_M"), bn = p(c, "BLOCK_N"), bk = p(c, "BLOCK_K"), cons = p(c, "CONSUMERS");
  const int64_t cm = p(c, "CLUSTER_M"), cn = p(c, "CLUSTER_N"), gm = p(c, "GROUP_M");
  const bool a_row = a_row_major(q.layout), b_row = b_row_major(q.layout);
  k.threads = sm90_threads(c);
  k.smem_bytes = sm90_smem_bytes(c);
  k.cluster = int(cm * cn);
  // An M/N-major tile's boxes are split by K rows where the CTAs sharing it do not divide them evenly
  // (sm90/config.cuh's *_ROW_PARTS).
  const int64_t a_row_parts = (bm / 64) % cn == 0 ? 1 : cn, b_row_parts = (bn / 64) % cm == 0 ? 1 : cm;
  k.a_box[0] = 64;
  k.a_box[1] = int(a_row ? bm / cn : 64 / a_row_parts);
  k.b_box[0] = 64;
  k.b_box[1] = int(b_row ? 64 / b_row_parts : bn / cm);
  k.c_box[0] = 64;
  k.c_box[1] = int(bm / cons);
  const int64_t split_k = c.get("SPLIT_K").value_or(1), stream_k = c.get("STREAM_K").value_or(0);
  const bool acc_f16 = q.precision.accum == DType::f16;
  k.entry = fmt::format("sm90_gemm_{}_{}_{}_{}x{}x{}_c{}_s{}_k{}x{}_g{}_e{}{}{}{}{}", to_string(q.precision.input),
                        to_string(q.precision.output), to_string(q.layout), bm, bn, bk, cons, p(c, "STAGES"), cm, cn,
                        gm == 0 ? std::string("h") : std::to_string(gm), p(c, "EPILOGUE"), p(c, "EPI_SPLIT"), p(c, "STMATRIX"),
                        split_k > 1 ? fmt::format("_sk{}", split_k) : stream_k ? "_stk" : "", acc_f16 ? "_acc16" : "");
  // One CTA per SM is the design (persistent, up to 227 KB of shared memory), so __launch_bounds__(threads, 1).
  // A diagnostic of the fix-up (gemm.cuh, TF_SM90_FIXUP_PROBE): never set in normal use, it makes C wrong.
  std::string probe;
  if (const char* v = std::getenv("TILEFORGE_SM90_FIXUP_PROBE"); v && *v && *v != '0') {
    probe = fmt::format("#define TF_SM90_FIXUP_PROBE {}\n", std::atoi(v));
    k.entry += fmt::format("_probe{}", std::atoi(v));
  }
  k.source = fmt::format(
      "// Generated by tileforge for {config}\n"
      "{probe}"
      "#include \"sm90/gemm.cuh\"\n"
      "using Cfg = tf::sm90::Config<{bm}, {bn}, {bk}, {st}, {cons}, {cm}, {cn}, {order}, {gm}, {in}, {out}, {arow}, "
      "{brow}, {epi}, {preg}, {creg}, {split}, {stm}, {splitk}, {streamk}, {acc16}>;\n"
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
      fmt::arg("acc16", acc_f16 ? "true" : "false"),
      fmt::arg("entry", k.entry));
  return k;
}

}  // namespace tileforge::cuda

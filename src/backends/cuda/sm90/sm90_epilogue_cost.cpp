// The sm90 cost model's price of the busiest CTA's epilogues: TMA-store, staged and direct stores of C.
#include "backends/cuda/sm90/sm90_epilogue_cost.hpp"

#include <algorithm>
#include <cmath>

#include "backends/cuda/sm90/sm90_cost_constants.hpp"

namespace tileforge::cuda::sm90_epilogue {
namespace {

using namespace sm90_constants;

// C's rows 16 bytes apart (as a TMA store needs; C's base is assumed aligned, as the operands' are): the staging
// epilogues store by TMA, otherwise the warpgroups store the staged tile. The direct epilogue stores pairs where ldc
// is even, otherwise one element per instruction.
double epilogue_staged_rate(const Problem& q, double out) {
  return std::fmod(double(q.ldc) * out, 16.0) == 0.0 ? kEpilogueTmaBytesPerSmCycle
                                                     : kEpilogueStagedStoreBytesPerSmCycle;
}
double epilogue_direct_slowdown(const Problem& q) { return q.ldc % 2 == 0 ? 1.0 : kEpilogueDirectOddLdcSlowdown; }

}  // namespace

double epilogue_seconds(const Problem& q, double out, double clock, int64_t bm, int64_t bn, const Sm90Schedule& sched,
                        int64_t finished, std::optional<int64_t> epilogue, std::optional<int64_t> stmatrix,
                        std::optional<int64_t> epi_split) {
  const bool reads_c = q.beta != 0.0;
  const double c_tile = double(bm * bn) * out;
  if (sched.shared_sum) {
    return c_tile * (reads_c ? 2.0 : 1.0) / double(sched.split_k) / (kEpilogueDirectBytesPerSmCycle * clock);
  }
  const double direct =
      c_tile * (reads_c ? 2.0 : 1.0) / (kEpilogueDirectBytesPerSmCycle * clock) * epilogue_direct_slowdown(q);
  double epi_tile = direct;
  if (!reads_c && epilogue != kSm90EpilogueDirect) {
    double staged = c_tile / (epilogue_staged_rate(q, out) * clock);
    if (stmatrix && *stmatrix == 0) staged *= kEpilogueNoStmatrixSlowdown;
    if (epi_split && *epi_split > 1) staged *= kEpilogueSplitSlowdown;
    if (epilogue == kSm90EpilogueDeferred) staged *= kEpilogueDeferredSlowdown;
    epi_tile = epilogue ? staged : std::min(direct, staged);
  }
  return double(finished) * epi_tile;
}

}  // namespace tileforge::cuda::sm90_epilogue

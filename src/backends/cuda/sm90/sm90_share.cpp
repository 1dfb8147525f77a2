// The sm90 cost model's view of a schedule from the busiest CTA (sm90_cost_model.hpp's sm90_share): its work units,
// k-steps, finished tiles and the partial tiles it writes and reads.
#include <algorithm>

#include "backends/cuda/sm90/sm90_cost_model.hpp"
#include "core/int_math.hpp"

namespace tileforge::cuda {

Sm90Share sm90_share(const Sm90Schedule& s) {
  Sm90Share r;
  const int64_t g = std::max<int64_t>(1, s.clusters), kb = s.k_blocks, t = s.cluster_tiles;
  if (s.cluster_sum) {
    // Whole tiles round-robin over clusters of the tile's slices: each CTA runs its slice's k-blocks of each and sums
    // its share of each in the cluster (no partial tile through the L2).
    r.units = cdiv(t, g);
    r.k_steps = r.units * cdiv(kb, s.split_k);
    r.finished = r.units;
  } else if (s.shared_sum) {
    // One unit per cluster; every slice sums 1/SPLIT_K of the tile from all of them and writes it.
    r.units = 1;
    r.k_steps = cdiv(kb, s.split_k);
    r.partials_written = 1;
    r.partials_read = 1;
  } else if (s.split_k > 1) {
    // Units (tile, slice) dealt round-robin; a tile's last slice to finish sums all of its slices.
    r.units = cdiv(t * s.split_k, g);
    r.k_steps = r.units * cdiv(kb, s.split_k);
    r.finished = cdiv(r.units, s.split_k);
    r.partials_written = r.units;
    r.partials_read = r.finished * (s.atomic_sum ? 1 : s.split_k);  // REDUCE 1: the one sum tile
  } else if (s.stream_k && s.sk_tiles > 0) {
    // Whole tiles round-robin, then an equal run of the shared tiles' k-blocks: at most two partial tiles (where
    // the run starts and ends); the tile it finishes has about clusters / sk_tiles + 1 slices.
    const int64_t dp = cdiv(t - s.sk_tiles, g), run = cdiv(s.sk_tiles * kb, g);
    r.units = dp + cdiv(run, kb) + 1;
    r.k_steps = dp * kb + run;
    r.partials_written = run >= kb ? 2 : 1;
    r.finished = dp + std::max<int64_t>(1, run / kb);
    r.partials_read = s.atomic_sum ? 1 : cdiv(g, s.sk_tiles) + 1;
  } else {
    r.units = cdiv(t, g);
    r.k_steps = r.units * kb;
    r.finished = r.units;
  }
  return r;
}

}  // namespace tileforge::cuda

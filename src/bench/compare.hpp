// Two bench reports side by side: per row, the change of our time and of the ratio to native, judged against a
// noise band from the runs' own spreads, so that a real regression is flagged and run-to-run noise is not.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/expected.hpp"

namespace tileforge::bench {

// One bench JSON row, as compare reads it.
struct RowTiming {
  std::string key;          // "4096x4096x4096 f16->f16 acc f32 RR ld 4096/4096/4096 batch 1": what was run
  std::string config;       // our config, "sm90 BLOCK_M=128 ..."
  double median_ms = 0;     // ours (or the fallback that ran)
  double iqr_ms = 0;        // q3 - q1 of the same reps
  std::optional<double> ratio;  // native time / ours
  std::string native;       // the native backend
  double native_median_ms = 0, native_iqr_ms = 0;  // the native call's, from the same interleaved reps
  bool busy = false;        // other processes held part of the machine while it was timed (bench's busy_flag)
};

struct RowChange {
  std::string key;
  std::optional<RowTiming> a, b;  // either missing: the row is in one report only
  double time_change = 0;          // b / a - 1 of our median (+0.10: 10% slower in b)
  double band = 0;                 // the noise band's half-width, relative, of the quantity judged
  std::optional<double> ratio_change;  // b's ratio / a's - 1
  bool by_ratio = false;           // judged by the ratio to native (both runs have one), else by our time
  std::string verdict;             // "regression", "improvement", "within noise", "only in A", "only in B"
};

// The band's floor: two processes of one build differ by a few percent on a shared machine even where each run's own
// reps are tight (clocks, placement, another tenant), which the within-run spread cannot see.
inline constexpr double kCompareBandFloor = 0.05;

// Reads a bench JSON report (schemas/bench.schema.json) into rows; a file that is not one is refused with its path.
Expected<std::vector<RowTiming>> read_bench_rows(std::string_view path);

// Pairs rows by what was run (shape, batch, precision, layout, leading dimensions) and judges each change. Where both
// runs measured the native library, by the ratio to it: ours and native were interleaved on the same operands, so a
// machine that got slower between runs (clocks, another tenant) moves both and leaves the ratio, while a slower kernel
// of ours moves the ratio; the band is max(kCompareBandFloor, 2 sqrt(sum of s^2)) over the four medians' s = IQR /
// median (the spread flag's statistic). Without native in both, by our time, with the two runs' s. A ratio that fell
// (or a time that grew) beyond the band is a regression; the other way, an improvement.
std::vector<RowChange> compare_rows(const std::vector<RowTiming>& a, const std::vector<RowTiming>& b);

// "table" (aligned columns), "markdown", or "json"; a summary line last in the text forms.
std::string format_changes(const std::vector<RowChange>& changes, std::string_view format, std::string_view a_name,
                           std::string_view b_name);

}  // namespace tileforge::bench

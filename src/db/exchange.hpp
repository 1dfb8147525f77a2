// Sharing tuning records: JSON export and import (merged by the best-median rule), and Triton config lists.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/expected.hpp"
#include "db/record.hpp"
#include "db/store.hpp"

namespace tileforge::db {

// The "format" member every export carries, and the version of its layout (docs/TUNING-DB.md).
inline constexpr std::string_view kExportFormat = "tileforge-tuning-db";
// 2: records may carry their measurement's quartiles and host load (time_ms.q1, .q3, .others_cores,
// .spare_cores); a version-1 file (without them) is still read.
// 3: records may say which host and device measured them (measured_on.host, .device_index); older files are read.
// 4: a record whose config sums by float atomics says so ("deterministic": false; left out when true, as every record
// of an older file is); older files are read.
inline constexpr int kExportFormatVersion = 4;
inline constexpr int kOldestExportFormatVersion = 1;

// The records as one JSON document (pretty-printed, stable member order, records in the given order).
std::string export_json(const std::vector<Record>& records);

// Parses and validates a whole export (validate_record: plausible times, known names, legal parameters). The first
// problem refuses the file with the record index and field named:
// "team.json: records[3].time_ms.median: is -1; must be a positive number". `origin` names the file.
Expected<std::vector<Record>> parse_export(std::string_view text, std::string_view origin);

struct ImportSummary {
  int64_t inserted = 0, replaced = 0, kept = 0;
};
// Validates the whole file first (nothing is written when any record is malformed), then merges it into the store
// in one transaction by the best-median rule; imported records are marked source "imported".
Expected<ImportSummary> import_json(Store& store, std::string_view text, std::string_view origin, bool force = false);

// A Python module with `configs = [triton.Config({...}, num_warps=..., num_stages=...), ...]` for the records of
// families that map to Triton's GEMM parameters (triton: BLOCK_M/N/K, GROUP_M, STAGES, WARPS; sm80, sm90: the same
// with WARPS_M * WARPS_N warps); a comment line per record names its shape and measured TFLOP/s; other records are
// skipped with a comment. `tuned` maps each record's (M, N, K) to its entry, and `autotune()` gives Triton's
// autotuner over the configs that runs a tuned shape's entry without timing the others (early_config_prune).
std::string export_triton(const std::vector<Record>& records);

}  // namespace tileforge::db

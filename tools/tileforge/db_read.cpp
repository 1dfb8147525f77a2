// `tileforge db list`, `show`, `export` and `check`: the subcommands that read the tuning DB.
#include <algorithm>
#include <cstdio>
#include <map>

#include <fmt/format.h>

#include "db/exchange.hpp"
#include "db_verbs.hpp"
#include "dispatch/dispatch.hpp"

namespace tileforge::cli::db_verb {

namespace {

// The fingerprints of the records shown, each with how many of them it holds.
using DeviceCounts = std::map<std::string, std::pair<db::Fingerprint, int>>;

DeviceCounts count_devices(const std::vector<db::Record>& records) {
  DeviceCounts devices;
  for (const auto& r : records) {
    auto& d = devices[r.device.hash()];
    d.first = r.device;
    ++d.second;
  }
  return devices;
}

std::string list_json(std::string_view verb, const Selection& s, const DeviceCounts& devices) {
  ojson doc = envelope(verb, s.where, s.opened.store.has_value());
  doc["devices"] = ojson::array();
  for (const auto& [hash, d] : devices) {
    doc["devices"].push_back({{"hash", hash}, {"records", d.second}, {"kind", d.first.kind}, {"name", d.first.name},
                              {"arch", d.first.arch}, {"cores", d.first.cores}, {"clock_mhz", d.first.clock_mhz},
                              {"driver", d.first.driver}, {"toolkit", d.first.toolkit}});
  }
  doc["rows"] = ojson::array();
  for (const auto& r : s.records) doc["rows"].push_back(record_json(r));
  return doc.dump(1) + "\n";
}

std::string list_table(const Selection& s, const DeviceCounts& devices) {
  const db::Location& where = s.where;
  const std::vector<db::Record>& records = s.records;
  const Opened& opened = s.opened;
  std::string out;
  if (!opened.store) {
    out += no_db_yet(where) + "\n";
  } else {
    out += fmt::format("tuning DB {} (from {}): {} record{} on {} device{}{}\n", where.path, where.origin,
                       records.size(), records.size() == 1 ? "" : "s", devices.size(), devices.size() == 1 ? "" : "s",
                       records.size() == opened.all.size() ? "" : fmt::format(" (of {} in all)", opened.all.size()));
  }
  if (!devices.empty()) {
    out += fmt::format("\n{:<16}  {:>7}  {}\n", "DEVICE", "RECORDS", "FINGERPRINT");
    for (const auto& [hash, d] : devices) out += fmt::format("{:<16}  {:>7}  {}\n", hash, d.second, d.first.describe());
  }
  const auto current = dispatch::current_family_versions();
  out += fmt::format("\n{:>5}  {:<8}  {:<7}  {:<16}  {:<44}  {:>10}  {:<12}  {:>9}  {:<20}  {:<8}  {}\n", "ID",
                     "DEVICE", "BACKEND", "FAMILY", "PROBLEM", "MEDIAN ms", "SPREAD", "TFLOP/s", "CREATED", "SOURCE",
                     "CONFIG");
  for (const auto& r : records) {
    const std::string family = fmt::format("{} v{}{}", r.family(), r.family_version,
                                           version_note(r, current) == "current" ? "" : " (stale)");
    out += fmt::format("{:>5}  {:<8}  {:<7}  {:<16}  {:<44}  {:>10.4g}  {:<12}  {:>9.4g}  {:<20}  {:<8}  {}\n", r.id,
                       r.device.hash().substr(0, 8), r.backend, family, r.problem.key(), r.time.median_ms,
                       spread_text(r.time), r.tflops, r.created_at, to_string(r.source), params_text(r.config));
  }
  if (records.empty()) out += "(no records)\n";
  return out;
}

// The ID argument: a whole number >= 1, or 0 when it is not one.
int64_t record_id(const std::string& text) {
  const bool digits = !text.empty() && text.size() <= 18 && text.find_first_not_of("0123456789") == std::string::npos;
  return digits ? std::stoll(text) : 0;
}

std::string show_json(std::string_view verb, const db::Location& where, const db::Record& r,
                      const std::optional<db::InvalidRow>& invalid) {
  ojson j = record_json(r);
  if (invalid) j["invalid"] = invalid->why;
  ojson doc = envelope(verb, where, true);
  doc["rows"] = ojson::array({std::move(j)});
  return doc.dump(1) + "\n";
}

// How the record was measured: time, spread, host load, and whether dispatch uses it.
std::string measurement_text(const db::Record& r) {
  std::string out;
  out += fmt::format("  time        median {:.4g} ms (min {:.4g}, max {:.4g}, {} reps)\n", r.time.median_ms,
                     r.time.min_ms, r.time.max_ms, r.time.reps);
  if (const auto share = r.time.iqr_share()) {
    out += fmt::format("  spread      {:.3f} of the median (q1 {:.4g} ms, q3 {:.4g} ms; limit {:.2f})\n", *share,
                       *r.time.q1_ms, *r.time.q3_ms, db::kSpreadIqrLimit);
  } else {
    out += "  spread      unknown (stored without quartiles)\n";
  }
  if (r.time.others_cores) {
    out += fmt::format("  host load   other processes used {:.2f} cores while it was timed, {} spare\n",
                       *r.time.others_cores,
                       r.time.spare_cores ? fmt::format("{:.0f}", *r.time.spare_cores) : std::string("unknown"));
  }
  const db::Quality quality = r.time.quality();
  const bool known = r.time.iqr_share() || r.time.others_cores;
  out += fmt::format("  dispatch    {}\n", !quality.clean() ? "passed over for the planner: " + quality.why
                                          : known          ? std::string("usable (measured clean)")
                                                           : std::string("usable (no spread or host load stored: "
                                                                         "counts as clean)"));
  return out;
}

std::string show_text(const db::Location& where, const db::Record& r, const std::optional<db::InvalidRow>& invalid) {
  std::string out;
  const auto current = dispatch::current_family_versions();
  out += fmt::format("record #{} in {}\n", r.id, where.path);
  if (invalid) {
    out += fmt::format("  INVALID     {} (never dispatched; `tileforge db prune --invalid` removes it)\n",
                       invalid->why);
  }
  out += fmt::format("  device      {} [{}]\n", r.device.describe(), r.device.hash());
  out += fmt::format("  backend     {}\n", r.backend);
  out += fmt::format("  family      {} v{} ({})\n", r.family(), r.family_version, version_note(r, current));
  out += fmt::format("  problem     {} (bucket {})\n", r.problem.key(), r.problem.bucket().shape());
  out += fmt::format("  config      {}\n", db::config_to_json(r.config));
  out += measurement_text(r);
  out += fmt::format("  throughput  {:.4g} TFLOP/s\n", r.tflops);
  out += fmt::format("  error       relative {:.2e}, max scaled {:.2e}\n", r.rel_error, r.max_scaled_error);
  out += fmt::format("  measured    by tileforge {} at {} ({})\n", r.tool_version, r.created_at, to_string(r.source));
  return out;
}

}  // namespace

int run_list(const ListArgs& a) {
  constexpr std::string_view verb = "db list";
  auto selected = select_records(a.db, a.filter);
  if (!selected) return fail(verb, selected.status());
  const DeviceCounts devices = count_devices(selected->records);
  const std::string out = a.output.format == "json" ? list_json(verb, *selected, devices) : list_table(*selected, devices);
  std::optional<OutputFile> file;
  if (Status s = open_output(a.output.out, file); !s) return fail(verb, s);
  return emit(verb, file, out);
}

int run_show(const ShowArgs& a) {
  constexpr std::string_view verb = "db show";
  const int64_t id = record_id(a.id);
  if (id < 1) {
    return fail(verb, invalid_argument(fmt::format(
                          "ID '{}' is not a record id (allowed: a whole number >= 1, as `tileforge db list` shows)", a.id)));
  }
  auto where = location_from(a.db);
  if (!where) return fail(verb, where.status());
  if (!file_exists(where->path)) return fail(verb, not_available(no_db_yet(*where)));
  auto store = open_existing(*where);
  if (!store) return fail(verb, store.status());
  std::optional<db::InvalidRow> invalid;
  auto record = store->get(id, &invalid);
  if (!record) return fail(verb, record.status());
  if (!*record) {
    return fail(verb, invalid_argument(fmt::format("ID {}: no such record in {} (`tileforge db list` shows the ids)", id,
                                                   where->path)));
  }
  const db::Record& r = **record;
  const std::string out = a.output.format == "json" ? show_json(verb, *where, r, invalid) : show_text(*where, r, invalid);
  std::optional<OutputFile> file;
  if (Status s = open_output(a.output.out, file); !s) return fail(verb, s);
  return emit(verb, file, out);
}

int run_export(const ExportArgs& a) {
  constexpr std::string_view verb = "db export";
  auto selected = select_records(a.db, a.filter);
  if (!selected) return fail(verb, selected.status());
  const db::Location& where = selected->where;
  if (!selected->opened.store) return fail(verb, not_available(no_db_yet(where) + "; nothing to export"));
  std::optional<OutputFile> out;
  if (Status s = open_output(a.output.out, out); !s) return fail(verb, s);
  const std::vector<db::Record>& records = selected->records;
  const std::string text = a.output.format == "triton" ? db::export_triton(records) : db::export_json(records);
  if (int code = emit(verb, out, text); code != kExitOk) return code;
  if (out && !a.output.quiet) {
    std::fprintf(stderr, "exported %zu records from %s to %s\n", records.size(), where.path.c_str(),
                 a.output.out.c_str());
  }
  return kExitOk;
}

int run_check(const CheckArgs& a) {
  constexpr std::string_view verb = "db check";
  auto where = location_from(a.db);
  if (!where) return fail(verb, where.status());
  std::optional<OutputFile> file;
  if (Status s = open_output(a.output.out, file); !s) return fail(verb, s);
  std::vector<db::InvalidRow> bad;
  std::size_t valid = 0;
  const bool exists = file_exists(where->path);
  if (exists) {
    auto store = open_existing(*where);
    if (!store) return fail(verb, store.status());
    auto records = store->list({}, &bad);
    if (!records) return fail(verb, records.status());
    valid = records->size();
    std::sort(bad.begin(), bad.end(), [](const auto& x, const auto& y) { return x.id < y.id; });
  }
  std::string out;
  if (a.output.format == "json") {
    // One row per invalid record; the count of valid ones beside them.
    ojson doc = envelope(verb, *where, exists);
    doc["valid"] = valid;
    doc["rows"] = ojson::array();
    for (const db::InvalidRow& b : bad) doc["rows"].push_back({{"id", b.id}, {"key", b.key}, {"why", b.why}});
    out = doc.dump(1) + "\n";
  } else if (!exists) {
    out = no_db_yet(*where) + "; nothing to check\n";
  } else {
    out = fmt::format("tuning DB {}: {} valid record{}, {} invalid\n", where->path, valid, valid == 1 ? "" : "s",
                      bad.size());
    for (const db::InvalidRow& b : bad) out += fmt::format("  {}\n", b.describe());
    if (!bad.empty()) {
      out += "invalid records are never dispatched and never block a new result; `tileforge db prune --invalid` "
             "removes them\n";
    }
  }
  if (int code = emit(verb, file, out); code != kExitOk) return code;
  return bad.empty() ? kExitOk : kExitFailure;
}

}  // namespace tileforge::cli::db_verb

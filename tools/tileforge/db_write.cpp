// `tileforge db import` and `prune`: the subcommands that write the tuning DB, and their reports (text, table, JSON).
#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/clock.hpp"
#include "core/columns.hpp"
#include "db/exchange.hpp"
#include "db_verbs.hpp"
#include "dispatch/dispatch.hpp"

namespace tileforge::cli::db_verb {

namespace {

// An ISO UTC time, or an age ("90d", "12h", "2w", "30m", "45s") counted back from now.
Expected<std::string> cutoff_from(const std::string& text) {
  if (db::is_iso_time(text)) return text;
  static const std::map<char, int64_t> unit = {{'s', 1}, {'m', 60}, {'h', 3600}, {'d', 86400}, {'w', 604800}};
  const bool age = text.size() >= 2 && unit.count(text.back()) &&
                   text.find_first_not_of("0123456789") == text.size() - 1 && text.size() <= 10;
  if (!age) {
    return invalid_argument(fmt::format("--older-than '{}' is neither a UTC time nor an age (allowed: "
                                        "YYYY-MM-DDTHH:MM:SSZ, or a number with s, m, h, d or w such as 30d)",
                                        text));
  }
  const int64_t seconds = std::stoll(text.substr(0, text.size() - 1)) * unit.at(text.back());
  const int64_t now =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  return iso_time(now - seconds);
}

// The DB a prune works on and where it is, or the exit code when there is none (nothing to prune) or it cannot be
// opened. A dry run only reads: it works on a DB this user may not write.
struct PruneTarget {
  db::Location where;
  std::optional<db::Store> store;
  int exit = 0;
};

// What a prune removed (or with --dry-run would remove): one row per record, as `db list` names it.
struct PrunedRow {
  int64_t id = 0;
  std::optional<db::Record> record;  // as far as it reads
  std::string invalid;               // why the row is invalid, when it is
  std::string key;                   // the stored key of an invalid row that does not read as a record
};
struct PruneReport {
  db::Location where;
  bool exists = true;
  bool dry_run = false;
  bool invalid_only = false;  // --invalid: every row is an invalid one, and the text says so
  std::vector<PrunedRow> rows;
  int64_t count = 0;  // records removed (with --dry-run: that would be)
};

std::string prune_text(const PruneReport& r);
std::string prune_table(const PruneReport& r);
std::string prune_json(const PruneReport& r);

// The report in the --format asked for, to --out or stdout; with --out, one line on stderr unless --quiet.
int emit_prune(const PruneArgs& a, std::optional<OutputFile>& file, const PruneReport& report) {
  constexpr std::string_view verb = "db prune";
  const std::string& format = a.output.format;
  const std::string out = format == "json" ? prune_json(report) : format == "table" ? prune_table(report)
                                                                                     : prune_text(report);
  if (int code = emit(verb, file, out); code != kExitOk) return code;
  if (file && !a.output.quiet) {
    std::fprintf(stderr, "%s %lld record%s from %s; report in %s\n", report.dry_run ? "would prune" : "pruned",
                 static_cast<long long>(report.count), report.count == 1 ? "" : "s", report.where.path.c_str(),
                 a.output.out.c_str());
  }
  return kExitOk;
}

PruneTarget prune_target(const PruneArgs& a, std::optional<OutputFile>& file) {
  constexpr std::string_view verb = "db prune";
  PruneTarget t;
  auto where = location_from(a.db);
  if (!where) {
    t.exit = fail(verb, where.status());
    return t;
  }
  t.where = *where;
  if (!file_exists(where->path)) {
    PruneReport none{*where, false, a.dry_run, a.invalid, {}, 0};
    t.exit = emit_prune(a, file, none);
    return t;
  }
  auto store = a.dry_run ? open_existing(*where) : db::Store::open(where->path);
  if (!store) {
    t.exit = fail(verb, store.status());
    return t;
  }
  t.store.emplace(std::move(*store));
  return t;
}

// `db prune --invalid [--dry-run]`: every row validation refuses.
int run_prune_invalid(const PruneArgs& a, std::optional<OutputFile>& file) {
  constexpr std::string_view verb = "db prune";
  PruneTarget t = prune_target(a, file);
  if (!t.store) return t.exit;
  auto rows = t.store->prune_invalid(a.dry_run);
  if (!rows) return fail(verb, rows.status());
  PruneReport report{t.where, true, a.dry_run, true, {}, int64_t(rows->size())};
  for (const db::InvalidRow& bad : *rows) report.rows.push_back({bad.id, std::nullopt, bad.why, bad.key});
  return emit_prune(a, file, report);
}

// The store's filter from the criteria options, the time resolved; `prefix` gets the --device prefix, which names a
// fingerprint only once the DB is open (resolve_device).
Expected<db::PruneFilter> prune_filter_from(const PruneArgs& a, std::string& prefix) {
  db::PruneFilter filter;
  if (!a.older_than.empty()) {
    auto cutoff = cutoff_from(a.older_than);
    if (!cutoff) return cutoff.status();
    filter.older_than = *cutoff;
  }
  if (!a.device.empty()) {
    auto p = hash_prefix(a.device, "--device");
    if (!p) return p.status();
    prefix = *p;
  }
  if (a.stale_versions) filter.current = dispatch::current_family_versions();
  return filter;
}

// The one fingerprint hash a --device prefix names in this DB. A prefix must name exactly one fingerprint: pruning
// the wrong machine's records cannot be undone.
Expected<std::string> resolve_device(db::Store& store, const std::string& prefix, const PruneArgs& a,
                                     const db::Location& where) {
  auto devices = store.devices();
  if (!devices) return devices.status();
  std::vector<std::string> matches;
  for (const auto& d : *devices)
    if (d.hash.starts_with(prefix)) matches.push_back(d.hash);
  if (matches.size() != 1) {
    return invalid_argument(fmt::format(
        "--device {} {} (allowed: a hash or unique prefix of one of the fingerprints `tileforge db list` shows)",
        a.device,
        matches.empty() ? fmt::format("matches no fingerprint in {}", where.path)
                        : fmt::format("matches {} fingerprints: {}", matches.size(), fmt::join(matches, ", "))));
  }
  return matches.front();
}

// The records prune(filter) deletes, each as far as it reads, so that a dry run names them before they go and a
// real prune says what went.
Expected<std::vector<PrunedRow>> prune_rows(db::Store& store, const db::PruneFilter& filter) {
  auto ids = store.prune_matches(filter);
  if (!ids) return ids.status();
  std::vector<PrunedRow> rows;
  for (int64_t id : *ids) {
    std::optional<db::InvalidRow> invalid;
    auto record = store.get(id, &invalid);
    PrunedRow row{id, record && *record ? **record : std::optional<db::Record>(), {}, {}};
    if (invalid) {
      row.invalid = invalid->why;
      row.key = invalid->key;
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

// "#12 1a2b3c4d cpu cpu-avx2 v3 KEY created TIME" as `db list` names a record, or the stored key of an invalid one.
std::string row_text(const PrunedRow& row) {
  if (!row.record) return fmt::format("#{}{}", row.id, row.key.empty() ? "" : " " + row.key);
  const db::Record& r = *row.record;
  return fmt::format("#{} {} {} {} v{} {} created {}", row.id, r.device.hash().substr(0, 8), r.backend, r.family(),
                     r.family_version, r.problem.key(), r.created_at);
}

std::string prune_text(const PruneReport& r) {
  if (!r.exists) return no_db_yet(r.where) + "; nothing to prune\n";
  const char* verb = r.dry_run ? "would prune" : "pruned";
  std::string out;
  for (const PrunedRow& row : r.rows) {
    out += r.invalid_only ? fmt::format("{} {}\n", verb, db::InvalidRow{row.id, row.key, row.invalid}.describe())
                          : fmt::format("{} {}{}\n", verb, row_text(row),
                                        row.invalid.empty() ? "" : fmt::format(" (invalid: {})", row.invalid));
  }
  out += fmt::format("{} {} {}record{} from {}{}\n", verb, r.count, r.invalid_only ? "invalid " : "",
                     r.count == 1 ? "" : "s", r.where.path, r.dry_run ? "; nothing was deleted (--dry-run)" : "");
  return out;
}

std::string prune_table(const PruneReport& r) {
  if (!r.exists) return no_db_yet(r.where) + "; nothing to prune\n";
  std::vector<std::vector<std::string>> cells = {
      {"ID", "DEVICE", "BACKEND", "FAMILY", "PROBLEM", "MEDIAN ms", "TFLOP/s", "CREATED", "INVALID"}};
  for (const PrunedRow& row : r.rows) {
    if (!row.record) {
      cells.push_back({fmt::format("{}", row.id), "-", "-", "-", row.key, "-", "-", "-", row.invalid});
      continue;
    }
    const db::Record& rec = *row.record;
    cells.push_back({fmt::format("{}", row.id), rec.device.hash().substr(0, 8), rec.backend,
                     fmt::format("{} v{}", rec.family(), rec.family_version), rec.problem.key(),
                     fmt::format("{:.4g}", rec.time.median_ms), fmt::format("{:.4g}", rec.tflops), rec.created_at,
                     row.invalid.empty() ? "-" : row.invalid});
  }
  return fmt::format("{} {} record{} from {}{}\n\n", r.dry_run ? "would prune" : "pruned", r.count,
                     r.count == 1 ? "" : "s", r.where.path, r.dry_run ? " (--dry-run: nothing was deleted)" : "") +
         columns::format_columns(cells, {true, false, false, false, false, true, true, false, false}) +
         (r.rows.empty() ? "(no records)\n" : "");
}

std::string prune_json(const PruneReport& r) {
  ojson doc = envelope("db prune", r.where, r.exists);
  doc["dry_run"] = r.dry_run;
  doc[r.dry_run ? "would_remove" : "removed"] = r.count;
  doc["rows"] = ojson::array();
  for (const PrunedRow& row : r.rows) {
    ojson j = row.record ? record_json(*row.record) : ojson{{"id", row.id}, {"key", row.key}};
    j["invalid"] = row.invalid.empty() ? ojson(nullptr) : ojson(row.invalid);
    doc["rows"].push_back(std::move(j));
  }
  return doc.dump(1) + "\n";
}

// What an import did: records new to the DB, stored ones replaced, and stored ones kept, with the rule that decided.
struct ImportReport {
  db::Location where;
  std::string file;
  bool force = false;
  db::ImportSummary summary;
};

std::string import_text(const ImportReport& r) {
  const db::ImportSummary& s = r.summary;
  return fmt::format("imported {} into {}: {} new, {} replaced, {} kept{}\n", r.file, r.where.path, s.inserted,
                     s.replaced, s.kept,
                     r.force ? " (--force: the file's records replace stored ones)"
                     : s.kept ? " (a stored record as fast or faster wins; --force replaces)" : "");
}

// One row per outcome, each with its count and why.
std::vector<std::array<std::string, 3>> import_outcomes(const ImportReport& r) {
  const db::ImportSummary& s = r.summary;
  return {{"new", fmt::format("{}", s.inserted), "no stored record of the key"},
          {"replaced", fmt::format("{}", s.replaced),
           r.force ? "--force: the file's record replaces the stored one" : "faster than the stored record"},
          {"kept", fmt::format("{}", s.kept), "the stored record is as fast or faster (--force replaces)"}};
}

std::string import_table(const ImportReport& r) {
  std::vector<std::vector<std::string>> cells = {{"OUTCOME", "RECORDS", "WHY"}};
  for (const auto& o : import_outcomes(r)) cells.push_back({o[0], o[1], o[2]});
  return fmt::format("imported {} into {}\n\n", r.file, r.where.path) +
         columns::format_columns(cells, {false, true, false});
}

std::string import_json_doc(const ImportReport& r) {
  ojson doc = envelope("db import", r.where, true);
  doc["file"] = r.file;
  doc["force"] = r.force;
  doc["rows"] = ojson::array();
  for (const auto& o : import_outcomes(r)) {
    doc["rows"].push_back({{"outcome", o[0]}, {"records", std::stoll(o[1])}, {"why", o[2]}});
  }
  return doc.dump(1) + "\n";
}

}  // namespace

int run_import(const ImportArgs& a) {
  constexpr std::string_view verb = "db import";
  auto where = location_from(a.db);
  if (!where) return fail(verb, where.status());
  std::error_code ec;
  if (std::filesystem::is_directory(a.file, ec)) {
    return fail(verb, invalid_argument(fmt::format("FILE {} is a directory (allowed: a JSON export file)", a.file)));
  }
  std::ifstream in(a.file, std::ios::binary);
  if (!in) {
    return fail(verb, Status(Code::io_error, fmt::format("FILE {}: cannot be read ({})", a.file,
                                                         std::error_code(errno, std::generic_category()).message())));
  }
  std::stringstream text;
  text << in.rdbuf();
  // The whole file is checked before the DB is created or opened, so a bad file leaves no DB behind; an unwritable
  // --out is refused before anything is written too.
  if (auto parsed = db::parse_export(text.str(), a.file); !parsed) return fail(verb, parsed.status());
  std::optional<OutputFile> file;
  if (Status s = open_output(a.output.out, file); !s) return fail(verb, s);
  auto store = db::Store::open(where->path);
  if (!store) return fail(verb, store.status());
  auto summary = db::import_json(*store, text.str(), a.file, a.force);
  if (!summary) return fail(verb, summary.status());
  const ImportReport report{*where, a.file, a.force, *summary};
  const std::string& format = a.output.format;
  const std::string out = format == "json" ? import_json_doc(report) : format == "table" ? import_table(report)
                                                                                     : import_text(report);
  if (int code = emit(verb, file, out); code != kExitOk) return code;
  if (file && !a.output.quiet) std::fprintf(stderr, "%s", import_text(report).c_str());
  return kExitOk;
}

int run_prune(const PruneArgs& a) {
  constexpr std::string_view verb = "db prune";
  if (a.invalid && (!a.older_than.empty() || !a.device.empty() || a.stale_versions)) {
    return fail(verb, invalid_argument("--invalid removes every invalid record and takes no other criterion "
                                       "(allowed with it: --dry-run, --db); nothing was deleted"));
  }
  if (!a.invalid && a.older_than.empty() && a.device.empty() && !a.stale_versions) {
    return fail(verb, invalid_argument("give at least one of --older-than, --device, --stale-versions, --invalid "
                                       "(all given must hold for a record to go); nothing was deleted"));
  }
  std::string prefix;
  auto filter = prune_filter_from(a, prefix);
  if (!filter) return fail(verb, filter.status());
  // --out is created before anything is deleted: an unwritable path deletes nothing.
  std::optional<OutputFile> file;
  if (Status s = open_output(a.output.out, file); !s) return fail(verb, s);
  if (a.invalid) return run_prune_invalid(a, file);
  PruneTarget t = prune_target(a, file);
  if (!t.store) return t.exit;
  db::Store& store = *t.store;
  if (!prefix.empty()) {
    auto device = resolve_device(store, prefix, a, t.where);
    if (!device) return fail(verb, device.status());
    filter->device = *device;
  }
  filter->dry_run = a.dry_run;
  auto rows = prune_rows(store, *filter);
  if (!rows) return fail(verb, rows.status());
  PruneReport report{t.where, true, a.dry_run, false, std::move(*rows), 0};
  report.count = int64_t(report.rows.size());
  if (!a.dry_run) {
    auto removed = store.prune(*filter);
    if (!removed) return fail(verb, removed.status());
    report.count = *removed;
  }
  return emit_prune(a, file, report);
}

}  // namespace tileforge::cli::db_verb

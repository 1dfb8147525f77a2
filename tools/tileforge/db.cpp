// `tileforge db`: list, show, export, import and prune the records of the tuning DB.
#include <cctype>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <system_error>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "dispatch/dispatch.hpp"
#include "db/exchange.hpp"
#include "db/store.hpp"
#include "options.hpp"
#include "plan/kernel_family.hpp"
#include "plan/candidates.hpp"

namespace tileforge::cli {
namespace {

using ojson = nlohmann::ordered_json;

struct FilterArgs {
  std::string device, backend, family;
};

struct ListArgs {
  DbArgs db;
  FilterArgs filter;
  std::string format = "table";
};

struct ShowArgs {
  DbArgs db;
  std::string id;
  std::string format = "text";
};

struct ExportArgs {
  DbArgs db;
  FilterArgs filter;
  std::string format = "json";
  std::string out;
};

struct ImportArgs {
  DbArgs db;
  std::string file;
  bool force = false;
};

struct PruneArgs {
  DbArgs db;
  std::string older_than, device;
  bool stale_versions = false;
};

struct Args {
  ListArgs list;
  ShowArgs show;
  ExportArgs exp;
  ImportArgs imp;
  PruneArgs prune;
};

Expected<db::Location> location_from(const DbArgs& args) {
  auto request = db_request_from(args);
  if (!request) return request.status();
  return db::resolve_location(*request);
}

bool file_exists(const std::string& path) {
  std::error_code ec;
  return std::filesystem::exists(path, ec);
}

std::string no_db_yet(const db::Location& where) {
  return fmt::format("no tuning DB at {} yet (from {}); `tileforge tune` or `tileforge db import` writes one",
                     where.path, where.origin);
}

// Opens an existing DB for reading. For writing first, so that an older schema is migrated (as the store's message
// promises every `db` command does); a file this user may only read is still listed.
Expected<db::Store> open_existing(const db::Location& where) {
  auto store = db::Store::open(where.path);
  if (store) return store;
  db::OpenOptions ro;
  ro.access = db::Access::read_only;
  if (auto read_only = db::Store::open(where.path, ro); read_only) return read_only;
  return store.status();
}

// 1 to 16 hex digits, lowered: a fingerprint hash or a prefix of one, as `db list` prints them.
Expected<std::string> hash_prefix(const std::string& text, const char* name) {
  std::string out;
  for (char c : text) out += char(std::tolower(static_cast<unsigned char>(c)));
  const bool hex = !out.empty() && out.size() <= 16 &&
                   out.find_first_not_of("0123456789abcdef") == std::string::npos;
  if (!hex) {
    return invalid_argument(fmt::format("{} '{}' is not a device fingerprint hash or a prefix of one (allowed: 1 to 16 "
                                        "hex digits, as `tileforge db list` shows them)",
                                        name, text));
  }
  return out;
}

// The names this build knows, plus those present in the DB (records imported from a newer build), sorted.
std::vector<std::string> known_names(std::set<std::string> names) { return {names.begin(), names.end()}; }

// Checks the filter options and turns them into the store's filter; `records` is every record of the DB (empty
// when there is none), so that a name seen only in the DB is accepted.
Expected<db::ListFilter> filter_from(const FilterArgs& f, const std::vector<db::Record>& records) {
  db::ListFilter out;
  if (!f.device.empty()) {
    auto prefix = hash_prefix(f.device, "--device");
    if (!prefix) return prefix.status();
    out.device = *prefix;
  }
  if (!f.backend.empty()) {
    std::set<std::string> backends;
    for (Backend* b : all_backends())
      if (!b->native()) backends.insert(std::string(b->name()));
    for (const auto& r : records) backends.insert(r.backend);
    if (!backends.count(f.backend)) {
      return invalid_argument(fmt::format("--backend '{}' is not known (allowed: {})", f.backend,
                                          fmt::join(known_names(backends), ", ")));
    }
    out.backend = f.backend;
  }
  if (!f.family.empty()) {
    const std::vector<std::string> registered = plan::family_names();
    std::set<std::string> families(registered.begin(), registered.end());
    for (const auto& r : records) families.insert(r.family());
    if (!families.count(f.family)) {
      return invalid_argument(fmt::format("--family '{}' is not known (allowed: {})", f.family,
                                          fmt::join(known_names(families), ", ")));
    }
    out.family = f.family;
  }
  return out;
}

// Every record of the DB, to check names against; empty when the DB does not exist.
struct Opened {
  std::optional<db::Store> store;
  std::vector<db::Record> all;
};

Expected<Opened> open_for_reading(const db::Location& where) {
  Opened o;
  if (!file_exists(where.path)) return o;
  auto store = open_existing(where);
  if (!store) return store.status();
  auto all = store->list();
  if (!all) return all.status();
  o.all = std::move(*all);
  o.store = std::move(*store);
  return o;
}

std::vector<db::Record> filtered(const std::vector<db::Record>& all, const db::ListFilter& f) {
  std::vector<db::Record> out;
  for (const auto& r : all) {
    if (!f.device.empty() && !r.device.hash().starts_with(f.device)) continue;
    if (!f.backend.empty() && r.backend != f.backend) continue;
    if (!f.family.empty() && r.family() != f.family) continue;
    out.push_back(r);
  }
  return out;
}

std::string params_text(const Config& c) {
  std::vector<std::string> parts;
  for (const auto& [name, value] : c.params) parts.push_back(fmt::format("{}={}", name, value));
  return fmt::format("{}", fmt::join(parts, " "));
}

std::string version_note(const db::Record& r, const std::map<std::string, int64_t>& current) {
  auto it = current.find(r.family());
  if (it == current.end()) return "this build does not run this family";
  if (it->second == r.family_version) return "current";
  return fmt::format("stale: this build runs v{}; never dispatched, `db prune --stale-versions` removes it", it->second);
}

// What `db list` and `db export` work on: where the DB is, whether it exists, and its records the filter keeps.
struct Selection {
  db::Location where;
  Opened opened;
  std::vector<db::Record> records;
};

Expected<Selection> select_records(const DbArgs& db, const FilterArgs& filter) {
  auto where = location_from(db);
  if (!where) return where.status();
  auto opened = open_for_reading(*where);
  if (!opened) return opened.status();
  auto f = filter_from(filter, opened->all);
  if (!f) return f.status();
  Selection s{std::move(*where), std::move(*opened), {}};
  s.records = filtered(s.opened.all, *f);
  return s;
}

// One record as the JSON export writes it, with its id and device hash first.
ojson record_json(const db::Record& r) {
  const ojson exported = ojson::parse(db::export_json({r}));
  ojson j;
  j["id"] = r.id;
  j["device_hash"] = r.device.hash();
  for (const auto& [key, value] : exported["records"][0].items()) j[key] = value;
  return j;
}

// ---- list ------------------------------------------------------------------------------------------------------

int run_list(const ListArgs& a) {
  constexpr std::string_view verb = "db list";
  if (a.format != "table" && a.format != "json") {
    return fail(verb, invalid_argument(fmt::format("--format '{}' is not known (allowed: table, json)", a.format)));
  }
  auto selected = select_records(a.db, a.filter);
  if (!selected) return fail(verb, selected.status());
  const db::Location& where = selected->where;
  const std::vector<db::Record>& records = selected->records;
  const Opened& opened = selected->opened;

  // The fingerprints of the records shown, each with how many of them it holds.
  std::map<std::string, std::pair<db::Fingerprint, int>> devices;
  for (const auto& r : records) {
    auto& d = devices[r.device.hash()];
    d.first = r.device;
    ++d.second;
  }

  std::string out;
  if (a.format == "json") {
    ojson doc;
    doc["db"] = where.path;
    doc["origin"] = where.origin;
    doc["exists"] = opened.store.has_value();
    doc["devices"] = ojson::array();
    for (const auto& [hash, d] : devices) {
      doc["devices"].push_back({{"hash", hash}, {"records", d.second}, {"kind", d.first.kind}, {"name", d.first.name},
                                {"arch", d.first.arch}, {"cores", d.first.cores}, {"clock_mhz", d.first.clock_mhz},
                                {"driver", d.first.driver}, {"toolkit", d.first.toolkit}});
    }
    doc["records"] = ojson::array();
    for (const auto& r : records) doc["records"].push_back(record_json(r));
    out = doc.dump(1) + "\n";
  } else {
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
    out += fmt::format("\n{:>5}  {:<8}  {:<7}  {:<16}  {:<44}  {:>10}  {:>9}  {:<20}  {:<8}  {}\n", "ID", "DEVICE",
                       "BACKEND", "FAMILY", "PROBLEM", "MEDIAN ms", "TFLOP/s", "CREATED", "SOURCE", "CONFIG");
    for (const auto& r : records) {
      const std::string family = fmt::format("{} v{}{}", r.family(), r.family_version,
                                             version_note(r, current) == "current" ? "" : " (stale)");
      out += fmt::format("{:>5}  {:<8}  {:<7}  {:<16}  {:<44}  {:>10.4g}  {:>9.4g}  {:<20}  {:<8}  {}\n", r.id,
                         r.device.hash().substr(0, 8), r.backend, family, r.problem.key(), r.time.median_ms, r.tflops,
                         r.created_at, to_string(r.source), params_text(r.config));
    }
    if (records.empty()) out += "(no records)\n";
  }
  std::optional<bench::OutputFile> none;
  return emit(verb, none, out);
}

// ---- show ------------------------------------------------------------------------------------------------------

int run_show(const ShowArgs& a) {
  constexpr std::string_view verb = "db show";
  if (a.format != "text" && a.format != "json") {
    return fail(verb, invalid_argument(fmt::format("--format '{}' is not known (allowed: text, json)", a.format)));
  }
  int64_t id = 0;
  {
    const bool digits = !a.id.empty() && a.id.size() <= 18 && a.id.find_first_not_of("0123456789") == std::string::npos;
    if (digits) id = std::stoll(a.id);
    if (!digits || id < 1) {
      return fail(verb, invalid_argument(fmt::format(
                            "ID '{}' is not a record id (allowed: a whole number >= 1, as `tileforge db list` shows)", a.id)));
    }
  }
  auto where = location_from(a.db);
  if (!where) return fail(verb, where.status());
  if (!file_exists(where->path)) return fail(verb, not_available(no_db_yet(*where)));
  auto store = open_existing(*where);
  if (!store) return fail(verb, store.status());
  auto record = store->get(id);
  if (!record) return fail(verb, record.status());
  if (!*record) {
    return fail(verb, invalid_argument(fmt::format("ID {}: no such record in {} (`tileforge db list` shows the ids)", id,
                                                   where->path)));
  }
  const db::Record& r = **record;
  std::string out;
  if (a.format == "json") {
    out = record_json(r).dump(1) + "\n";
  } else {
    const auto current = dispatch::current_family_versions();
    out += fmt::format("record #{} in {}\n", r.id, where->path);
    out += fmt::format("  device      {} [{}]\n", r.device.describe(), r.device.hash());
    out += fmt::format("  backend     {}\n", r.backend);
    out += fmt::format("  family      {} v{} ({})\n", r.family(), r.family_version, version_note(r, current));
    out += fmt::format("  problem     {} (bucket {})\n", r.problem.key(), r.problem.bucket().shape());
    out += fmt::format("  config      {}\n", db::config_to_json(r.config));
    out += fmt::format("  time        median {:.4g} ms (min {:.4g}, max {:.4g}, {} reps)\n", r.time.median_ms,
                       r.time.min_ms, r.time.max_ms, r.time.reps);
    out += fmt::format("  throughput  {:.4g} TFLOP/s\n", r.tflops);
    out += fmt::format("  error       relative {:.2e}, max scaled {:.2e}\n", r.rel_error, r.max_scaled_error);
    out += fmt::format("  measured    by tileforge {} at {} ({})\n", r.tool_version, r.created_at, to_string(r.source));
  }
  std::optional<bench::OutputFile> none;
  return emit(verb, none, out);
}

// ---- export ----------------------------------------------------------------------------------------------------

int run_export(const ExportArgs& a) {
  constexpr std::string_view verb = "db export";
  if (a.format != "json" && a.format != "triton") {
    return fail(verb, invalid_argument(fmt::format("--format '{}' is not known (allowed: json, triton)", a.format)));
  }
  auto selected = select_records(a.db, a.filter);
  if (!selected) return fail(verb, selected.status());
  const db::Location& where = selected->where;
  if (!selected->opened.store) return fail(verb, not_available(no_db_yet(where) + "; nothing to export"));
  std::optional<bench::OutputFile> out;
  if (!a.out.empty()) {
    auto file = bench::OutputFile::create(a.out);
    if (!file) return fail(verb, file.status());
    out.emplace(std::move(*file));
  }
  const std::vector<db::Record>& records = selected->records;
  const std::string text = a.format == "triton" ? db::export_triton(records) : db::export_json(records);
  if (int code = emit(verb, out, text); code != kExitOk) return code;
  if (out) std::fprintf(stderr, "exported %zu records from %s to %s\n", records.size(), where.path.c_str(), a.out.c_str());
  return kExitOk;
}

// ---- import ----------------------------------------------------------------------------------------------------

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
  // The whole file is checked before the DB is created or opened, so a bad file leaves no DB behind.
  if (auto parsed = db::parse_export(text.str(), a.file); !parsed) return fail(verb, parsed.status());
  auto store = db::Store::open(where->path);
  if (!store) return fail(verb, store.status());
  auto summary = db::import_json(*store, text.str(), a.file, a.force);
  if (!summary) return fail(verb, summary.status());
  const std::string line =
      fmt::format("imported {} into {}: {} new, {} replaced, {} kept{}\n", a.file, where->path, summary->inserted,
                  summary->replaced, summary->kept,
                  a.force ? " (--force: the file's records replace stored ones)"
                          : summary->kept ? " (a stored record as fast or faster wins; --force replaces)" : "");
  std::optional<bench::OutputFile> none;
  return emit(verb, none, line);
}

// ---- prune -----------------------------------------------------------------------------------------------------

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
  return db::iso_time(now - seconds);
}

int run_prune(const PruneArgs& a) {
  constexpr std::string_view verb = "db prune";
  if (a.older_than.empty() && a.device.empty() && !a.stale_versions) {
    return fail(verb, invalid_argument("give at least one of --older-than, --device, --stale-versions (all given "
                                       "must hold for a record to go); nothing was deleted"));
  }
  db::PruneFilter filter;
  if (!a.older_than.empty()) {
    auto cutoff = cutoff_from(a.older_than);
    if (!cutoff) return fail(verb, cutoff.status());
    filter.older_than = *cutoff;
  }
  std::string prefix;
  if (!a.device.empty()) {
    auto p = hash_prefix(a.device, "--device");
    if (!p) return fail(verb, p.status());
    prefix = *p;
  }
  if (a.stale_versions) filter.current = dispatch::current_family_versions();
  auto where = location_from(a.db);
  if (!where) return fail(verb, where.status());
  std::optional<bench::OutputFile> none;
  if (!file_exists(where->path)) return emit(verb, none, no_db_yet(*where) + "; nothing to prune\n");
  auto store = db::Store::open(where->path);
  if (!store) return fail(verb, store.status());
  if (!prefix.empty()) {
    // A prefix must name exactly one fingerprint: pruning the wrong machine's records cannot be undone.
    auto devices = store->devices();
    if (!devices) return fail(verb, devices.status());
    std::vector<std::string> matches;
    for (const auto& d : *devices)
      if (d.hash.starts_with(prefix)) matches.push_back(d.hash);
    if (matches.size() != 1) {
      return fail(verb, invalid_argument(fmt::format(
                            "--device {} {} (allowed: a hash or unique prefix of one of the fingerprints `tileforge "
                            "db list` shows)",
                            a.device,
                            matches.empty() ? fmt::format("matches no fingerprint in {}", where->path)
                                            : fmt::format("matches {} fingerprints: {}", matches.size(),
                                                          fmt::join(matches, ", ")))));
    }
    filter.device = matches.front();
  }
  auto removed = store->prune(filter);
  if (!removed) return fail(verb, removed.status());
  return emit(verb, none, fmt::format("pruned {} record{} from {}\n", *removed, *removed == 1 ? "" : "s", where->path));
}

void add_filter_options(CLI::App& app, FilterArgs& f) {
  app.add_option("--device", f.device, "only records of fingerprints whose hash starts with this")->type_name("HASH");
  app.add_option("--backend", f.backend, "only records of this backend (cpu, cuda)")->type_name("NAME");
  app.add_option("--family", f.family, "only records of this kernel family (sm80, cpu-avx2, ...)")->type_name("NAME");
}

}  // namespace

Command add_db_command(CLI::App& parent) {
  auto args = std::make_shared<Args>();
  CLI::App* app = parent.add_subcommand(
      "db", "List, show, export, import and prune the tuning DB's records (the DB: --db PATH, else $TILEFORGE_DB, "
            "else $XDG_CACHE_HOME/tileforge/tune.db or ~/.cache/tileforge/tune.db)");
  // No require_subcommand: a bare `tileforge db` is answered below with the subcommands named.
  app->require_subcommand(0, 1);

  CLI::App* list = app->add_subcommand("list", "The records, one line each, and the device fingerprints they hold");
  add_db_options(*list, args->list.db, false);
  add_filter_options(*list, args->list.filter);
  list->add_option("--format", args->list.format, "table or json (default: table)")->type_name("FORMAT");

  CLI::App* show = app->add_subcommand("show", "One record with every field");
  show->add_option("ID", args->show.id, "the record's id, as db list shows it")->required();
  add_db_options(*show, args->show.db, false);
  show->add_option("--format", args->show.format, "text or json (default: text)")->type_name("FORMAT");

  CLI::App* exp = app->add_subcommand(
      "export", "The records as JSON (for db import elsewhere) or as Triton triton.Config lists");
  add_db_options(*exp, args->exp.db, false);
  add_filter_options(*exp, args->exp.filter);
  exp->add_option("--format", args->exp.format, "json or triton (default: json)")->type_name("FORMAT");
  exp->add_option("--out", args->exp.out, "write to FILE (atomically: whole or not at all); default: stdout")
      ->type_name("FILE");

  CLI::App* imp = app->add_subcommand(
      "import", "Merge a JSON export into the DB (created when missing): per key the faster record wins");
  imp->add_option("FILE", args->imp.file, "a file written by db export")->required();
  add_db_options(*imp, args->imp.db, false);
  imp->add_flag("--force", args->imp.force, "the file's records replace stored ones even when slower");

  CLI::App* prune = app->add_subcommand(
      "prune", "Delete records: every criterion given must hold (fingerprints left without records go too)");
  add_db_options(*prune, args->prune.db, false);
  prune->add_option("--older-than", args->prune.older_than,
                    "records created before this UTC time (YYYY-MM-DDTHH:MM:SSZ) or longer ago than an age (30d, 12h)")
      ->type_name("TIME|AGE");
  prune->add_option("--device", args->prune.device, "records of this fingerprint (its hash, or a unique prefix)")
      ->type_name("HASH");
  prune->add_flag("--stale-versions", args->prune.stale_versions,
                  "records of a kernel family version older than the one this build runs (never dispatched)");

  return {app, [args, list, show, exp, imp, prune]() -> int {
            if (list->parsed()) return run_list(args->list);
            if (show->parsed()) return run_show(args->show);
            if (exp->parsed()) return run_export(args->exp);
            if (imp->parsed()) return run_import(args->imp);
            if (prune->parsed()) return run_prune(args->prune);
            return fail("db", invalid_argument("a subcommand is required (allowed: list, show, export, import, prune; "
                                               "run 'tileforge db --help')"));
          }};
}

}  // namespace tileforge::cli

// `tileforge db`: list, show, export, import, check and prune the records of the tuning DB.
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <system_error>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "core/envelope.hpp"
#include "core/clock.hpp"
#include "dispatch/dispatch.hpp"
#include "db/exchange.hpp"
#include "db/store.hpp"
#include "hw/hw.hpp"
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
  bool invalid = false;
  bool dry_run = false;
};

struct CheckArgs {
  DbArgs db;
  std::string format = "text";
};

struct Args {
  ListArgs list;
  ShowArgs show;
  ExportArgs exp;
  ImportArgs imp;
  PruneArgs prune;
  CheckArgs check;
};

// ---- what this build knows: the tuning DB's checks of names and parameters -------------------------------------

// The device kind of a backend's fingerprints (db::Fingerprint::kind): "cpu" for the CPU backend, "gpu" for every
// accelerator backend. A backend this build has families for but does not compile (cuda without the toolkit) is
// judged by its name.
std::string kind_of_backend(std::string_view backend) {
  if (const Backend* b = find_backend(backend)) return b->device_kind() == "cpu" ? "cpu" : "gpu";
  return backend == "cpu" ? "cpu" : "gpu";
}

// A compiled-in chip profile standing for a record's chip, to check its parameters on: for a GPU, the profile that
// names it (match_names) with the same arch, since its limits (shared memory, registers) decide what is legal; for
// a CPU, one of the same arch (the CPU families' spaces depend on the problem alone). nullptr when none: the
// parameters are then checked only on the running device, by dispatch, before a record is used.
const hw::HwProfile* profile_for(const db::Fingerprint& f) {
  static const std::vector<hw::HwProfile> builtin = [] {
    std::vector<hw::HwProfile> out;
    for (const std::string& name : hw::builtin_profile_names())
      if (auto p = hw::load_profile(name)) out.push_back(std::move(*p));
    return out;
  }();
  for (const hw::HwProfile& p : builtin) {
    if (p.kind != f.kind || p.arch != f.arch) continue;
    if (f.kind == "cpu" || std::find(p.match_names.begin(), p.match_names.end(), f.name) != p.match_names.end()) {
      return &p;
    }
  }
  return nullptr;
}

// A problem of the record's signature: tight leading dimensions rounded up to its alignment class, so that the
// family's space sees the vector widths the record was tuned with (a tight 66-wide f32 problem has class 8, a
// record of class 16 came from a padded one).
Problem problem_for(const db::Signature& s) {
  Problem p = db::problem_of(s);
  const Problem tight = p.normalized();
  auto up = [](int64_t v, int64_t step) { return (v + step - 1) / step * step; };
  const int64_t in_step = std::max<int64_t>(1, s.align / int64_t(size_of(s.input)));
  const int64_t out_step = std::max<int64_t>(1, s.align / int64_t(size_of(s.output)));
  p.lda = up(tight.lda, in_step);
  p.ldb = up(tight.ldb, in_step);
  p.ldc = up(tight.ldc, out_step);
  return p;
}

// The family's space for a problem on a profile, kept: `db list` checks every record, many of one shape.
ParamSpace space_for(const plan::KernelFamily& family, const Problem& p, const hw::HwProfile& profile, int cores) {
  static std::mutex mu;
  static std::map<std::string, ParamSpace> cache;
  const std::string key = fmt::format("{}|{}|{}|{}", family.name(), p.describe(), profile.name, cores);
  std::lock_guard lock(mu);
  auto it = cache.find(key);
  if (it == cache.end()) {
    it = cache.emplace(key, family.candidates(p, profile, family.plans_threads() ? std::max(1, cores) : 0).space)
             .first;
  }
  return it->second;
}

// The checks the DB layer cannot make itself (it sits below the family registry): a backend and device kind this
// build knows, a registered family of that backend that takes the problem, and, for the family's current version
// on a chip with a compiled-in profile, parameters its space allows.
std::optional<db::FieldError> check_against_build(const db::Record& r) {
  std::set<std::string> backends;
  for (const plan::KernelFamily* f : plan::families()) backends.insert(std::string(f->backend()));
  if (!backends.count(r.backend)) {
    return db::FieldError{"backend", fmt::format("'{}' is not a tileforge backend (allowed: {})", r.backend,
                                                 fmt::join(backends, ", "))};
  }
  if (const std::string kind = kind_of_backend(r.backend); r.device.kind != kind) {
    return db::FieldError{"device.kind", fmt::format("is {}; backend {} runs on {} devices", r.device.kind,
                                                     r.backend, kind)};
  }
  const plan::KernelFamily* family = plan::find_family(r.family());
  if (!family) {
    return db::FieldError{"config.family", fmt::format("'{}' is not a kernel family of this build (allowed: {})",
                                                       r.family(), fmt::join(plan::family_names(), ", "))};
  }
  if (family->backend() != r.backend) {
    return db::FieldError{"config.family", fmt::format("{} runs on backend {}, not {}", r.family(),
                                                       family->backend(), r.backend)};
  }
  // Parameters mean what the family's current version declares; a record of another version is stale (never
  // dispatched; `db prune --stale-versions` removes it), not invalid.
  if (r.family_version != family->version()) return std::nullopt;
  const Problem p = problem_for(r.problem);
  if (const plan::SupportGap gap = family->supports(p); !gap.empty()) {
    return db::FieldError{"problem", fmt::format("{} does not take it: {}", r.family(), gap.why)};
  }
  const hw::HwProfile* profile = profile_for(r.device);
  if (!profile) return std::nullopt;  // limits of a chip without a compiled-in profile: checked where it runs
  if (Status legal = space_for(*family, p, *profile, r.device.cores).check(r.config); !legal) {
    return db::FieldError{"config", fmt::format("{} (the {} space for {} on {})", legal.message(), r.family(),
                                                r.problem.shape(), profile->name)};
  }
  return std::nullopt;
}

// NOTE: installed when the tool starts, before any verb opens a DB, so that tune's writes, imports and every read
// (dispatch included) apply the same rules.
const bool kRulesInstalled = [] {
  db::set_record_rules(check_against_build);
  return true;
}();

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
  std::vector<db::InvalidRow> skipped;  // invalid rows, left out of `all`
};

// One warning line per invalid row a reading verb left out, and what to do about them.
void warn_skipped(const db::Location& where, const std::vector<db::InvalidRow>& skipped) {
  for (const db::InvalidRow& bad : skipped) {
    std::fprintf(stderr, "tileforge: warning: tuning DB %s: skipped invalid %s\n", where.path.c_str(),
                 bad.describe().c_str());
  }
  if (!skipped.empty()) {
    std::fprintf(stderr,
                 "tileforge: warning: %zu invalid record%s skipped (never dispatched); `tileforge db check` lists "
                 "them, `tileforge db prune --invalid` removes them\n",
                 skipped.size(), skipped.size() == 1 ? "" : "s");
  }
}

Expected<Opened> open_for_reading(const db::Location& where) {
  Opened o;
  if (!file_exists(where.path)) return o;
  auto store = open_existing(where);
  if (!store) return store.status();
  auto all = store->list({}, &o.skipped);
  if (!all) return all.status();
  warn_skipped(where, o.skipped);
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

// The SPREAD column of `db list`: (q3 - q1) / median, "-" where the quartiles are unknown, marked where dispatch
// passes the record over.
std::string spread_text(const db::Timing& t) {
  const auto share = t.iqr_share();
  const db::Quality q = t.quality();
  std::string text = share ? fmt::format("{:.3f}", *share) : "-";
  if (q.noisy) text += " noisy";
  if (q.busy) text += " busy";
  return text;
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

// The envelope every verb's JSON shares (schemas/envelope.schema.json): the DB read is the environment of a db verb.
ojson envelope(std::string_view verb, const db::Location& where, bool exists) {
  ojson doc = tileforge::envelope<ojson>(verb);
  doc["environment"] = {{"tool_version", std::string(version())},
                        {"date", iso_date_now()},
                        {"db", where.path},
                        {"origin", where.origin},
                        {"exists", exists}};
  return doc;
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
    ojson doc = envelope(verb, where, opened.store.has_value());
    doc["devices"] = ojson::array();
    for (const auto& [hash, d] : devices) {
      doc["devices"].push_back({{"hash", hash}, {"records", d.second}, {"kind", d.first.kind}, {"name", d.first.name},
                                {"arch", d.first.arch}, {"cores", d.first.cores}, {"clock_mhz", d.first.clock_mhz},
                                {"driver", d.first.driver}, {"toolkit", d.first.toolkit}});
    }
    doc["rows"] = ojson::array();
    for (const auto& r : records) doc["rows"].push_back(record_json(r));
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
  std::optional<db::InvalidRow> invalid;
  auto record = store->get(id, &invalid);
  if (!record) return fail(verb, record.status());
  if (!*record) {
    return fail(verb, invalid_argument(fmt::format("ID {}: no such record in {} (`tileforge db list` shows the ids)", id,
                                                   where->path)));
  }
  const db::Record& r = **record;
  std::string out;
  if (a.format == "json") {
    ojson j = record_json(r);
    if (invalid) j["invalid"] = invalid->why;
    ojson doc = envelope(verb, *where, true);
    doc["rows"] = ojson::array({std::move(j)});
    out = doc.dump(1) + "\n";
  } else {
    const auto current = dispatch::current_family_versions();
    out += fmt::format("record #{} in {}\n", r.id, where->path);
    if (invalid) {
      out += fmt::format("  INVALID     {} (never dispatched; `tileforge db prune --invalid` removes it)\n",
                         invalid->why);
    }
    out += fmt::format("  device      {} [{}]\n", r.device.describe(), r.device.hash());
    out += fmt::format("  backend     {}\n", r.backend);
    out += fmt::format("  family      {} v{} ({})\n", r.family(), r.family_version, version_note(r, current));
    out += fmt::format("  problem     {} (bucket {})\n", r.problem.key(), r.problem.bucket().shape());
    out += fmt::format("  config      {}\n", db::config_to_json(r.config));
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
  if (Status s = open_output(a.out, out); !s) return fail(verb, s);
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
  return iso_time(now - seconds);
}

// The DB a prune works on and where it is, or the exit code when there is none (nothing to prune) or it cannot be
// opened. A dry run only reads: it works on a DB this user may not write.
struct PruneTarget {
  db::Location where;
  std::optional<db::Store> store;
  int exit = 0;
};
PruneTarget prune_target(std::string_view verb, const PruneArgs& a) {
  PruneTarget t;
  auto where = location_from(a.db);
  if (!where) {
    t.exit = fail(verb, where.status());
    return t;
  }
  t.where = *where;
  std::optional<bench::OutputFile> none;
  if (!file_exists(where->path)) {
    t.exit = emit(verb, none, no_db_yet(*where) + "; nothing to prune\n");
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

// `db prune --invalid [--dry-run]`: every row validation refuses, listed as it goes.
int run_prune_invalid(const PruneArgs& a) {
  constexpr std::string_view verb = "db prune";
  PruneTarget t = prune_target(verb, a);
  if (!t.store) return t.exit;
  const db::Location* where = &t.where;
  std::optional<bench::OutputFile> none;
  auto* store = &*t.store;
  auto rows = store->prune_invalid(a.dry_run);
  if (!rows) return fail(verb, rows.status());
  std::string out;
  for (const db::InvalidRow& bad : *rows) {
    out += fmt::format("{} {}\n", a.dry_run ? "would prune" : "pruned", bad.describe());
  }
  out += fmt::format("{} {} invalid record{} from {}\n", a.dry_run ? "would prune" : "pruned", rows->size(),
                     rows->size() == 1 ? "" : "s", where->path);
  return emit(verb, none, out);
}

int run_prune(const PruneArgs& a) {
  constexpr std::string_view verb = "db prune";
  if (a.invalid) {
    if (!a.older_than.empty() || !a.device.empty() || a.stale_versions) {
      return fail(verb, invalid_argument("--invalid removes every invalid record and takes no other criterion "
                                         "(allowed with it: --dry-run, --db); nothing was deleted"));
    }
    return run_prune_invalid(a);
  }
  if (a.older_than.empty() && a.device.empty() && !a.stale_versions) {
    return fail(verb, invalid_argument("give at least one of --older-than, --device, --stale-versions, --invalid "
                                       "(all given must hold for a record to go); nothing was deleted"));
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
  PruneTarget t = prune_target(verb, a);
  if (!t.store) return t.exit;
  const db::Location* where = &t.where;
  std::optional<bench::OutputFile> none;
  auto* store = &*t.store;
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
  filter.dry_run = a.dry_run;
  if (a.dry_run) {
    // Name each record that would go, as db list shows it, so the criteria can be checked before they delete.
    auto ids = store->prune_matches(filter);
    if (!ids) return fail(verb, ids.status());
    std::string out;
    for (int64_t id : *ids) {
      std::optional<db::InvalidRow> invalid;
      auto record = store->get(id, &invalid);
      if (!record || !*record) {
        out += fmt::format("would prune #{}\n", id);
        continue;
      }
      const db::Record& r = **record;
      out += fmt::format("would prune #{} {} {} {} v{} {} created {}{}\n", id, r.device.hash().substr(0, 8), r.backend,
                         r.family(), r.family_version, r.problem.key(), r.created_at,
                         invalid ? fmt::format(" (invalid: {})", invalid->why) : "");
    }
    out += fmt::format("would prune {} record{} from {}; nothing was deleted (--dry-run)\n", ids->size(),
                       ids->size() == 1 ? "" : "s", where->path);
    return emit(verb, none, out);
  }
  auto removed = store->prune(filter);
  if (!removed) return fail(verb, removed.status());
  return emit(verb, none, fmt::format("{} {} record{} from {}\n", a.dry_run ? "would prune" : "pruned", *removed,
                                      *removed == 1 ? "" : "s", where->path));
}

// ---- check -----------------------------------------------------------------------------------------------------

int run_check(const CheckArgs& a) {
  constexpr std::string_view verb = "db check";
  if (a.format != "text" && a.format != "json") {
    return fail(verb, invalid_argument(fmt::format("--format '{}' is not known (allowed: text, json)", a.format)));
  }
  auto where = location_from(a.db);
  if (!where) return fail(verb, where.status());
  std::optional<bench::OutputFile> none;
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
  if (a.format == "json") {
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
  if (int code = emit(verb, none, out); code != kExitOk) return code;
  return bad.empty() ? kExitOk : kExitFailure;
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
      "db", "List, show, export, import, check and prune the tuning DB's records (the DB: --db PATH, else "
            "$TILEFORGE_DB, else $XDG_CACHE_HOME/tileforge/tune.db or ~/.cache/tileforge/tune.db)");
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
  exp->add_option("--out", args->exp.out,
                  "write to FILE (atomically: whole or not at all; a device or FIFO in place, - for stdout; "
                  "docs/RELIABILITY.md); default: stdout")
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
  prune->add_flag("--invalid", args->prune.invalid,
                  "every record `db check` reports as invalid (alone: no other criterion)");
  prune->add_flag("--dry-run", args->prune.dry_run, "say what would go; delete nothing");

  CLI::App* check = app->add_subcommand(
      "check", "Validate every record; list the invalid ones (exit 1 when there are any)");
  add_db_options(*check, args->check.db, false);
  check->add_option("--format", args->check.format, "text or json (default: text)")->type_name("FORMAT");

  return {app, [args, list, show, exp, imp, prune, check]() -> int {
            if (list->parsed()) return run_list(args->list);
            if (show->parsed()) return run_show(args->show);
            if (exp->parsed()) return run_export(args->exp);
            if (imp->parsed()) return run_import(args->imp);
            if (prune->parsed()) return run_prune(args->prune);
            if (check->parsed()) return run_check(args->check);
            return fail("db", invalid_argument("a subcommand is required (allowed: list, show, export, import, "
                                               "check, prune; run 'tileforge db --help')"));
          }};
}

}  // namespace tileforge::cli

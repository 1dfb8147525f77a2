// The lookup chain of the tuning DB (db-exact, db-bucket, db-arch, planner) and the helpers dispatch calls it through.
#include <algorithm>
#include <cstdlib>
#include <tuple>

#include <fmt/format.h>

#include "db/store.hpp"
#include "db/store_detail.hpp"

namespace tileforge::db {

namespace {

std::string where_here(const Fingerprint& f) {
  if (f.kind == "gpu") return "this GPU";
  if (f.kind == "cpu") return "this CPU";
  return "this device";
}

std::string summary(const Record& r) {
  return fmt::format("{} v{}, median {:.4g} ms, {:.4g} TFLOP/s, {}", r.family(), r.family_version, r.time.median_ms,
                     r.tflops, r.source == Source::tuned ? "tuned " + r.created_at : "imported");
}

// The valid records of one backend in the problem's bucket, on any device, each with its device hash; the rows that
// fail validation apart.
struct BucketRows {
  std::vector<Record> records;
  std::vector<std::string> hashes;
  std::vector<InvalidRow> invalid;
};

// Every record of this backend in the problem's bucket, on any device; the architecture rule is applied by the
// caller so that the reason can say how many records of other architectures were left out. Throws sql::Error.
BucketRows read_bucket(sqlite3* db, int version, const std::string& backend, const Signature& want) {
  const Signature bucket = want.bucket();
  BucketRows rows;
  sql::Stmt s(db, detail::select_sql(version) +
                      " WHERE r.backend = ?1 AND r.input = ?2 AND r.output = ?3 AND r.accum = ?4 AND "
                      "r.layout = ?5 AND r.align = ?6 AND r.bucket_m = ?7 AND r.bucket_n = ?8 AND "
                      "r.bucket_k = ?9 AND r.bucket_batch = ?10");
  s.bind_text(1, backend).bind_text(2, to_string(want.input)).bind_text(3, to_string(want.output));
  s.bind_text(4, to_string(want.accum)).bind_text(5, to_string(want.layout)).bind_int(6, want.align);
  s.bind_int(7, bucket.m).bind_int(8, bucket.n).bind_int(9, bucket.k).bind_int(10, bucket.batch);
  while (s.step()) {
    detail::Row row = detail::read_row(s);
    // An invalid row is never dispatched: a median of 0 would otherwise sort first in every tier.
    if (!row.valid()) {
      rows.invalid.push_back(row.invalid());
      continue;
    }
    rows.records.push_back(std::move(row.record));
    rows.hashes.push_back(std::move(row.hash));
  }
  return rows;
}

struct Candidate {
  const Record* r;
  bool here;
  double distance;
};

// The four tiers in fallback order (exact here, bucket here, exact on arch, bucket on arch); records of other
// architectures, families and family versions are counted only.
struct Tiers {
  std::vector<Candidate> tier[4];
  int other_arch = 0, other_version = 0, other_family = 0, other_policy = 0;
};

Tiers partition(const BucketRows& rows, const LookupRequest& req, const Signature& want) {
  const std::string mine = req.device.hash();
  Tiers t;
  for (std::size_t i = 0; i < rows.records.size(); ++i) {
    const Record& r = rows.records[i];
    if (r.device.arch != req.device.arch) {
      ++t.other_arch;
      continue;
    }
    auto fam = req.families.find(r.family());
    if (fam == req.families.end()) {
      ++t.other_family;
      continue;
    }
    if (fam->second != r.family_version) {
      ++t.other_version;
      continue;
    }
    if (req.deterministic && !r.deterministic) {
      ++t.other_policy;
      continue;
    }
    const bool here = rows.hashes[i] == mine;
    const bool exact = r.problem == want;
    t.tier[(here ? 0 : 2) + (exact ? 0 : 1)].push_back({&r, here, log_distance(r.problem, want)});
  }
  return t;
}

// Deterministic orders (docs/TUNING-DB.md): nearest shape, then the device most like this one, then the faster
// record, then plain keys so that equal records still sort one way.
void sort_tiers(Tiers& t, const LookupRequest& req) {
  auto shape_key = [](const Record& r) {
    return std::tuple(r.problem.m, r.problem.n, r.problem.k, r.problem.batch);
  };
  auto likeness = [&](const Record& r) {
    return std::tuple(r.device.name == req.device.name ? 0 : 1, std::abs(r.device.cores - req.device.cores),
                      std::abs(r.device.clock_mhz - req.device.clock_mhz));
  };
  auto tail = [&](const Candidate& c) {
    return std::tuple(c.r->time.median_ms, shape_key(*c.r), c.r->device.hash(), c.r->family(), c.r->id);
  };
  std::sort(t.tier[0].begin(), t.tier[0].end(),
            [&](const Candidate& a, const Candidate& b) { return tail(a) < tail(b); });
  std::sort(t.tier[1].begin(), t.tier[1].end(), [&](const Candidate& a, const Candidate& b) {
    return std::tuple(a.distance, tail(a)) < std::tuple(b.distance, tail(b));
  });
  std::sort(t.tier[2].begin(), t.tier[2].end(), [&](const Candidate& a, const Candidate& b) {
    return std::tuple(likeness(*a.r), tail(a)) < std::tuple(likeness(*b.r), tail(b));
  });
  std::sort(t.tier[3].begin(), t.tier[3].end(), [&](const Candidate& a, const Candidate& b) {
    return std::tuple(a.distance, likeness(*a.r), tail(a)) < std::tuple(b.distance, likeness(*b.r), tail(b));
  });
}

// The first candidate, in tier order, that the request's `accept` takes: sets out's record, source and reason and
// returns true. Refused ones go to out.rejected.
bool pick_first_accepted(const Tiers& t, const LookupRequest& req, const Signature& want, LookupResult& out) {
  const Hit hits[4] = {Hit::exact, Hit::bucket, Hit::arch, Hit::arch};
  for (int k = 0; k < 4; ++k) {
    for (const Candidate& c : t.tier[k]) {
      if (req.accept) {
        if (Support s = req.accept(*c.r); !s) {
          out.rejected.push_back(
              fmt::format("record {} ({} {}): {}", c.r->id, c.r->problem.shape(), c.r->config.describe(), s.reason));
          continue;
        }
      }
      const Record& r = *c.r;
      out.source = hits[k];
      const std::string where =
          c.here ? where_here(req.device)
                 : fmt::format("{}, another fingerprint of {}", r.device.describe(), req.device.arch);
      const std::string for_shape = r.problem == want ? "" : fmt::format(" for {}", want.shape());
      out.reason = fmt::format("{}: {} tuned on {}{} ({})", to_string(out.source), r.problem.shape(), where, for_shape,
                               summary(r));
      out.record = r;
      return true;
    }
  }
  return false;
}

// The planner's line when no record was usable, with what was left out and why.
std::string planner_reason(const Tiers& t, const LookupRequest& req, const Signature& want, const LookupResult& out) {
  std::string skipped;
  auto note = [&](int count, std::string_view what) {
    if (count > 0) skipped += fmt::format("{}{} {}", skipped.empty() ? "; left out: " : ", ", count, what);
  };
  note(t.other_arch, "of another architecture");
  note(t.other_family, "of a family this backend does not run here");
  note(t.other_version, "of another family version");
  note(t.other_policy, "summing by float atomics (tuned under --nondeterministic; the deterministic policy reads none)");
  note(int(out.rejected.size()), "refused by the backend");
  if (!out.invalid.empty()) {
    note(int(out.invalid.size()), fmt::format("invalid (record #{}: {}; `tileforge db check` lists them)",
                                              out.invalid[0].id, out.invalid[0].why));
  }
  return fmt::format("planner: no record for {} on {} ({} or another {} device) in the tuning DB{}", want.key(),
                     req.backend, where_here(req.device), req.device.arch, skipped);
}

}  // namespace

Expected<LookupResult> Store::lookup(const LookupRequest& req) const {
  if (req.families.empty()) {
    return invalid_argument("lookup needs the kernel families the backend runs, with their current versions");
  }
  if (Status s = req.problem.validate(); !s) return s;
  const Signature want = signature_of(req.problem);

  BucketRows rows;
  {
    std::lock_guard lock(impl_->mu);
    try {
      rows = read_bucket(impl_->db, impl_->version, req.backend, want);
    } catch (const sql::Error& e) {
      return impl_->error(e);
    }
  }
  Tiers tiers = partition(rows, req, want);
  sort_tiers(tiers, req);

  LookupResult out;
  out.invalid = std::move(rows.invalid);
  if (pick_first_accepted(tiers, req, want, out)) return out;
  out.source = Hit::planner;
  out.reason = planner_reason(tiers, req, want, out);
  return out;
}

// ---- dispatch --------------------------------------------------------------------------------------------------

DispatchDb open_for_dispatch(const std::string& path, bool enabled) {
  DispatchDb out;
  if (!enabled) {
    out.note = "tuning DB disabled (--no-db)";
    return out;
  }
  OpenOptions o;
  o.access = Access::read_only;
  auto store = Store::open(path, o);
  if (!store) {
    out.note = store.status().message();
    return out;
  }
  out.store = std::move(store).value();
  return out;
}

std::function<Support(const Record&)> legal_in(ParamSpace space) {
  return [space = std::move(space)](const Record& r) {
    if (Status s = space.check(r.config); !s) return Support::no(s.message());
    return Support::yes();
  };
}

LookupRequest lookup_request(Fingerprint device, std::string backend, const Problem& problem, ParamSpace space,
                             bool deterministic) {
  LookupRequest request;
  request.deterministic = deterministic;
  request.device = std::move(device);
  request.backend = std::move(backend);
  request.problem = problem;
  if (!space.family.empty()) request.families = {{space.family, space.version}};
  request.accept = legal_in(std::move(space));
  return request;
}

LookupResult lookup_or_plan(const DispatchDb& db, const LookupRequest& request) {
  LookupResult out;
  if (!db.store) {
    out.reason = fmt::format("planner: {}", db.note.empty() ? "no tuning DB" : db.note);
    return out;
  }
  auto r = db.store->lookup(request);
  if (!r) {
    out.reason = fmt::format("planner: tuning DB lookup failed: {}", r.status().message());
    return out;
  }
  return std::move(r).value();
}

}  // namespace tileforge::db

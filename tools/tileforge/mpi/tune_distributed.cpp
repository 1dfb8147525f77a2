// `tileforge tune` across MPI ranks: each rank tunes its share of the shapes on its own device; rank 0 records all.
//
// Why this shape of protocol (docs/USAGE.md, "Tuning on many devices"):
//  - Whole shapes per rank: a shape's candidates are compared with each other, so they are measured on one device.
//  - A static assignment (tune/shard.hpp) that every rank computes from the same costs: no work queue to keep
//    alive, and a rank that dies loses only its own shapes, which a rerun finds missing and tunes.
//  - Rank 0 alone writes the DB: one SQLite writer on one file system (ranks on other machines may not share it),
//    and every record arrives as the JSON `db export` writes, checked by `db import`'s parser before it is stored.
//    Each is committed in its own transaction as it arrives, so a killed job leaves only whole records.
#include <mpi.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "db/exchange.hpp"
#include "db/store.hpp"
#include "dispatch/dispatch.hpp"
#include "tune/shard.hpp"
#include "tune_distributed.hpp"

namespace tileforge::cli {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr int kTagResult = 1;    // one finished shape: a JSON object (see ShapeResult)
constexpr int kTagFinished = 2;  // the rank has no more shapes (empty message)

struct World {
  int rank = 0, size = 1;               // in MPI_COMM_WORLD
  int local_rank = 0, local_size = 1;   // among the ranks of this host (MPI_COMM_TYPE_SHARED)
  MPI_Comm local = MPI_COMM_NULL;
  std::string host;
};

// One finished shape as a rank reports it to rank 0.
struct ShapeResult {
  std::size_t index = 0;   // into the problem list every rank built alike
  int rank = 0;
  bool ok = false;         // tune() ran (a winner may still have stayed unrecorded: see export_json)
  std::string error;       // why not, or why its winner was not recorded
  std::string export_json; // the winner's record as `db export` writes it; empty when there is none to record
  std::string outcome;     // db_outcome on the rank
  double seconds = 0;
};

std::string to_message(const ShapeResult& r) {
  return json{{"index", r.index}, {"rank", r.rank},       {"ok", r.ok},           {"error", r.error},
              {"export", r.export_json}, {"outcome", r.outcome}, {"seconds", r.seconds}}
      .dump();
}

Expected<ShapeResult> from_message(const std::string& text) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return invalid_argument("a rank sent a result that is not a JSON object");
  try {
    ShapeResult r;
    r.index = j.at("index").get<std::size_t>();
    r.rank = j.at("rank").get<int>();
    r.ok = j.at("ok").get<bool>();
    r.error = j.at("error").get<std::string>();
    r.export_json = j.at("export").get<std::string>();
    r.outcome = j.at("outcome").get<std::string>();
    r.seconds = j.at("seconds").get<double>();
    return r;
  } catch (const json::exception& e) {
    return invalid_argument(fmt::format("a rank sent a malformed result ({})", e.what()));
  }
}

World join_world() {
  World w;
  MPI_Comm_rank(MPI_COMM_WORLD, &w.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &w.size);
  // The ranks that share this host's memory are the ones that share its devices.
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, w.rank, MPI_INFO_NULL, &w.local);
  MPI_Comm_rank(w.local, &w.local_rank);
  MPI_Comm_size(w.local, &w.local_size);
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  w.host = host;
  return w;
}

// True on every rank when it is true on every rank: a setup step that fails on one rank stops them all alike.
bool all_ok(bool ok) {
  int mine = ok ? 1 : 0, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return all == 1;
}

// The CPUs this process may run on, in order.
std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

// A CPU run's share of this host: ranks on one host must not time their GEMMs on the same cores (each would measure
// the other's load). When the launcher bound the local ranks to disjoint CPU sets already, each keeps its own;
// otherwise the CPUs they may all use are split into equal contiguous slices, one per local rank, and the process
// is pinned to its slice (the GEMM threads it starts later inherit that). Returns the threads to run, or an error.
Expected<int> take_cpu_share(const World& w, int requested_threads) {
  const std::vector<int> mine = allowed_cpus();
  std::vector<unsigned char> mask(CPU_SETSIZE, 0), all(std::size_t(CPU_SETSIZE) * w.local_size, 0);
  for (int c : mine) mask[std::size_t(c)] = 1;
  MPI_Allgather(mask.data(), CPU_SETSIZE, MPI_UNSIGNED_CHAR, all.data(), CPU_SETSIZE, MPI_UNSIGNED_CHAR, w.local);
  std::vector<int> owners(CPU_SETSIZE, 0);
  for (int r = 0; r < w.local_size; ++r)
    for (int c = 0; c < CPU_SETSIZE; ++c) owners[std::size_t(c)] += all[std::size_t(r) * CPU_SETSIZE + c];
  const bool disjoint = std::all_of(owners.begin(), owners.end(), [](int n) { return n <= 1; });
  std::vector<int> share = mine;
  if (!disjoint || w.local_size == 1) {
    std::vector<int> pool;
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (owners[std::size_t(c)] > 0) pool.push_back(c);
    const int per = int(pool.size()) / w.local_size;
    if (per < 1) {
      return invalid_argument(fmt::format("{} ranks on host {} share {} CPU(s): each needs a core of its own (run "
                                          "at most {} ranks per host)", w.local_size, w.host, pool.size(),
                                          pool.size()));
    }
    share.assign(pool.begin() + std::ptrdiff_t(per) * w.local_rank, pool.begin() + std::ptrdiff_t(per) * (w.local_rank + 1));
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int c : share) CPU_SET(c, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) return Status{Code::io_error, "could not pin this rank to its CPUs"};
  }
  if (requested_threads > int(share.size())) {
    return invalid_argument(fmt::format("--threads {} is more than the {} CPU(s) of this rank's share of host {}",
                                        requested_threads, share.size(), w.host));
  }
  return requested_threads > 0 ? requested_threads : int(share.size());
}

// This rank's device: on a GPU host the local rank's own GPU (ranks on one host never share one), on a CPU run its
// own share of the cores. A host with more local ranks than GPUs is refused, not oversubscribed.
Expected<Device> bind_device(const World& w, const DeviceArgs& args, std::string& note) {
  std::string spec = args.device;
  if (spec == "auto") {
    auto probe = open_device("auto", {}, 0);
    if (!probe) return probe.status();
    spec = probe->kind;
  }
  if (spec == "cpu") {
    auto threads = take_cpu_share(w, args.threads);
    if (!threads) return threads.status();
    note = fmt::format("CPU run: each of the {} rank(s) on host {} has its own {} core(s), pinned", w.local_size,
                       w.host, *threads);
    return open_device("cpu", args.profile, *threads);
  }
  if (spec.starts_with("cuda:") && w.local_size > 1) {
    return invalid_argument(fmt::format("--device {} names one GPU, but {} ranks run on host {}: pass --device cuda "
                                        "and each rank takes the GPU of its local rank", spec, w.local_size, w.host));
  }
  const std::string own = spec.starts_with("cuda:") ? spec : fmt::format("cuda:{}", w.local_rank);
  auto d = open_device(own, args.profile, args.threads);
  if (!d) {
    return invalid_argument(fmt::format("local rank {} of {} on host {} has no GPU of its own ({}): run at most as "
                                        "many ranks per host as it has GPUs (mpirun --map-by ppr:G:node)",
                                        w.local_rank, w.local_size, w.host, d.status().message()));
  }
  note = fmt::format("GPU run: each rank on a host uses the GPU of its local rank (cuda:LOCAL_RANK)");
  return d;
}

// Every rank's device fingerprint, known to rank 0: the shapes it finds recorded for any of them are done.
std::vector<std::string> gather_fingerprints(const World& w, const Device& device) {
  const std::string mine = dispatch::running_fingerprint(device).hash();  // 16 hex digits
  std::vector<char> all(std::size_t(17) * w.size, 0);
  std::vector<char> buf(17, 0);
  std::copy(mine.begin(), mine.end(), buf.begin());
  MPI_Gather(buf.data(), 17, MPI_CHAR, all.data(), 17, MPI_CHAR, 0, MPI_COMM_WORLD);
  std::vector<std::string> hashes;
  for (int r = 0; r < w.size; ++r) hashes.emplace_back(all.data() + std::size_t(17) * r);
  return hashes;
}

// Rank 0: which problems the DB holds a valid record for, measured on one of the ranks' devices by this backend.
std::vector<char> already_recorded(const std::string& db_path, const std::vector<Problem>& problems,
                                   const std::vector<std::string>& hashes, const std::string& backend) {
  std::vector<char> done(problems.size(), 0);
  auto store = db::Store::open(db_path);
  if (!store) return done;
  db::ListFilter filter;
  filter.backend = backend;
  auto records = store->list(filter);
  if (!records) return done;
  for (std::size_t i = 0; i < problems.size(); ++i) {
    const db::Signature want = db::signature_of(problems[i]);
    for (const db::Record& r : *records) {
      if (r.problem == want && std::find(hashes.begin(), hashes.end(), r.device.hash()) != hashes.end()) {
        done[i] = 1;
        break;
      }
    }
  }
  return done;
}

// Rank 0's bookkeeping: what arrived, the progress line, and the DB it commits into.
struct Collector {
  Collector(const World& w, const std::vector<Problem>& p, const tune::Assignment& a, const std::vector<double>& c)
      : world(w), problems(p), assignment(a), costs(c) {}
  const World& world;
  const std::vector<Problem>& problems;
  const tune::Assignment& assignment;
  const std::vector<double>& costs;
  std::string db_path;
  std::optional<db::Store> store;  // opened at the first record (again after a failed open), then kept
  bool quiet = false;
  Clock::time_point start = Clock::now();
  std::map<std::size_t, ShapeResult> results;   // by problem index
  std::map<std::size_t, std::string> stored;    // problem index -> what the DB did with its record
  std::vector<int> done_per_rank;
  std::vector<double> actual_s, predicted_s;    // per rank, over its finished shapes
  std::size_t todo = 0;

  void commit(ShapeResult r);
  void progress(const ShapeResult& r) const;
};

// Stores a rank's record (rank 0's own too) through `db import`'s parser (schema, names, plausible values), one
// transaction per record. A record that fails there is a missing shape, as a failed tune is.
void Collector::commit(ShapeResult r) {
  if (r.ok && !r.export_json.empty()) {
    const std::string origin = fmt::format("rank {}'s record for {}", r.rank, problems[r.index].describe());
    auto records = db::parse_export(r.export_json, origin);
    Status s = records.status();
    if (records && !store) {
      auto opened = db::Store::open(db_path);
      if (opened) {
        store = std::move(opened).value();
      } else {
        s = opened.status();
      }
    }
    if (records && store) {
      if (auto u = store->upsert_all(*records); !u) {
        s = u.status();
      } else {
        r.outcome = u->empty() ? "nothing stored" : std::string(db::to_string(u->front()));
        stored[r.index] = r.outcome;
      }
    }
    if (!s) r.error = s.message();
  }
  const auto rank = std::size_t(r.rank);
  ++done_per_rank[rank];
  actual_s[rank] += r.seconds;
  predicted_s[rank] += costs[r.index];
  progress(r);
  results[r.index] = std::move(r);
}

// "[3/12] 1024x1024x1024 by rank 1 (host vm): inserted, 4.1 s | per rank: r0 2.0/min r1 1.5/min | ~40 s left".
// The time left: for each rank its unfinished predicted cost, scaled by how its finished shapes compared with their
// prediction; the job ends with its slowest rank.
void Collector::progress(const ShapeResult& r) const {
  if (quiet) return;
  const double elapsed_min = std::chrono::duration<double>(Clock::now() - start).count() / 60;
  std::string rates;
  double left_s = 0;
  for (int k = 0; k < world.size; ++k) {
    const auto rank = std::size_t(k);
    rates += fmt::format(" r{} {:.1f}/min", k, elapsed_min > 0 ? done_per_rank[rank] / elapsed_min : 0.0);
    double remaining = 0;
    for (std::size_t i : assignment.problems[rank])
      if (!results.count(i) && i != r.index) remaining += costs[i];
    const double scale = predicted_s[rank] > 0 ? actual_s[rank] / predicted_s[rank] : 1.0;
    left_s = std::max(left_s, remaining * scale);
  }
  const std::string what = !r.error.empty() ? "not recorded: " + r.error : r.outcome;
  std::fprintf(stderr, "tileforge tune: [%zu/%zu] %s by rank %d: %s, %.1f s | per rank:%s | ~%.0f s left\n",
               results.size() + 1, todo, problems[r.index].describe().c_str(), r.rank, what.c_str(), r.seconds,
               rates.c_str(), left_s);
}

// Rank 0: takes every result that has arrived, without waiting (between its own shapes).
void drain(Collector& c, int& finished_ranks, bool wait) {
  while (true) {
    int flag = 0;
    MPI_Status st;
    if (wait) {
      MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
      flag = 1;
    } else {
      MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st);
    }
    if (!flag) return;
    int bytes = 0;
    MPI_Get_count(&st, MPI_CHAR, &bytes);
    std::string text(std::size_t(bytes), '\0');
    MPI_Recv(text.data(), bytes, MPI_CHAR, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (st.MPI_TAG == kTagFinished) {
      ++finished_ranks;
      if (wait) return;
      continue;
    }
    auto r = from_message(text);
    if (!r || r->index >= c.problems.size()) {
      std::fprintf(stderr, "tileforge tune: warning: rank %d: %s\n", st.MPI_SOURCE,
                   r ? "a result for an unknown shape" : r.status().message().c_str());
      continue;
    }
    c.commit(std::move(*r));
    if (wait) return;
  }
}

// Sends stay in flight while the rank tunes on: rank 0 receives between its own shapes, which may take minutes.
struct Outbox {
  std::vector<std::unique_ptr<std::string>> buffers;
  std::vector<MPI_Request> requests;
  void send(std::string text, int tag) {
    buffers.push_back(std::make_unique<std::string>(std::move(text)));
    requests.emplace_back();
    MPI_Isend(buffers.back()->data(), int(buffers.back()->size()), MPI_CHAR, 0, tag, MPI_COMM_WORLD,
              &requests.back());
  }
  void wait_all() { MPI_Waitall(int(requests.size()), requests.data(), MPI_STATUSES_IGNORE); }
};

// A test hook (tests/tune/tune_mpi_check.py): TILEFORGE_TEST_MPI_DIE_AFTER=RANK:N makes rank RANK kill itself with
// SIGKILL once N of its shapes have reached rank 0, as a crashed node would.
bool should_die(int rank, int sent) {
  const char* hook = std::getenv("TILEFORGE_TEST_MPI_DIE_AFTER");
  int who = -1, after = -1;
  return hook && std::sscanf(hook, "%d:%d", &who, &after) == 2 && who == rank && sent >= after;
}

ShapeResult tune_one(const Problem& p, std::size_t index, const World& w, const Device& device,
                     tune::TuneOptions options) {
  ShapeResult out;
  out.index = index;
  out.rank = w.rank;
  const auto t0 = Clock::now();
  if (options.write_db) {
    // The record goes to rank 0 as `db export` writes it (rank 0's own as well, so that every record takes the
    // same checked path into the DB); only rank 0 opens the DB.
    options.record_sink = [&out](const db::Record& measured) -> Expected<std::string> {
      db::Record r = measured;
      if (r.created_at.empty()) r.created_at = iso_date_now();  // when it was measured, not when rank 0 got it
      out.export_json = db::export_json({r});
      return std::string("sent to rank 0");
    };
  }
  auto r = tune::tune(p, device, options, {});
  out.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  if (!r) {
    out.error = r.status().message();
    return out;
  }
  out.ok = true;
  out.outcome = r->db_outcome;
  // No record: no winner, a winner that stayed noisy ("not stored: ..."), or --no-db.
  if (out.export_json.empty()) out.error = r->db_outcome;
  return out;
}

// The shapes the job was to tune that the DB did not get, each with why ("rank 1 did not report it": it died).
std::vector<std::string> missing_shapes(const Collector& c, const std::vector<char>& skipped) {
  std::vector<std::string> missing;
  for (std::size_t i = 0; i < c.problems.size(); ++i) {
    if (skipped[i] || c.stored.count(i)) continue;
    auto it = c.results.find(i);
    int owner = 0;
    for (int k = 0; k < c.world.size; ++k)
      for (std::size_t j : c.assignment.problems[std::size_t(k)])
        if (j == i) owner = k;
    const std::string why = it == c.results.end() ? fmt::format("rank {} did not report it", owner)
                                                  : fmt::format("rank {}: {}", owner, it->second.error);
    missing.push_back(fmt::format("{}: {}", c.problems[i].describe(), why));
  }
  return missing;
}

// The report: per shape who measured it and what the DB did, as a table or JSON (with each record as it was sent,
// so that a test can compare the merged DB with the union of the ranks' records).
std::string report(const Collector& c, const std::vector<char>& skipped, const std::vector<std::string>& missing,
                   double wall_s, bool as_json) {
  json shapes = json::array();
  std::string table = fmt::format("{:<44} {:>4}  {}\n", "SHAPE", "RANK", "RESULT");
  for (std::size_t i = 0; i < c.problems.size(); ++i) {
    json row = {{"index", i}, {"problem", c.problems[i].describe()}};
    std::string result;
    int rank = -1;
    if (skipped[i]) {
      result = "skipped: already in the DB";
    } else if (auto it = c.results.find(i); it != c.results.end()) {
      rank = it->second.rank;
      result = c.stored.count(i) ? fmt::format("{} ({:.1f} s)", c.stored.at(i), it->second.seconds)
                                 : "missing: " + it->second.error;
      if (c.stored.count(i)) row["record"] = json::parse(it->second.export_json).at("records").at(0);
    } else {
      result = "missing: not reported";
    }
    row["rank"] = rank >= 0 ? json(rank) : json(nullptr);
    row["result"] = result;
    shapes.push_back(row);
    table += fmt::format("{:<44} {:>4}  {}\n", c.problems[i].describe(), rank >= 0 ? std::to_string(rank) : "-",
                         result);
  }
  table += fmt::format("{} rank(s), {} shape(s): {} recorded, {} skipped, {} missing; {:.1f} s\n", c.world.size,
                       c.problems.size(), c.stored.size(), std::count(skipped.begin(), skipped.end(), 1),
                       missing.size(), wall_s);
  if (!as_json) return table;
  // The envelope every verb's JSON shares (schemas/envelope.schema.json): one row per shape.
  json env = {{"tool_version", std::string(version())}, {"date", iso_date_now()}, {"ranks", c.world.size},
              {"db", c.db_path}};
  json j = {{"tool", "tileforge"}, {"version", std::string(version())}, {"verb", "tune"}, {"environment", env},
            {"rows", shapes}, {"wall_s", wall_s}, {"missing", missing}};
  return j.dump(2) + "\n";
}

// What every rank agrees on before measuring: rank 0's predicted costs (ranks may measure different peaks) and the
// shapes the DB holds already (only rank 0 reads it), broadcast; then each computes the same assignment of the rest.
struct Work {
  std::vector<double> costs;
  std::vector<char> skipped;
  tune::Assignment assignment;  // indices into the full problem list
  std::size_t todo = 0;
};

Work agree_on_work(const DistributedTuneArgs& args, const World& w, const std::vector<Problem>& problems,
                   const Device& device, const std::string& note) {
  const std::size_t n = problems.size();
  Work work;
  work.costs.assign(n, 0.0);
  work.skipped.assign(n, 0);
  const auto hashes = gather_fingerprints(w, device);
  if (w.rank == 0) {
    for (std::size_t i = 0; i < n; ++i) work.costs[i] = tune::predicted_tune_cost_s(problems[i], device, args.options);
    if (!args.force) work.skipped = already_recorded(args.options.db_path, problems, hashes, device.kind);
    if (!args.output.quiet) {
      std::fprintf(stderr, "tileforge tune: %d rank(s) on MPI; %s; %zu shape(s), %zu already in %s%s\n", w.size,
                   note.c_str(), n, std::size_t(std::count(work.skipped.begin(), work.skipped.end(), 1)),
                   args.options.db_path.c_str(), args.force ? "" : " (skipped; --force tunes them again)");
    }
  }
  MPI_Bcast(work.costs.data(), int(n), MPI_DOUBLE, 0, MPI_COMM_WORLD);
  MPI_Bcast(work.skipped.data(), int(n), MPI_CHAR, 0, MPI_COMM_WORLD);
  std::vector<std::size_t> todo;
  for (std::size_t i = 0; i < n; ++i)
    if (!work.skipped[i]) todo.push_back(i);
  std::vector<double> sub(todo.size());
  for (std::size_t k = 0; k < todo.size(); ++k) sub[k] = work.costs[todo[k]];
  work.assignment = tune::assign_by_cost(sub, w.size);
  for (auto& list : work.assignment.problems)
    for (std::size_t& k : list) k = todo[k];  // back to indices into the full problem list
  work.todo = todo.size();
  return work;
}

// Every rank: binds its device, agrees on the problems and who tunes which, tunes its share; rank 0 records.
int run_ranks(const DistributedTuneArgs& args, const World& w) {
  std::string note;
  auto device = bind_device(w, args.device, note);
  Expected<std::vector<Problem>> problems = device ? problems_from(args.problem, *device)
                                                   : Expected<std::vector<Problem>>(device.status());
  if (!all_ok(device && problems)) {
    const Status& s = !device ? device.status() : problems.status();
    if (!device || !problems) std::fprintf(stderr, "tileforge tune: error: rank %d: %s\n", w.rank, s.message().c_str());
    return !device || !problems ? exit_code_for(s) : kExitFailure;
  }
  const Work work = agree_on_work(args, w, *problems, *device, note);
  const std::vector<double>& costs = work.costs;
  const std::vector<char>& skipped = work.skipped;
  const tune::Assignment& local = work.assignment;
  tune::TuneOptions options = args.options;
  if (options.compile_threads == 0) {
    // Kernel compiles of the ranks on one host would otherwise each start a thread per core of the whole host.
    options.compile_threads = std::max(1u, std::thread::hardware_concurrency() / unsigned(w.local_size));
  }
  Collector c{w, *problems, local, costs};
  c.db_path = args.options.db_path;
  c.quiet = args.output.quiet;
  c.done_per_rank.assign(std::size_t(w.size), 0);
  c.actual_s.assign(std::size_t(w.size), 0);
  c.predicted_s.assign(std::size_t(w.size), 0);
  c.todo = work.todo;
  Outbox outbox;
  int finished = 0, sent = 0;
  for (std::size_t i : local.problems[std::size_t(w.rank)]) {
    ShapeResult r = tune_one((*problems)[i], i, w, *device, options);
    if (w.rank == 0) {
      c.commit(std::move(r));
      drain(c, finished, false);
    } else {
      if (!r.error.empty()) std::fprintf(stderr, "tileforge tune: rank %d: %s: %s\n", w.rank,
                                         (*problems)[i].describe().c_str(), r.error.c_str());
      outbox.send(to_message(r), kTagResult);
      if (should_die(w.rank, ++sent)) {
        outbox.wait_all();
        std::raise(SIGKILL);
      }
    }
  }
  if (w.rank != 0) {
    outbox.send({}, kTagFinished);
    outbox.wait_all();
    return kExitOk;
  }
  while (finished < w.size - 1) drain(c, finished, true);
  const double wall_s = std::chrono::duration<double>(Clock::now() - c.start).count();
  const auto missing = missing_shapes(c, skipped);
  for (const auto& m : missing) std::fprintf(stderr, "tileforge tune: missing: %s\n", m.c_str());
  const std::string text = report(c, skipped, missing, wall_s, args.output.format == "json");
  std::optional<OutputFile> out;
  if (Status s = open_output(args.output.out, out); !s) return fail("tune", s);
  if (int rc = emit("tune", out, text); rc != kExitOk) return rc;
  return missing.empty() ? kExitOk : kExitFailure;
}

}  // namespace

int run_distributed_tune(const DistributedTuneArgs& args) {
  int provided = 0;
  // Funneled: the tuner's compile and GEMM threads never call MPI; only this thread does.
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  World w = join_world();
  const int rc = run_ranks(args, w);
  MPI_Comm_free(&w.local);
  MPI_Finalize();
  return rc;
}

}  // namespace tileforge::cli

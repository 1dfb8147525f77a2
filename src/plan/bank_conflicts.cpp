// Shared-memory bank conflicts: the phase/wavefront model, the registry of the families' address functions, and
// the `tileforge banks` verb (table, JSON and heat map).
#include "plan/bank_conflicts.hpp"

#include <algorithm>
#include <map>
#include <mutex>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/columns.hpp"
#include "core/parse.hpp"
#include "hw/hw.hpp"
#include "plan/kernel_family.hpp"
#include "plan/planner.hpp"

namespace tileforge::plan::banks {
namespace {

constexpr int kExitOk = 0, kExitFailure = 1, kExitUsage = 2;
// The chip and problem the planner fills unpinned parameters for: a large square GEMM on the chip the families
// were tuned on, so that the simulated config is the one a user would typically run.
constexpr const char* kDefaultProfile = "h200";
constexpr const char* kDefaultShape = "4096x4096x4096";
constexpr int64_t kMaxRawRowBytes = 4096;

struct Registry {
  std::mutex mutex;
  std::vector<std::unique_ptr<BankModel>> owned;
};

// Function-local: adapters register from static initializers of other files, in any order.
Registry& registry() {
  static Registry r;
  return r;
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

}  // namespace

// ---- the model ----------------------------------------------------------------------------------------------

Expected<int> phase_threads(int bytes_per_thread) {
  switch (bytes_per_thread) {
    case 1:
    case 2:
    case 4: return kWarpSize;  // at most 128 bytes for the whole warp: one phase
    case 8: return kWarpSize / 2;
    case 16: return kWarpSize / 4;
    default:
      return invalid_argument(fmt::format("an access of {} bytes per thread is not modelled (allowed: 1, 2, 4, 8, 16)",
                                          bytes_per_thread));
  }
}

Expected<AccessBanks> simulate(const WarpAccess& access) {
  auto per_phase = phase_threads(access.bytes_per_thread);
  if (!per_phase) return per_phase.status();
  const int width = access.bytes_per_thread;
  AccessBanks out;
  for (int first = 0; first < kWarpSize; first += *per_phase) {
    PhaseBanks ph;
    ph.first_thread = first;
    ph.threads = *per_phase;
    std::set<int64_t> distinct;
    for (int t = first; t < first + *per_phase; ++t) {
      const int64_t a = access.address[t];
      if (a < 0) continue;
      if (a % width != 0) {
        return invalid_argument(fmt::format("thread {} addresses byte {}, not a multiple of its {}-byte access", t, a,
                                            width));
      }
      // A 1- or 2-byte access lies inside one word; wider ones cover width / 4 consecutive words (distinct banks).
      for (int64_t w = a / kBankBytes; w <= (a + width - 1) / kBankBytes; ++w) {
        distinct.insert(w);
        auto& words = ph.words[w % kBanks];
        auto it = std::find_if(words.begin(), words.end(), [w](const PhaseBanks::Word& x) { return x.word == w; });
        if (it == words.end()) {
          words.push_back({w, {t}});
        } else if (it->threads.back() != t) {
          it->threads.push_back(t);  // same word, another thread: served in the same wavefront
        }
      }
    }
    for (const auto& words : ph.words) ph.degree = std::max(ph.degree, int(words.size()));
    ph.ideal = distinct.empty() ? 0 : int((distinct.size() + kBanks - 1) / kBanks);
    out.wavefronts += ph.degree;
    out.ideal += ph.ideal;
    if (ph.degree > out.degree) {
      out.degree = ph.degree;
      out.worst_phase = int(out.phases.size());
    }
    out.phases.push_back(std::move(ph));
  }
  return out;
}

namespace {

// Degree, wavefronts and ideal of one instruction without the per-bank lists: what report() needs for every issue
// (the lists are built for the worst issue only). Words of a phase are at most 32 threads x 4; sorted, the
// distinct ones are counted per bank.
Expected<AccessBanks> summarize(const WarpAccess& access) {
  auto per_phase = phase_threads(access.bytes_per_thread);
  if (!per_phase) return per_phase.status();
  const int width = access.bytes_per_thread;
  AccessBanks out;
  std::array<int64_t, kWarpSize * 4> words;
  for (int first = 0, p = 0; first < kWarpSize; first += *per_phase, ++p) {
    int n = 0;
    for (int t = first; t < first + *per_phase; ++t) {
      const int64_t a = access.address[t];
      if (a < 0) continue;
      if (a % width != 0) {
        return invalid_argument(fmt::format("thread {} addresses byte {}, not a multiple of its {}-byte access", t, a,
                                            width));
      }
      for (int64_t w = a / kBankBytes; w <= (a + width - 1) / kBankBytes; ++w) words[n++] = w;
    }
    std::sort(words.begin(), words.begin() + n);
    const int distinct = int(std::unique(words.begin(), words.begin() + n) - words.begin());
    std::array<int, kBanks> per_bank{};
    int degree = 0;
    for (int i = 0; i < distinct; ++i) degree = std::max(degree, ++per_bank[words[i] % kBanks]);
    out.wavefronts += degree;
    out.ideal += distinct == 0 ? 0 : (distinct + kBanks - 1) / kBanks;
    if (degree > out.degree) {
      out.degree = degree;
      out.worst_phase = p;
    }
  }
  return out;
}

}  // namespace

// ---- the registry -------------------------------------------------------------------------------------------

void register_bank_model(std::unique_ptr<BankModel> model) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  r.owned.push_back(std::move(model));
}

const BankModel* find_bank_model(std::string_view family) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  for (const auto& m : r.owned)
    if (m->family() == family) return m.get();
  return nullptr;
}

std::vector<std::string> bank_model_families() {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  std::vector<std::string> out;
  for (const auto& m : r.owned) out.emplace_back(m->family());
  std::sort(out.begin(), out.end());
  return out;
}

// ---- the report ---------------------------------------------------------------------------------------------

Expected<std::vector<InstructionReport>> report(const FamilyAccesses& accesses) {
  std::vector<InstructionReport> out;
  for (const Instruction& ins : accesses.instructions) {
    InstructionReport r;
    r.instruction = ins.instruction;
    r.operand = ins.operand;
    r.where = ins.where;
    struct PerWarp {
      int issues = 0, wavefronts = 0, ideal = 0;
    };
    std::map<int, PerWarp> warps;
    const Issue* worst = nullptr;
    for (const Issue& issue : ins.issues) {
      auto banks = summarize(issue.access);
      if (!banks) return banks.status();
      PerWarp& w = warps[issue.warp];
      ++w.issues;
      w.wavefronts += banks->wavefronts;
      w.ideal += banks->ideal;
      if (!worst || banks->degree > r.degree) {
        r.degree = banks->degree;
        worst = &issue;
      }
    }
    if (worst) {
      auto banks = simulate(worst->access);
      if (!banks) return banks.status();
      r.worst_warp = worst->warp;
      r.worst_what = worst->what;
      r.bytes_per_thread = worst->access.bytes_per_thread;
      r.worst = std::move(*banks);
    }
    // The warp that spends the most wavefronts on this instruction: the one that sets its pace.
    for (const auto& [warp, w] : warps) {
      r.issues_per_warp = std::max(r.issues_per_warp, w.issues);
      if (w.wavefronts > r.wavefronts) {
        r.wavefronts = w.wavefronts;
        r.ideal = w.ideal;
      }
    }
    out.push_back(std::move(r));
  }
  return out;
}

// ---- the teaching case --------------------------------------------------------------------------------------

std::vector<std::string> raw_instructions() {
  return {"ldmatrix.x4", "ldmatrix.x2", "ldmatrix.x1", "ld.shared.b32", "ld.shared.v2.b32", "ld.shared.v4.b32"};
}

Expected<FamilyAccesses> raw_accesses(int64_t row_bytes, std::string_view instruction) {
  if (row_bytes < 16 || row_bytes > kMaxRawRowBytes || row_bytes % 16 != 0) {
    return invalid_argument(fmt::format(
        "--raw-row-bytes = {} is out of range (allowed: 16 to {}, a multiple of 16: ldmatrix rows are 16-byte aligned)",
        row_bytes, kMaxRawRowBytes));
  }
  const auto names = raw_instructions();
  if (std::find(names.begin(), names.end(), instruction) == names.end()) {
    return invalid_argument(
        fmt::format("--instruction '{}' is not known (allowed: {})", instruction, join(names)));
  }
  WarpAccess a;
  int rows = kWarpSize;
  if (instruction.starts_with("ldmatrix")) {
    // One 8x8 matrix of 16-bit elements per 8 threads: each of them gives one 16-byte row.
    a.bytes_per_thread = 16;
    rows = 8 * (instruction.back() - '0');
  } else {
    a.bytes_per_thread = instruction == "ld.shared.b32" ? 4 : instruction == "ld.shared.v2.b32" ? 8 : 16;
  }
  for (int t = 0; t < kWarpSize; ++t) a.address[t] = t < rows ? int64_t(t) * row_bytes : -1;
  FamilyAccesses out;
  out.instructions.push_back(
      {std::string(instruction), "tile", fmt::format("thread t -> row t, column 0, rows {} B apart", row_bytes),
       {{0, "rows 0-" + std::to_string(rows - 1), a}}});
  out.notes.push_back(fmt::format("raw tile: 16-bit elements, rows of {} bytes, no swizzle", row_bytes));
  return out;
}

// ---- the verb -----------------------------------------------------------------------------------------------

namespace {

int fail(std::ostream& err, const Status& s) {
  err << "tileforge banks: error: " << s.message() << "\n";
  return s.code() == Code::invalid_argument || s.code() == Code::io_error ? kExitUsage : kExitFailure;
}

// One heat-map cell, 3 wide like the bank numbers above it: the lowest thread touching that word, marked '*' when
// several threads share it (broadcast), '.' when the wavefront serves nothing in that bank.
std::string cell(const PhaseBanks::Word* w) {
  if (!w) return "  .";
  return fmt::format("{}{:>2}", w->threads.size() > 1 ? '*' : ' ', w->threads.front());
}

std::string rstrip(std::string s) {
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

// For the worst issue of an instruction: per phase, one row of 32 banks per wavefront, each cell the thread
// whose word that wavefront serves in that bank.
std::string render_heatmap(const InstructionReport& r) {
  std::string out = fmt::format("{} {} ({}): warp {}, {}, degree {}\n", r.instruction, r.operand, r.where,
                                r.worst_warp, r.worst_what, r.degree);
  std::string header = "  bank       ";
  for (int b = 0; b < kBanks; ++b) header += fmt::format("{:>3}", b);
  out += header + "\n";
  for (std::size_t p = 0; p < r.worst.phases.size(); ++p) {
    const PhaseBanks& ph = r.worst.phases[p];
    out += fmt::format("  phase {} (threads {}-{}): degree {}{}\n", p, ph.first_thread, ph.first_thread + ph.threads - 1,
                       ph.degree, int(p) == r.worst.worst_phase && r.worst.phases.size() > 1 ? ", worst" : "");
    for (int k = 0; k < std::max(ph.degree, 1); ++k) {
      std::string line = fmt::format("    wf {:<5} ", k + 1);
      for (int b = 0; b < kBanks; ++b) line += cell(k < int(ph.words[b].size()) ? &ph.words[b][k] : nullptr);
      out += rstrip(line) + "\n";
    }
  }
  return out;
}

nlohmann::json heatmap_json(const AccessBanks& banks) {
  nlohmann::json phases = nlohmann::json::array();
  for (const PhaseBanks& ph : banks.phases) {
    nlohmann::json bank_list = nlohmann::json::array();
    for (const auto& words : ph.words) {
      nlohmann::json ws = nlohmann::json::array();
      for (const auto& w : words) ws.push_back({{"word", w.word}, {"threads", w.threads}});
      bank_list.push_back(std::move(ws));
    }
    phases.push_back({{"first_thread", ph.first_thread},
                      {"threads", ph.threads},
                      {"degree", ph.degree},
                      {"ideal_wavefronts", ph.ideal},
                      {"banks", std::move(bank_list)}});
  }
  return phases;
}

struct Simulated {
  std::string title;        // what was simulated, one line
  nlohmann::json subject;   // the same for JSON
  FamilyAccesses accesses;
};

Expected<Simulated> raw_case(const BanksCommandOptions& o) {
  // Options of the family case mean nothing here: refused rather than ignored.
  const std::pair<bool, const char*> family_only[] = {{!o.sets.empty(), "--set"},   {!o.dtype.empty(), "--dtype"},
                                                      {!o.layout.empty(), "--layout"}, {!o.shape.empty(), "--shape"},
                                                      {!o.profile.empty(), "--profile"}};
  for (const auto& [given, name] : family_only) {
    if (given) return invalid_argument(fmt::format("{} applies to --family only, not to --raw-row-bytes", name));
  }
  auto row_bytes = parse_int(o.raw_row_bytes, "--raw-row-bytes");
  if (!row_bytes) return row_bytes.status();
  const std::string instruction = o.instruction.empty() ? "ldmatrix.x4" : o.instruction;
  auto acc = raw_accesses(*row_bytes, instruction);
  if (!acc) return acc.status();
  Simulated s;
  s.title = fmt::format("raw tile: 16-bit elements, rows of {} bytes, no swizzle; {} with thread t at row t", *row_bytes,
                        instruction);
  s.subject = {{"mode", "raw"}, {"row_bytes", *row_bytes}, {"instruction", instruction}};
  s.accesses = std::move(*acc);
  return s;
}

Expected<Simulated> family_case(const BanksCommandOptions& o) {
  if (!o.instruction.empty()) return invalid_argument("--instruction applies to --raw-row-bytes only");
  const std::vector<std::string> modelled = bank_model_families();
  const BankModel* model = find_bank_model(o.family);
  if (!model) {
    const bool known = find_family(o.family) != nullptr;
    return invalid_argument(fmt::format("--family '{}' {} (families with a shared-memory model: {})", o.family,
                                        known ? "has no shared-memory model" : "is not known", join(modelled)));
  }
  auto dtype = parse_dtype(o.dtype.empty() ? "f16" : o.dtype, "--dtype");
  if (!dtype) return dtype.status();
  auto layout = parse_layout(o.layout.empty() ? "RR" : o.layout, "--layout");
  if (!layout) return layout.status();
  auto shape = parse_shape(o.shape.empty() ? kDefaultShape : o.shape, "--shape");
  if (!shape) return shape.status();
  PlanOptions po;
  po.family = o.family;
  po.pick_only = true;
  for (const std::string& s : o.sets) {
    auto pin = parse_pin(s, "--set");
    if (!pin) return pin.status();
    po.pins.push_back(*pin);
  }
  Problem problem;
  problem.m = (*shape)[0];
  problem.n = (*shape)[1];
  problem.k = (*shape)[2];
  problem.precision = {*dtype, *dtype, DType::f32};
  problem.layout = *layout;
  if (Status s = problem.validate(); !s) return s;
  auto profile = hw::load_profile(o.profile.empty() ? kDefaultProfile : o.profile);
  if (!profile) return profile.status();
  // The planner fills what is not pinned, and refuses unknown parameters, illegal values and pins that leave no
  // legal config, naming the constraint.
  auto plan = make_plan(problem, *profile, po);
  if (!plan) return plan.status();
  if (!plan->served || !plan->choice()) {
    // The precision or problem is one the family does not take: the options asked for it.
    return invalid_argument(fmt::format("the planner chose no {} config for {} on {}: {}{}", o.family, problem.describe(),
                                   profile->name, plan->unserved,
                                   plan->needed.empty() ? "" : " (needed: " + plan->needed + ")"));
  }
  const Config& config = plan->choice()->config;
  auto acc = model->accesses(plan->problem, config);
  if (!acc) return acc.status();

  std::vector<std::string> pinned;
  for (const auto& [name, value] : po.pins) pinned.push_back(name);
  Simulated s;
  s.title = fmt::format("{}\n  pinned: {}; the rest is the planner's choice for {} on {}", config.describe(),
                        pinned.empty() ? "nothing" : join(pinned), plan->problem.describe(), profile->name);
  s.subject = {{"mode", "family"},
               {"family", config.family},
               {"config", config.params},
               {"pinned", pinned},
               {"problem", plan->problem.describe()},
               {"profile", profile->name}};
  s.accesses = std::move(*acc);
  return s;
}

}  // namespace

int banks_command(const BanksCommandOptions& o, std::ostream& out, std::ostream& err) {
  if (o.format != "table" && o.format != "json") {
    return fail(err, invalid_argument(fmt::format("--format '{}' is not known (allowed: table, json)", o.format)));
  }
  const std::vector<std::string> modelled = bank_model_families();
  if (o.family.empty() == o.raw_row_bytes.empty()) {
    return fail(err, invalid_argument(fmt::format(
                         "give either --family NAME (families with a shared-memory model: {}) or --raw-row-bytes N{}",
                         join(modelled), o.family.empty() ? "" : ", not both")));
  }
  auto sim = o.raw_row_bytes.empty() ? family_case(o) : raw_case(o);
  if (!sim) return fail(err, sim.status());
  auto rows = report(sim->accesses);
  if (!rows) return fail(err, rows.status());

  if (o.format == "json") {
    nlohmann::json doc;
    doc["tool"] = "tileforge";
    doc["version"] = std::string(version());
    doc["model"] = {{"banks", kBanks}, {"bank_bytes", kBankBytes}, {"phase_bytes", kPhaseBytes}};
    doc["subject"] = sim->subject;
    doc["instructions"] = nlohmann::json::array();
    for (const InstructionReport& r : *rows) {
      nlohmann::json j = {{"instruction", r.instruction},
                          {"operand", r.operand},
                          {"where", r.where},
                          {"bytes_per_thread", r.bytes_per_thread},
                          {"issues_per_warp", r.issues_per_warp},
                          {"degree", r.degree},
                          {"wavefronts", r.wavefronts},
                          {"ideal_wavefronts", r.ideal},
                          {"worst", {{"warp", r.worst_warp}, {"issue", r.worst_what}, {"phase", r.worst.worst_phase}}}};
      if (o.heatmap) j["heatmap"] = heatmap_json(r.worst);
      doc["instructions"].push_back(std::move(j));
    }
    doc["notes"] = sim->accesses.notes;
    out << doc.dump(2) << "\n";
    return kExitOk;
  }

  std::ostringstream text;
  text << "simulated: " << sim->title << "\n\n";
  std::vector<std::vector<std::string>> table = {
      {"instruction", "operand", "issues/warp", "degree", "wavefronts", "ideal", "where"}};
  for (const InstructionReport& r : *rows) {
    table.push_back({r.instruction, r.operand, std::to_string(r.issues_per_warp), fmt::format("{}-way", r.degree),
                     std::to_string(r.wavefronts), std::to_string(r.ideal), r.where});
  }
  text << columns::format_columns(table, {false, false, true, true, true, true, false});
  if (rows->empty()) text << "(no per-thread shared-memory instruction)\n";
  text << "\ndegree: the most distinct 4-byte words one bank serves in one phase (1-way: no conflict); wavefronts: "
          "the busiest warp's, over its issues\n";
  for (const std::string& n : sim->accesses.notes) text << "note: " << n << "\n";
  if (o.heatmap) {
    text << "\nheat map (worst issue of each instruction; cell: the lane whose word that wavefront serves in that bank, "
            "* when lanes share the word):\n";
    for (const InstructionReport& r : *rows) text << "\n" << render_heatmap(r);
  }
  out << text.str();
  return kExitOk;
}

}  // namespace tileforge::plan::banks

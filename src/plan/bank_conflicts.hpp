// Shared-memory bank conflicts of one warp's instructions: the bank model, the families' access registry and the
// `tileforge banks` verb as a function of parsed options (docs/BANKS.md).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "core/expected.hpp"
#include "tileforge/tileforge.hpp"

namespace tileforge::plan::banks {

// The model (docs/BANKS.md). Shared memory is 32 banks of 4 bytes: byte address a lies in word a / 4 and bank
// (a / 4) % 32. A warp-wide instruction is served in phases of at most 128 bytes: all 32 threads for accesses of
// 4 bytes or less, half-warps (16 threads) for 8-byte accesses, quarter-warps (8 threads) for 16-byte accesses;
// ldmatrix and stmatrix move one 16-byte row per thread and are served like 16-byte accesses, 8 rows (one 8x8
// matrix) per phase. Within a phase, threads touching the same word are served together (broadcast on reads,
// one write wins on stores), while distinct words in one bank take one wavefront each: the phase takes as many
// wavefronts as the most distinct words any bank holds, and that count is its conflict degree.
inline constexpr int kBanks = 32;
inline constexpr int kBankBytes = 4;
inline constexpr int kWarpSize = 32;
inline constexpr int kPhaseBytes = kBanks * kBankBytes;

// One warp-wide shared-memory instruction: each thread's byte address (a negative one: the thread takes no part,
// as lanes 8-31 of ldmatrix.x1) and the bytes each thread moves (1, 2, 4, 8 or 16).
struct WarpAccess {
  int bytes_per_thread = 4;
  std::array<int64_t, kWarpSize> address{};
};

// What one phase of an instruction does to the banks.
struct PhaseBanks {
  int first_thread = 0, threads = 0;  // the phase's threads: [first_thread, first_thread + threads)
  int degree = 0;                     // the most distinct words in one bank (0: no thread takes part)
  int ideal = 0;                      // wavefronts without conflicts: ceil(distinct words / 32), 1 at least
  // words[b]: the distinct words of bank b in the order first touched, each with the threads that touch it.
  struct Word {
    int64_t word = 0;
    std::vector<int> threads;
  };
  std::array<std::vector<Word>, kBanks> words;
};

struct AccessBanks {
  int degree = 0;      // max over phases
  int wavefronts = 0;  // sum over phases of their degree
  int ideal = 0;       // sum over phases of their ideal
  int worst_phase = 0;
  std::vector<PhaseBanks> phases;
};

// Threads per phase for an access width (bytes per thread); refused for a width other than 1, 2, 4, 8 or 16.
Expected<int> phase_threads(int bytes_per_thread);
// Simulates one instruction; refused for an unknown width or an address that is not a multiple of the width.
Expected<AccessBanks> simulate(const WarpAccess& access);

// ---- what a kernel family's warps issue --------------------------------------------------------------------

// One issue of an instruction by one warp (chunk i of the k-tile, fragment i at k offset kk, ...).
struct Issue {
  int warp = 0;      // the warp's index in its block
  std::string what;  // "chunk 1", "i=0 kk=16"
  WarpAccess access;
};

// A kind of instruction the family's threads issue on shared memory, with every issue of it by every warp in one
// k-tile (or one epilogue pass).
struct Instruction {
  std::string instruction;  // "cp.async.cg.shared.global 16B", "ldmatrix.x4.trans", "stmatrix.x4", ...
  std::string operand;      // "A", "B", "C", "flag"
  std::string where;        // "main loop, per k-tile", "epilogue, per output tile"
  std::vector<Issue> issues;
};

struct FamilyAccesses {
  std::vector<Instruction> instructions;
  // What is not simulated and why (instructions without per-thread addresses, stores that bypass shared memory).
  std::vector<std::string> notes;
};

// A family's shared-memory address functions, as its kernel computes them. Registered by the backend that holds
// the family (its adapter reads the kernel's own headers); nothing in this layer names one.
class BankModel {
 public:
  virtual ~BankModel() = default;
  virtual std::string_view family() const = 0;
  // Every shared-memory instruction of one block's warps for a legal config of the family and the problem's
  // layout and types. Refused (invalid_argument) when the config lacks a parameter the model needs.
  virtual Expected<FamilyAccesses> accesses(const Problem& problem, const Config& config) const = 0;
};

void register_bank_model(std::unique_ptr<BankModel> model);
const BankModel* find_bank_model(std::string_view family);
// Families with a model, sorted.
std::vector<std::string> bank_model_families();

struct BankModelRegistration {
  explicit BankModelRegistration(std::unique_ptr<BankModel> model) { register_bank_model(std::move(model)); }
};

// ---- the report ------------------------------------------------------------------------------------------

// One instruction kind, summed over its issues.
struct InstructionReport {
  std::string instruction, operand, where;
  int issues_per_warp = 0;  // issues of the warp with the most
  int degree = 0;           // worst over every issue of every warp
  int wavefronts = 0;       // the worst warp's wavefronts over its issues
  int ideal = 0;            // that warp's wavefronts without conflicts
  // The worst issue (first of the highest degree): its warp, label and banks, for the heat map.
  int worst_warp = 0;
  std::string worst_what;
  int bytes_per_thread = 0;
  AccessBanks worst;
};

Expected<std::vector<InstructionReport>> report(const FamilyAccesses& accesses);

// The teaching case: a tile of 16-bit elements whose rows are `row_bytes` apart, no swizzle, thread t addressing
// row t at column 0 with `instruction`: ldmatrix.x4 / .x2 / .x1 (threads 0-31 / 0-15 / 0-7 give rows), or
// ld.shared.b32 / ld.shared.v2.b32 / ld.shared.v4.b32 (every thread reads 4, 8 or 16 bytes of its row).
std::vector<std::string> raw_instructions();
Expected<FamilyAccesses> raw_accesses(int64_t row_bytes, std::string_view instruction);

// Option values as typed (parsed here, so that errors name the option in one style).
struct BanksCommandOptions {
  std::string family;              // --family NAME (a family with a bank model)
  std::vector<std::string> sets;   // --set NAME=VALUE (repeatable)
  std::string dtype;               // --dtype f16|bf16 (default f16)
  std::string layout;              // --layout RR|RC|CR|CC (default RR)
  std::string shape;               // --shape MxNxK: the problem the planner fills unpinned parameters for
  std::string profile;             // --profile NAME|FILE (default h200)
  std::string raw_row_bytes;       // --raw-row-bytes N: the teaching case instead of a family
  std::string instruction;         // --instruction (raw case; default ldmatrix.x4)
  std::string format = "table";    // --format table|json
  bool heatmap = false;            // --heatmap
};

// Prints the table (or one JSON document) on `out`, errors as "tileforge banks: error: ..." on `err` with nothing
// on `out`. Returns 0, or 2 for bad options (nothing is printed), including pins or a precision for which the
// planner finds no config of the family; 1 for other failures.
int banks_command(const BanksCommandOptions& options, std::ostream& out, std::ostream& err);

}  // namespace tileforge::plan::banks

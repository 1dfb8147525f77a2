// `tileforge tune` under an MPI launcher: how the verb tells it was launched so, and the distributed run's entry.
#pragma once

#include <optional>

#include "options.hpp"
#include "tune/tune.hpp"

namespace tileforge::cli {

// The world size an MPI launcher announces in the environment (OpenMPI's OMPI_COMM_WORLD_SIZE; PMI_SIZE or
// PMIX_SIZE under MPICH, Slurm's srun and other PMI launchers), or nullopt when none did. Only the environment is
// read, so that a plain `tileforge tune` never initializes MPI.
std::optional<int> mpi_world_size_from_env();

// Whether this build has the distributed tune (CMake found MPI: TILEFORGE_MPI).
bool built_with_mpi();

// What the distributed tune takes from the command line; `options` is checked already (db_path, contract, top...).
struct DistributedTuneArgs {
  ProblemArgs problem;
  DeviceArgs device;
  OutputArgs output;
  tune::TuneOptions options;
  bool force = false;  // tune shapes the DB already holds a record for (else a rerun resumes)
};

// Runs the tune over the MPI world (docs/USAGE.md, "Tuning on many devices"): every rank tunes its share of the
// problems on its own device and rank 0 records every result. Returns the process's exit code. Only in a build with
// MPI; elsewhere it says so and returns kExitUsage.
int run_distributed_tune(const DistributedTuneArgs& args);

}  // namespace tileforge::cli

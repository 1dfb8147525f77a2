// What a tuning record is keyed by besides the problem: the software that ran it and the kernel family's version.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "backends/backend.hpp"
#include "db/keys.hpp"

namespace tileforge::tune {

// The driver and toolkit parts of a device fingerprint (docs/TUNING-DB.md): on CUDA devices the driver's CUDA
// version ("13.0") and the NVRTC that compiles the kernels ("NVRTC 13.0"); on CPUs no driver, and the compiler
// that built the CPU micro-kernels ("GNU 12.2.0"). Dispatch must compute the same strings to find the records.
struct Software {
  std::string driver;
  std::string toolkit;
};
Software software_of(const Device& device);

// The device fingerprint records of this device are written under.
db::Fingerprint fingerprint(const Device& device);

// A kernel family's version: bumped when the meaning of one of its parameters changes, so that records tuned
// under the old meaning are never dispatched again (the lookup names the current versions). 1 for every family
// so far; 0 for a family this build does not know.
int64_t family_version(std::string_view family);

}  // namespace tileforge::tune

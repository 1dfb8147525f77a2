// How one rep is timed on a device, and where its operands live: the CPU uses the steady clock with warm
// caches and host memory; a CUDA GPU uses events with the L2 overwritten before each rep, device memory and
// a float64 reference computed on the device.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string_view>

#include "backends/backend.hpp"
#include "core/expected.hpp"
#include "verify/verify.hpp"

namespace tileforge::measure {

// Operand memory the backends of one device read and write.
class OperandBuffer {
 public:
  virtual ~OperandBuffer() = default;
  virtual void* data() = 0;                 // what backends receive: a host or a device pointer
  virtual std::size_t bytes() const = 0;
  virtual const void* host_view() const = 0;  // the same bytes readable on the host without a copy, or nullptr
  virtual Status upload(const void* host) = 0;              // all bytes from the host
  virtual Status download(void* host) const = 0;            // all bytes to the host
  // Same size, same device; on a GPU ordered on the timer's stream (with the kernels and events on it).
  virtual Status copy_from(const OperandBuffer& other) = 0;
  virtual Status fill_bytes(unsigned char value) = 0;       // 0xFF makes every element NaN in f32, f16 and bf16
};

// The harness owns warm-up, interleaving and stopping; the timer owns the clock, the memory and what happens to
// the caches between reps, since only it knows the device.
class RepTimer {
 public:
  virtual ~RepTimer() = default;
  // What the environment reports: "warm" (operands left in cache, as BLAS benchmarks measure) or "cold-l2".
  virtual std::string_view cache_state() const = 0;
  // The contract's minimum warm-up reps on this device (2 on the CPU, 10 on GPUs).
  virtual int min_warmup_reps() const = 0;
  // Runs `call` once and returns how long it took in milliseconds; a failing call's Status is returned instead.
  virtual Expected<double> time(const std::function<Status()>& call) = 0;

  // Memory for operands; host memory (64-byte aligned) unless the device needs its own.
  virtual Expected<std::unique_ptr<OperandBuffer>> allocate(std::size_t bytes);
  // The stream backends launch on (GPUs); nullptr on the CPU.
  virtual void* stream() { return nullptr; }
  // True when verify_on_device computes the float64 reference where the operands are (large GPU problems);
  // otherwise the harness computes it on the host.
  virtual bool verifies_on_device() const { return false; }
  virtual Expected<verify::ErrorReport> verify_on_device(const Problem& problem, const OperandBuffer& a,
                                                         const OperandBuffer& b, const OperandBuffer& c_in,
                                                         const OperandBuffer& c_out);
};

// The CPU timer: steady_clock around the call, nothing flushed.
class CpuTimer final : public RepTimer {
 public:
  std::string_view cache_state() const override { return "warm"; }
  int min_warmup_reps() const override { return 2; }
  Expected<double> time(const std::function<Status()>& call) override;
};

// The timer for a device; not_available for a device kind that has none.
Expected<std::unique_ptr<RepTimer>> make_timer(const Device& device);

#if defined(TILEFORGE_HAVE_CUDA_TOOLKIT)
// The CUDA timer (gpu_timer.cpp): events around each rep, a buffer of twice the L2 overwritten before it.
Expected<std::unique_ptr<RepTimer>> make_cuda_timer(const Device& device);
#endif

}  // namespace tileforge::measure

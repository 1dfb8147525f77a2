// The constants of the cpu families' cost model (cpu_family.cpp), each with the reason for its value.
#pragma once

namespace tileforge::cpu::constants {

// ---- CPUs (the cpu family: BLIS loop nest, packed A and B, MR x NR micro-kernels) ------------------------------

// The core's own rates (FMA pipes and latency, loads per cycle, L2 and L3 bytes per cycle) are fields of the chip
// record, each with its source: builtin records carry them, a detected host gets them from its microarchitecture's
// record (profiles/uarch/). The numbers below are the family's model: how its loop nest uses the chip.

// The DRAM rates below stay the family's: they describe how this loop nest's access pattern (rows of B far apart,
// strided packing reads) meets the memory system, measured on one machine only, and no record of another chip has
// a measurement to put in their place.
// A core reading rows of B that lie far apart (B read in place, one row per k, or packed from a narrow column
// range) cannot keep many lines in flight: the hardware prefetchers do not follow rows a page apart, and the
// micro-kernel's software prefetches share the core's few miss buffers. Measured on the project's Zen 3 machine
// (AVX2, 3.2 GHz, 16x4096x4096 FP32, 64 MB of B from DRAM, bench/results/cpu-amd-epyc-zen3/2026-11-29-tune/run5):
// in place, the fastest of 90 configs took 5.70 ms on two threads, 5.6 GB/s per core (1.75 B/cycle); packed, the
// fastest took 7.23 ms, its packing phase ~4.3 ms, 7.5 GB/s per core. A sequential read reaches 12.6 GB/s on one
// core there. Bytes per cycle per core, for DRAM rows read in place and for packing from DRAM.
inline constexpr double kInPlaceDramBytesPerCycle = 1.75;
inline constexpr double kPackDramBytesPerCycle = 2.3;
// Packing reads an operand with strided loads and writes panels: ~1 vector of output per cycle at best; a thread
// packs, then runs the micro-kernel on what it packed, so packing does not overlap its micro-kernel.
inline constexpr double kPackVectorsPerCycle = 1.0;
// A team's wait for B's packing pieces another thread holds (one per column chunk and K block): about a
// microsecond on a one-socket server, as a barrier.
inline constexpr double kTeamWaitSeconds = 1.0e-6;
// Waking the thread pool and joining it once per call.
inline constexpr double kCpuCallSeconds = 10.0e-6;

}  // namespace tileforge::cpu::constants

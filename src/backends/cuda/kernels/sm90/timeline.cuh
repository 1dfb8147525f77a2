// sm90 family: a diagnostic timeline of each CTA's phases (TF_SM90_TIMELINE, from TILEFORGE_SM90_TIMELINE; never
// in normal use): where a one-wave kernel's microseconds go beyond its main loop.
//
// Every CTA writes its own row of the module's tf_sm90_timeline (read back by the host after the launch,
// sm90_kernel.cpp): for each stamp the global timer (ns, one clock for every SM) and the SM's clock64 (cycles, its
// own), then the work units the first consumer warpgroup ran, the SM, and the grid's CTAs. Stamps: kernel entry and
// the set-up's end (barriers and the cluster's meeting) by the producer's first thread; the first stage landed, the
// last unit's main loop done, its fix-up's partial tile stored (the CTA's barrier passed), every slice of its tile
// arrived (the counter's wait and the barrier after it; these two 0 where the unit has no workspace fix-up), its
// fix-up done (the main loop's stamp again where there is none), and the consumer's end (the epilogue's stores
// issued and read) by the first consumer warpgroup's first thread. The layout (the enums) is read by the host
// compiler too, which writes the rows out (sm90_kernel.cpp); the stamping code only by the device's.
#pragma once

#ifndef TF_SM90_TIMELINE
#define TF_SM90_TIMELINE 0
#endif

namespace tf::sm90 {

enum : int { kTimelineCtas = 1024, kTimelineSlots = 24 };
enum : int {
  kStampEntry = 0,
  kStampSetup,
  kStampFirstStage,
  kStampLoopEnd,
  kStampStored,
  kStampArrived,
  kStampFixupEnd,
  kStampExit,
  kStamps
};
// After the stamps' 2 x kStamps words: the units, %smid and gridDim.x.
enum : int { kTimelineUnits = 2 * kStamps, kTimelineSm, kTimelineGrid };

}  // namespace tf::sm90

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)

#if TF_SM90_TIMELINE
extern "C" {
// One row of kTimelineSlots words per CTA (blockIdx.x below kTimelineCtas), overwritten by every launch.
__device__ unsigned long long tf_sm90_timeline[tf::sm90::kTimelineCtas * tf::sm90::kTimelineSlots];
}
#endif

namespace tf::sm90 {

// Stamp `which` for this CTA (call from one thread).
__device__ __forceinline__ void timeline_stamp(int which) {
#if TF_SM90_TIMELINE
  if (blockIdx.x < kTimelineCtas) {
    unsigned long long ns;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
    const long long cycles = clock64();
    unsigned long long* row = tf_sm90_timeline + blockIdx.x * kTimelineSlots;
    row[2 * which] = ns;
    row[2 * which + 1] = static_cast<unsigned long long>(cycles);
  }
#else
  (void)which;
#endif
}

// Stamp `which` cleared (a phase the CTA's last unit does not have, stamped by an earlier unit or launch).
__device__ __forceinline__ void timeline_clear(int which) {
#if TF_SM90_TIMELINE
  if (blockIdx.x < kTimelineCtas) {
    unsigned long long* row = tf_sm90_timeline + blockIdx.x * kTimelineSlots;
    row[2 * which] = 0;
    row[2 * which + 1] = 0;
  }
#else
  (void)which;
#endif
}

// A unit's main loop done: its stamp, the fix-up's parts cleared (stamped again where the unit has a fix-up through
// the workspace) and its end stamped now (again after the fix-up where there is one).
__device__ __forceinline__ void timeline_loop_end() {
  timeline_stamp(kStampLoopEnd);
  timeline_clear(kStampStored);
  timeline_clear(kStampArrived);
  timeline_stamp(kStampFixupEnd);
}

// The consumer's end stamped, and the CTA's closing words: the units it ran, its SM and the grid's size (call from
// one thread).
__device__ __forceinline__ void timeline_close(int units) {
  timeline_stamp(kStampExit);
#if TF_SM90_TIMELINE
  if (blockIdx.x < kTimelineCtas) {
    unsigned sm;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    unsigned long long* row = tf_sm90_timeline + blockIdx.x * kTimelineSlots;
    row[kTimelineUnits] = static_cast<unsigned long long>(units);
    row[kTimelineSm] = sm;
    row[kTimelineGrid] = gridDim.x;
  }
#else
  (void)units;
#endif
}

}  // namespace tf::sm90

#endif  // __CUDACC__ || __CUDACC_RTC__

// The count of a shared tile's slices, used by the split-K / stream-K fix-ups of the sm80 and sm90 families: one
// thread of the CTA counts its slice on the tile's counter and leaves in shared memory whether it was the last; the
// CTA's barriers around it are the caller's (a CTA barrier before orders every thread's partial stores before the
// count, one after lets every thread read the flag).
#pragma once

namespace tf {

// Release / acquire at GPU scope on `counter`: the slice that brings it to `slices` resets it (no other slice
// touches it in this launch, so it is ready for the next) and writes 1 to the shared word at `flag`, the others 0.
__device__ __forceinline__ void count_slice(int* counter, int slices, unsigned flag) {
  int old;
  asm volatile("atom.acq_rel.gpu.global.add.s32 %0, [%1], 1;\n" : "=r"(old) : "l"(counter) : "memory");
  const bool last = old == slices - 1;
  if (last) asm volatile("st.relaxed.gpu.global.s32 [%0], 0;\n" ::"l"(counter) : "memory");
  asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(flag), "r"(last ? 1u : 0u) : "memory");
}

// Whether count_slice found this CTA's slice the last, read after the barrier that follows it.
__device__ __forceinline__ bool last_slice(unsigned flag) {
  unsigned last;
  asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(last) : "r"(flag) : "memory");
  return last != 0;
}

}  // namespace tf

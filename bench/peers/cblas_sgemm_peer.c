// CBLAS peer: times cblas_sgemm (row-major, no transpose) from each shared library named on the command line,
// for one MxNxK, so that a BLAS the CLI does not link (BLIS) can be set beside OpenBLAS on the same machine.
//
//   cc -O2 bench/peers/cblas_sgemm_peer.c -o cblas_sgemm_peer -ldl
//   ./cblas_sgemm_peer M N K REPS LIBRARY.so [LIBRARY.so ...]
//
// Libraries named together run their reps interleaved; run one per process when a library's threads spin between
// calls (BLIS with OpenMP), or they slow the others. Prints the median and minimum per library.
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
typedef void (*sgemm_t)(int, int, int, int, int, int, float, const float*, int, const float*, int, float, float*, int);
static double now() { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
static int cmp(const void* a, const void* b) { double x = *(double*)a, y = *(double*)b; return x < y ? -1 : x > y; }
int main(int argc, char** argv) {
  if (argc < 6) { printf("usage: %s M N K REPS LIBRARY.so [LIBRARY.so ...]\n", argv[0]); return 2; }
  int M = atoi(argv[1]), N = atoi(argv[2]), K = atoi(argv[3]), reps = atoi(argv[4]);
  int nlib = argc - 5;
  if (M < 1 || N < 1 || K < 1 || reps < 1 || reps > 200 || nlib > 4) { printf("M, N, K >= 1; REPS 1..200; 1..4 libraries\n"); return 2; }
  sgemm_t f[4];
  for (int l = 0; l < nlib; ++l) {
    void* h = dlopen(argv[5 + l], RTLD_NOW | RTLD_LOCAL);
    if (!h) { printf("%s\n", dlerror()); return 1; }
    f[l] = (sgemm_t)dlsym(h, "cblas_sgemm");
    if (!f[l]) { printf("no cblas_sgemm in %s\n", argv[5 + l]); return 1; }
  }
  float *A = malloc(4l * M * K), *B = malloc(4l * K * N), *C = malloc(4l * M * N);
  for (long i = 0; i < (long)M * K; ++i) A[i] = rand() / (float)RAND_MAX - 0.5f;
  for (long i = 0; i < (long)K * N; ++i) B[i] = rand() / (float)RAND_MAX - 0.5f;
  double t[4][200];
  for (int r = -3; r < reps; ++r)
    for (int l = 0; l < nlib; ++l) {
      double t0 = now();
      f[l](101, 111, 111, M, N, K, 1.0f, A, K, B, N, 0.0f, C, N);
      double dt = now() - t0;
      if (r >= 0) t[l][r] = dt;
    }
  for (int l = 0; l < nlib; ++l) {
    qsort(t[l], reps, sizeof(double), cmp);
    printf("%-60s median %.2f ms  %.1f GFLOP/s (min %.2f ms)\n", argv[5 + l], t[l][reps / 2] * 1e3, 2.0 * M * N * K / t[l][reps / 2] / 1e9, t[l][0] * 1e3);
  }
}

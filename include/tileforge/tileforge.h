/* tileforge C API, in the style of cublasGemmEx: a handle, dtype and layout enums, status codes and messages. */
#ifndef TILEFORGE_TILEFORGE_H
#define TILEFORGE_TILEFORGE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The library is built with hidden visibility: what this header declares is its exported interface. */
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

/* Mirrors tileforge::Code, value for value. */
typedef enum {
  TF_STATUS_SUCCESS = 0,
  TF_STATUS_INVALID_ARGUMENT = 1, /* the call's description is wrong; tfGetLastErrorMessage names the argument */
  TF_STATUS_UNSUPPORTED = 2,      /* valid, but no kernel can run it */
  TF_STATUS_NOT_AVAILABLE = 3,    /* a library, device or file that is needed is missing */
  TF_STATUS_COMPILE_FAILED = 4,
  TF_STATUS_LAUNCH_FAILED = 5,
  TF_STATUS_IO_ERROR = 6,
  TF_STATUS_INTERNAL = 7
} tfStatus_t;

/* Element types of A, B and C (names as cudaDataType's). */
typedef enum { TF_R_32F = 0, TF_R_16F = 1, TF_R_16BF = 2 } tfDataType;

/* Accumulator precision; TF_COMPUTE_16F only with TF_R_16F inputs. */
typedef enum { TF_COMPUTE_32F = 0, TF_COMPUTE_16F = 1 } tfComputeType;

/* Storage order of A, of B and of C (cuBLAS and BLAS callers: TF_COL_MAJOR for all three). */
typedef enum { TF_ROW_MAJOR = 0, TF_COL_MAJOR = 1 } tfLayout;

typedef struct tfContext* tfHandle_t;
typedef struct tfGemmPlan* tfGemmPlan_t;

/* Creates a handle. Its device is "auto": a GEMM runs on the GPU whose memory A is in (a CUDA device pointer),
 * else on the CPU with host pointers. Many threads may call one handle at once; settings changed while calls run
 * apply to later calls. Library calls measure nothing and write nothing but the CUDA kernel cache. */
tfStatus_t tfCreate(tfHandle_t* handle);
tfStatus_t tfDestroy(tfHandle_t handle);
/* "auto", "cpu", "cuda" (the first GPU) or "cuda:N". A GPU needs device pointers (checked, refused otherwise). */
tfStatus_t tfSetDevice(tfHandle_t handle, const char* device);
/* The CUDA stream later calls enqueue on: a cudaStream_t or CUstream passed as void* (no CUDA header needed);
 * NULL: the legacy default stream. A call returns once its kernel is enqueued. Unused on the CPU. */
tfStatus_t tfSetStream(tfHandle_t handle, void* stream);
tfStatus_t tfGetStream(tfHandle_t handle, void** stream);
/* Device scratch for split-K / stream-K partial sums (as cublasSetWorkspace), used in stream order; NULL and 0: the
 * library keeps its own, one per stream. tfGemmPlanGetWorkspaceSize says how much a GEMM needs. */
tfStatus_t tfSetWorkspace(tfHandle_t handle, void* workspace, size_t workspaceBytes);
/* Threads used by later CPU calls on this handle; 0 = all cores. */
tfStatus_t tfSetThreads(tfHandle_t handle, int threads);
/* The tuning DB configs are looked up in (read only, never created); NULL: $TILEFORGE_DB, else the user's cache
 * folder's tileforge/tune.db. tfUseDatabase(handle, 0): no DB, the planner chooses. */
tfStatus_t tfSetDatabase(tfHandle_t handle, const char* path);
tfStatus_t tfUseDatabase(tfHandle_t handle, int use);
/* 1 (the default): results bit-identical from run to run (split-K and stream-K sum in a fixed order); 0 allows
 * configs that sum by float atomics in arrival order where they are faster (as cublasSetAtomicsMode(h,
 * CUBLAS_ATOMICS_ALLOWED)). */
tfStatus_t tfSetDeterministic(tfHandle_t handle, int deterministic);
/* The chip record plans are made for: a builtin name ("h200", "generic-avx512") or a JSON file; NULL: the running
 * device's own. */
tfStatus_t tfSetProfile(tfHandle_t handle, const char* profile);
/* Pins a kernel parameter (as the tool's --set NAME=VALUE), checked against the family's legal values at the next
 * call; tfClearParams drops every pin. */
tfStatus_t tfSetParam(tfHandle_t handle, const char* name, int64_t value);
tfStatus_t tfClearParams(tfHandle_t handle);

/* C = alpha * op(A) * op(B) + beta * C with A m x k, B k x n, C m x n: host pointers on the CPU, device pointers on a
 * GPU. lda/ldb/ldc: distance between rows (row-major) or columns (column-major), at least max(1, that row or
 * column's length). alpha and beta point to floats on the host. When beta is 0, C is not read. m, n or k = 0 is
 * valid. A column-major C runs as the transposed problem (C^T = B^T A^T) on the same kernels. */
tfStatus_t tfGemmEx(tfHandle_t handle, tfLayout layoutA, tfLayout layoutB, tfLayout layoutC, int64_t m, int64_t n,
                    int64_t k, const void* alpha, const void* A, tfDataType Atype, int64_t lda, const void* B,
                    tfDataType Btype, int64_t ldb, const void* beta, void* C, tfDataType Ctype, int64_t ldc,
                    tfComputeType computeType);

/* batchCount GEMMs; matrix i of A starts at A + i * strideA elements (likewise B and C). */
tfStatus_t tfGemmStridedBatchedEx(tfHandle_t handle, tfLayout layoutA, tfLayout layoutB, tfLayout layoutC, int64_t m,
                                  int64_t n, int64_t k, const void* alpha, const void* A, tfDataType Atype,
                                  int64_t lda, int64_t strideA, const void* B, tfDataType Btype, int64_t ldb,
                                  int64_t strideB, const void* beta, void* C, tfDataType Ctype, int64_t ldc,
                                  int64_t strideC, int64_t batchCount, tfComputeType computeType);

/* A GEMM prepared once (as cublasLtMatmul's descriptors with a chosen algorithm): the handle's device, profile,
 * pins and DB at creation choose and compile the kernel; tfGemmPlanRun then goes straight to it. The arguments are
 * tfGemmStridedBatchedEx's without the pointers (batchCount 1 and strides 0 for one GEMM). */
tfStatus_t tfGemmPlanCreate(tfHandle_t handle, tfGemmPlan_t* plan, tfLayout layoutA, tfLayout layoutB,
                            tfLayout layoutC, int64_t m, int64_t n, int64_t k, const void* alpha, tfDataType Atype,
                            int64_t lda, int64_t strideA, tfDataType Btype, int64_t ldb, int64_t strideB,
                            const void* beta, tfDataType Ctype, int64_t ldc, int64_t strideC, int64_t batchCount,
                            tfComputeType computeType);
/* Runs the plan from any thread: stream NULL means the handle's stream when the plan was made; workspace NULL means
 * the handle's workspace, else the library's own. Errors are read with tfGetLastErrorMessage on the plan's handle. */
tfStatus_t tfGemmPlanRun(tfGemmPlan_t plan, const void* A, const void* B, void* C, void* stream, void* workspace,
                         size_t workspaceBytes);
tfStatus_t tfGemmPlanGetWorkspaceSize(tfGemmPlan_t plan, size_t* workspaceBytes);
/* "sm90 BLOCK_M=128 ... on cuda:0 (planner: ...)": what runs and why; valid while the plan lives. */
const char* tfGemmPlanDescribe(tfGemmPlan_t plan);
tfStatus_t tfGemmPlanDestroy(tfGemmPlan_t plan);

/* "TF_STATUS_INVALID_ARGUMENT", ...; never NULL. */
const char* tfGetStatusString(tfStatus_t status);
/* The message of the calling thread's last failed call on this handle ("" after a success); valid until that
 * thread's next call on it. */
const char* tfGetLastErrorMessage(tfHandle_t handle);
/* "0.1.0". */
const char* tfGetVersion(void);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif

#endif /* TILEFORGE_TILEFORGE_H */

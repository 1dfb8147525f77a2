/* tileforge C API, in the style of cublasGemmEx: a handle, dtype and layout enums, status codes and messages. */
#ifndef TILEFORGE_TILEFORGE_H
#define TILEFORGE_TILEFORGE_H

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

/* Storage order of A and of B. C is always row-major with leading dimension ldc. */
typedef enum { TF_ROW_MAJOR = 0, TF_COL_MAJOR = 1 } tfLayout;

typedef struct tfContext* tfHandle_t;

/* Creates a handle that runs on the CPU with all cores. */
tfStatus_t tfCreate(tfHandle_t* handle);
tfStatus_t tfDestroy(tfHandle_t handle);
/* Threads used by later calls on this handle; 0 = all cores. */
tfStatus_t tfSetThreads(tfHandle_t handle, int threads);

/* C = alpha * op(A) * op(B) + beta * C with A m x k, B k x n, C m x n (host pointers).
 * lda/ldb/ldc: distance between rows (row-major) or columns (column-major), at least max(1, that row or column's
 * length). alpha and beta point to floats. When beta is 0, C is not read. m, n or k = 0 is valid. */
tfStatus_t tfGemmEx(tfHandle_t handle, tfLayout layoutA, tfLayout layoutB, int64_t m, int64_t n, int64_t k,
                    const void* alpha, const void* A, tfDataType Atype, int64_t lda, const void* B, tfDataType Btype,
                    int64_t ldb, const void* beta, void* C, tfDataType Ctype, int64_t ldc, tfComputeType computeType);

/* batchCount GEMMs; matrix i of A starts at A + i * strideA elements (likewise B and C). */
tfStatus_t tfGemmStridedBatchedEx(tfHandle_t handle, tfLayout layoutA, tfLayout layoutB, int64_t m, int64_t n,
                                  int64_t k, const void* alpha, const void* A, tfDataType Atype, int64_t lda,
                                  int64_t strideA, const void* B, tfDataType Btype, int64_t ldb, int64_t strideB,
                                  const void* beta, void* C, tfDataType Ctype, int64_t ldc, int64_t strideC,
                                  int64_t batchCount, tfComputeType computeType);

/* "TF_STATUS_INVALID_ARGUMENT", ...; never NULL. */
const char* tfGetStatusString(tfStatus_t status);
/* The message of the last failed call on this handle ("" after a success); valid until the next call. */
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

// hip-on-cuda: <hipblas/hipblas.h> for nvcc.
//
// SPDX-License-Identifier: MIT OR Apache-2.0
//
// The hipBLAS declarations translated kernels include, with hipBLAS's own types and values
// (hipblas.h of ROCm 7.2). Declarations only: nothing here is defined or forwarded, so a
// binary that calls one fails to link, naming it. mistral.rs's GPTQ unit (q_gemm.cu, its
// author's ROCm branch) includes it and wraps hipblasHgemm, but calls it nowhere.
#pragma once

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef void* hipblasHandle_t;
typedef uint16_t hipblasHalf;

typedef enum {
    HIPBLAS_STATUS_SUCCESS = 0,
    HIPBLAS_STATUS_NOT_INITIALIZED = 1,
    HIPBLAS_STATUS_ALLOC_FAILED = 2,
    HIPBLAS_STATUS_INVALID_VALUE = 3,
    HIPBLAS_STATUS_MAPPING_ERROR = 4,
    HIPBLAS_STATUS_EXECUTION_FAILED = 5,
    HIPBLAS_STATUS_INTERNAL_ERROR = 6,
    HIPBLAS_STATUS_NOT_SUPPORTED = 7,
} hipblasStatus_t;

typedef enum {
    HIPBLAS_OP_N = 111,
    HIPBLAS_OP_T = 112,
    HIPBLAS_OP_C = 113,
} hipblasOperation_t;

hipblasStatus_t hipblasHgemm(hipblasHandle_t handle, hipblasOperation_t transA, hipblasOperation_t transB, int m,
                             int n, int k, const hipblasHalf* alpha, const hipblasHalf* AP, int lda,
                             const hipblasHalf* BP, int ldb, const hipblasHalf* beta, hipblasHalf* CP, int ldc);

#ifdef __cplusplus
}
#endif

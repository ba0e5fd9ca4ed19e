// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

/*===- FakeCublasLt.c - A host stand-in for libcublasLt.so.13 -------------===//
 *
 * Together with FakeCuda.c (device pointers are host pointers) it runs the
 * GEMM steps of runtime/test/Inputs/gemm on CI: it keeps every descriptor and
 * layout attribute memwall-run sets and computes the documented column-major
 * cuBLASLt matmul from them, D = epilogue(alpha op(A) op(B) + beta C + bias),
 * so a wrongly wired descriptor (layout, transpose, batch stride, bias,
 * epilogue, beta) fails --check. The heuristic rejects layouts whose shapes
 * do not agree with m, n, k, as the real one does. Each matmul advances the
 * fake driver's clock as if it ran at 700 TFLOP/s after 4 us of overhead;
 * matmuls above 2^24 multiply-adds (--calibrate's) are only timed: the host
 * would take minutes to compute them.
 *
 *===----------------------------------------------------------------------===*/

#include <cublasLt.h>

#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct cublasLtContext {
  int unused;
};

typedef struct {
  cudaDataType type;
  uint64_t rows, cols;
  int64_t ld;
  int32_t batchCount;
  int64_t batchStride;
} FakeLayout;

typedef struct {
  cublasOperation_t transA, transB;
  cublasLtEpilogue_t epilogue;
  const void *bias;
  int32_t biasType;
} FakeDesc;

cublasStatus_t CUBLASWINAPI cublasLtCreate(cublasLtHandle_t *handle) {
  *handle = calloc(1, sizeof(struct cublasLtContext));
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasLtDestroy(cublasLtHandle_t handle) {
  free(handle);
  return CUBLAS_STATUS_SUCCESS;
}

size_t CUBLASWINAPI cublasLtGetVersion(void) { return 130000; }

const char *CUBLASWINAPI cublasLtGetStatusName(cublasStatus_t status) {
  return status == CUBLAS_STATUS_NOT_SUPPORTED ? "CUBLAS_STATUS_NOT_SUPPORTED"
                                               : "CUBLAS_STATUS_FAKE";
}

cublasStatus_t CUBLASWINAPI
cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *desc,
                         cublasComputeType_t compute, cudaDataType_t scale) {
  if (compute != CUBLAS_COMPUTE_32F || scale != CUDA_R_32F)
    return CUBLAS_STATUS_NOT_SUPPORTED;
  FakeDesc *fake = calloc(1, sizeof(FakeDesc));
  fake->biasType = -1;
  *desc = (cublasLtMatmulDesc_t)fake;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI
cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc) {
  free(desc);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulDescSetAttribute(
    cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attribute,
    const void *value, size_t size) {
  FakeDesc *fake = (FakeDesc *)desc;
  switch (attribute) {
  case CUBLASLT_MATMUL_DESC_TRANSA:
    memcpy(&fake->transA, value, size);
    return CUBLAS_STATUS_SUCCESS;
  case CUBLASLT_MATMUL_DESC_TRANSB:
    memcpy(&fake->transB, value, size);
    return CUBLAS_STATUS_SUCCESS;
  case CUBLASLT_MATMUL_DESC_EPILOGUE:
    memcpy(&fake->epilogue, value, size);
    return CUBLAS_STATUS_SUCCESS;
  case CUBLASLT_MATMUL_DESC_BIAS_POINTER:
    memcpy(&fake->bias, value, size);
    return CUBLAS_STATUS_SUCCESS;
  case CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE:
    memcpy(&fake->biasType, value, size);
    return CUBLAS_STATUS_SUCCESS;
  default:
    return CUBLAS_STATUS_INVALID_VALUE;
  }
}

cublasStatus_t CUBLASWINAPI
cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *layout, cudaDataType type,
                           uint64_t rows, uint64_t cols, int64_t ld) {
  if (ld < (int64_t)rows)
    return CUBLAS_STATUS_INVALID_VALUE;
  FakeLayout *fake = calloc(1, sizeof(FakeLayout));
  fake->type = type;
  fake->rows = rows;
  fake->cols = cols;
  fake->ld = ld;
  fake->batchCount = 1;
  *layout = (cublasLtMatrixLayout_t)fake;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI
cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout) {
  free(layout);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasLtMatrixLayoutSetAttribute(
    cublasLtMatrixLayout_t layout, cublasLtMatrixLayoutAttribute_t attribute,
    const void *value, size_t size) {
  FakeLayout *fake = (FakeLayout *)layout;
  if (attribute == CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT &&
      size == sizeof(int32_t)) {
    memcpy(&fake->batchCount, value, size);
    return CUBLAS_STATUS_SUCCESS;
  }
  if (attribute == CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET &&
      size == sizeof(int64_t)) {
    memcpy(&fake->batchStride, value, size);
    return CUBLAS_STATUS_SUCCESS;
  }
  return CUBLAS_STATUS_INVALID_VALUE;
}

cublasStatus_t CUBLASWINAPI
cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *preference) {
  *preference = calloc(1, 64);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI
cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t preference) {
  free(preference);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulPreferenceSetAttribute(
    cublasLtMatmulPreference_t preference,
    cublasLtMatmulPreferenceAttributes_t attribute, const void *value,
    size_t size) {
  (void)preference, (void)attribute, (void)value, (void)size;
  return CUBLAS_STATUS_SUCCESS;
}

/* op(A) is m x k, op(B) k x n, C and D m x n: the shapes must agree. */
static int shapesAgree(const FakeDesc *desc, const FakeLayout *a,
                       const FakeLayout *b, const FakeLayout *c,
                       const FakeLayout *d) {
  uint64_t m = desc->transA == CUBLAS_OP_T ? a->cols : a->rows;
  uint64_t k = desc->transA == CUBLAS_OP_T ? a->rows : a->cols;
  uint64_t kb = desc->transB == CUBLAS_OP_T ? b->cols : b->rows;
  uint64_t n = desc->transB == CUBLAS_OP_T ? b->rows : b->cols;
  return k == kb && c->rows == m && c->cols == n && d->rows == m &&
         d->cols == n && a->type == d->type && b->type == d->type &&
         c->type == d->type && a->batchCount == d->batchCount &&
         b->batchCount == d->batchCount && c->batchCount == d->batchCount;
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulAlgoGetHeuristic(
    cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
    cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
    cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d,
    cublasLtMatmulPreference_t preference, int requested,
    cublasLtMatmulHeuristicResult_t results[], int *returned) {
  (void)handle, (void)preference;
  *returned = 0;
  if (requested < 1 ||
      !shapesAgree((FakeDesc *)desc, (FakeLayout *)a, (FakeLayout *)b,
                   (FakeLayout *)c, (FakeLayout *)d))
    return CUBLAS_STATUS_NOT_SUPPORTED;
  memset(&results[0], 0, sizeof(results[0]));
  results[0].state = CUBLAS_STATUS_SUCCESS;
  *returned = 1;
  return CUBLAS_STATUS_SUCCESS;
}

static float load(const void *base, cudaDataType type, int64_t index) {
  if (type == CUDA_R_32F)
    return ((const float *)base)[index];
  uint32_t bits = (uint32_t)((const uint16_t *)base)[index] << 16;
  float value;
  memcpy(&value, &bits, sizeof(value));
  return value; /* only bf16 besides f32 in the test bundle */
}

static void store(void *base, cudaDataType type, int64_t index, float value) {
  if (type == CUDA_R_32F) {
    ((float *)base)[index] = value;
    return;
  }
  uint32_t bits;
  memcpy(&bits, &value, sizeof(bits));
  bits += 0x7fff + ((bits >> 16) & 1); /* round to nearest even */
  ((uint16_t *)base)[index] = (uint16_t)(bits >> 16);
}

/* FakeCuda.c's clock, in the libcuda.so.1 memwall-run has loaded. */
static void advanceClock(double nanoseconds) {
  static void (*advance)(unsigned long long) = NULL;
  if (!advance) {
    void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (driver)
      *(void **)&advance = dlsym(driver, "fakeCudaAdvanceClock");
  }
  if (advance)
    advance((unsigned long long)nanoseconds);
}

cublasStatus_t CUBLASWINAPI
cublasLtMatmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
               const void *alpha, const void *A, cublasLtMatrixLayout_t aLayout,
               const void *B, cublasLtMatrixLayout_t bLayout, const void *beta,
               const void *C, cublasLtMatrixLayout_t cLayout, void *D,
               cublasLtMatrixLayout_t dLayout, const cublasLtMatmulAlgo_t *algo,
               void *workspace, size_t workspaceBytes, cudaStream_t stream) {
  (void)handle, (void)algo, (void)workspace, (void)workspaceBytes;
  (void)stream;
  const FakeDesc *op = (const FakeDesc *)desc;
  const FakeLayout *a = (const FakeLayout *)aLayout,
                   *b = (const FakeLayout *)bLayout,
                   *c = (const FakeLayout *)cLayout,
                   *d = (const FakeLayout *)dLayout;
  if (!shapesAgree(op, a, b, c, d))
    return CUBLAS_STATUS_INVALID_VALUE;
  int transA = op->transA == CUBLAS_OP_T, transB = op->transB == CUBLAS_OP_T;
  int64_t m = (int64_t)d->rows, n = (int64_t)d->cols;
  int64_t k = (int64_t)(transA ? a->rows : a->cols);
  float alphaValue = *(const float *)alpha, betaValue = *(const float *)beta;
  int hasBias = op->epilogue == CUBLASLT_EPILOGUE_BIAS ||
                op->epilogue == CUBLASLT_EPILOGUE_RELU_BIAS ||
                op->epilogue == CUBLASLT_EPILOGUE_GELU_BIAS;
  if (hasBias &&
      (!op->bias || (op->biasType != -1 && op->biasType != (int32_t)d->type)))
    return CUBLAS_STATUS_INVALID_VALUE;
  double macs = (double)d->batchCount * (double)m * (double)n * (double)k;
  advanceClock(4000 + 2 * macs / 700e3);
  if (macs > (double)(1 << 24))
    return CUBLAS_STATUS_SUCCESS;
  for (int32_t batch = 0; batch < d->batchCount; ++batch) {
    int64_t offA = batch * a->batchStride, offB = batch * b->batchStride;
    int64_t offC = batch * c->batchStride, offD = batch * d->batchStride;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        float sum = 0;
        for (int64_t p = 0; p < k; ++p)
          sum +=
              load(A, a->type,
                   offA + (transA ? p + i * a->ld : i + p * a->ld)) *
              load(B, b->type, offB + (transB ? j + p * b->ld : p + j * b->ld));
        float value = alphaValue * sum;
        if (betaValue != 0)
          value += betaValue * load(C, c->type, offC + i + j * c->ld);
        if (hasBias)
          value += load(op->bias, d->type, i);
        if (op->epilogue == CUBLASLT_EPILOGUE_RELU ||
            op->epilogue == CUBLASLT_EPILOGUE_RELU_BIAS)
          value = value > 0 ? value : 0;
        if (op->epilogue == CUBLASLT_EPILOGUE_GELU ||
            op->epilogue == CUBLASLT_EPILOGUE_GELU_BIAS)
          value = 0.5f * value *
                  (1 + tanhf(0.7978845608f *
                             (value + 0.044715f * value * value * value)));
        store(D, d->type, offD + i + j * d->ld, value);
      }
  }
  return CUBLAS_STATUS_SUCCESS;
}

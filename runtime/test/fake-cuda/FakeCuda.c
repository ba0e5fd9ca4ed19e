// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

/*===- FakeCuda.c - A host-memory stand-in for libcuda.so.1 ---------------===//
 *
 * Lets CI, which has no GPU, drive memwall-run's whole GPU path: device memory
 * is host memory, and cuLaunchKernel runs host versions of the kernels of the
 * tiny test bundle (runtime/test/Inputs/add) by name. Defining the functions
 * under cuda.h's names gives them the versioned symbols (cuMemAlloc_v2, ...)
 * that memwall-run looks up, as the real driver exports them.
 *
 * Time is a fake clock that device work advances (fakeCudaAdvanceClock, also
 * called by FakeCublasLt.c) at rates close to an H100 SXM's, so that
 * memwall-run --calibrate measures plausible figures: a test kernel takes
 * 0.5 ms, the empty kernel 2 us (1 us replayed from a graph), a device copy
 * runs at 2.8e12 bytes/s counting read and write. Built with
 * FAKE_CUDA_NO_GRAPHS it lacks the stream capture entry points.
 *
 * FakeNccl.c asks fakeCudaContextRetained whether a primary context is
 * retained when a communicator is made or destroyed.
 *
 * Knobs (environment): FAKE_CUDA_FREE_BYTES caps the free memory reported;
 * FAKE_CUDA_WRONG_RESULTS=1 makes add_f32_8 subtract (to fail --check); a
 * module whose PTX contains FAKE_JIT_ERROR fails to load with a JIT log.
 *
 *===----------------------------------------------------------------------===*/

#include <cuda.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const size_t kTotalBytes = (size_t)80 << 30;
static size_t allocatedBytes = 0;
/* Fake nanoseconds. */
static unsigned long long eventClock = 0;
/* Empty kernels launched while the stream captures; in one graph at most. */
static int capturing = 0;
static unsigned long long capturedLaunches = 0;

void fakeCudaAdvanceClock(unsigned long long nanoseconds) {
  eventClock += nanoseconds;
}
static int initialized = 0;
/* Primary contexts retained and not yet released (FakeNccl.c asks). */
static int retainedContexts = 0;

int fakeCudaContextRetained(void) { return retainedContexts > 0; }

/* Every allocation is prefixed by its size, so that cuMemFree can count. */
typedef struct {
  size_t bytes;
  size_t padding[31]; /* keeps the payload 256-byte aligned */
} AllocationHeader;

struct CUfunc_st {
  char name[128];
};
/* Handed out by cuModuleGetFunction, freed by cuModuleUnload (LeakSanitizer
 * runs these tests in sanitizer builds). */
static struct CUfunc_st *functions[64];
static int functionCount = 0;
struct CUevent_st {
  unsigned long long time;
};

CUresult CUDAAPI cuInit(unsigned int flags) {
  (void)flags;
  initialized = 1;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDriverGetVersion(int *version) {
  *version = 13000;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGetErrorName(CUresult error, const char **name) {
  switch (error) {
  case CUDA_ERROR_OUT_OF_MEMORY:
    *name = "CUDA_ERROR_OUT_OF_MEMORY";
    return CUDA_SUCCESS;
  case CUDA_ERROR_INVALID_PTX:
    *name = "CUDA_ERROR_INVALID_PTX";
    return CUDA_SUCCESS;
  case CUDA_ERROR_NOT_FOUND:
    *name = "CUDA_ERROR_NOT_FOUND";
    return CUDA_SUCCESS;
  default:
    return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult CUDAAPI cuGetErrorString(CUresult error, const char **text) {
  (void)error;
  *text = "fake driver error";
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetCount(int *count) {
  *count = initialized ? 1 : 0;
  return initialized ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}

CUresult CUDAAPI cuDeviceGet(CUdevice *device, int ordinal) {
  *device = ordinal;
  return ordinal == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

CUresult CUDAAPI cuDeviceGetName(char *name, int length, CUdevice device) {
  (void)device;
  snprintf(name, (size_t)length, "Fake CUDA device");
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetAttribute(int *value, CUdevice_attribute attribute,
                                      CUdevice device) {
  (void)device;
  *value = attribute == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR ? 9 : 0;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext *context, CUdevice device) {
  (void)device;
  *context = (CUcontext)(uintptr_t)0x1000;
  ++retainedContexts;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice device) {
  (void)device;
  --retainedContexts;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxSetCurrent(CUcontext context) {
  (void)context;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxSynchronize(void) { return CUDA_SUCCESS; }

CUresult CUDAAPI cuMemGetInfo(size_t *freeBytes, size_t *totalBytes) {
  size_t available = kTotalBytes - allocatedBytes;
  const char *cap = getenv("FAKE_CUDA_FREE_BYTES");
  if (cap) {
    size_t limit = (size_t)strtoull(cap, NULL, 10);
    available = limit > allocatedBytes ? limit - allocatedBytes : 0;
  }
  *freeBytes = available;
  *totalBytes = kTotalBytes;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemAlloc(CUdeviceptr *pointer, size_t bytes) {
  size_t freeBytes, totalBytes;
  cuMemGetInfo(&freeBytes, &totalBytes);
  if (bytes == 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (bytes > freeBytes)
    return CUDA_ERROR_OUT_OF_MEMORY;
  AllocationHeader *header =
      aligned_alloc(256, sizeof(AllocationHeader) + ((bytes + 255) & ~255u));
  if (!header)
    return CUDA_ERROR_OUT_OF_MEMORY;
  header->bytes = bytes;
  allocatedBytes += bytes;
  *pointer = (CUdeviceptr)(uintptr_t)(header + 1);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemFree(CUdeviceptr pointer) {
  AllocationHeader *header = (AllocationHeader *)(uintptr_t)pointer - 1;
  allocatedBytes -= header->bytes;
  free(header);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemcpyHtoD(CUdeviceptr destination, const void *source,
                              size_t bytes) {
  memcpy((void *)(uintptr_t)destination, source, bytes);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemcpyDtoH(void *destination, CUdeviceptr source,
                              size_t bytes) {
  memcpy(destination, (const void *)(uintptr_t)source, bytes);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemsetD8(CUdeviceptr destination, unsigned char value,
                            size_t count) {
  memset((void *)(uintptr_t)destination, value, count);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuModuleLoadDataEx(CUmodule *module, const void *image,
                                    unsigned int optionCount,
                                    CUjit_option *options, void **values) {
  if (strstr((const char *)image, "FAKE_JIT_ERROR")) {
    for (unsigned i = 0; i < optionCount; ++i)
      if (options[i] == CU_JIT_ERROR_LOG_BUFFER)
        snprintf((char *)values[i], 64,
                 "ptxas fatal   : fake syntax error on line 3");
    return CUDA_ERROR_INVALID_PTX;
  }
  *module = (CUmodule)(uintptr_t)0x2000;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuModuleGetFunction(CUfunction *function, CUmodule module,
                                     const char *name) {
  (void)module;
  if (strcmp(name, "add_f32_8") != 0 && strcmp(name, "add_tma_f32_8") != 0 &&
      strcmp(name, "scale2_f32_8") != 0 &&
      strcmp(name, "kv_append_f32_8") != 0 &&
      strcmp(name, "memwall_empty") != 0)
    return CUDA_ERROR_NOT_FOUND;
  if (functionCount == 64)
    return CUDA_ERROR_OUT_OF_MEMORY;
  struct CUfunc_st *handle = calloc(1, sizeof(struct CUfunc_st));
  snprintf(handle->name, sizeof(handle->name), "%s", name);
  functions[functionCount++] = handle;
  *function = handle;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuModuleUnload(CUmodule module) {
  (void)module; /* one module at a time in the tests */
  while (functionCount > 0)
    free(functions[--functionCount]);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuFuncSetAttribute(CUfunction function,
                                    CUfunction_attribute attribute, int value) {
  (void)function;
  (void)attribute;
  (void)value;
  return CUDA_SUCCESS;
}

static float *argument(void **params, int index) {
  return (float *)(uintptr_t) * (CUdeviceptr *)params[index];
}

/* What the fake cuTensorMapEncodeTiled stores in the opaque CUtensorMap:
 * the arguments as given, so that the fake kernel can check them. */
typedef struct {
  unsigned long long magic;
  void *address;
  unsigned rank;
  unsigned dataType, interleave, swizzle, l2Promotion, oobFill;
  /* 32 bits, to fit 128 bytes: the test's extents and strides are small. */
  cuuint32_t dims[5], strides[4], box[5], elementStrides[5];
} FakeTensorMap;
#define FAKE_TENSOR_MAP_MAGIC 0x70614d726f736e54ULL

CUresult CUDAAPI cuTensorMapEncodeTiled(
    CUtensorMap *tensorMap, CUtensorMapDataType tensorDataType,
    cuuint32_t tensorRank, void *globalAddress, const cuuint64_t *globalDim,
    const cuuint64_t *globalStrides, const cuuint32_t *boxDim,
    const cuuint32_t *elementStrides, CUtensorMapInterleave interleave,
    CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2Promotion,
    CUtensorMapFloatOOBfill oobFill) {
  _Static_assert(sizeof(FakeTensorMap) <= sizeof(CUtensorMap),
                 "the fake map fits the opaque one");
  if (tensorRank < 1 || tensorRank > 5 || ((uintptr_t)globalAddress & 15))
    return CUDA_ERROR_INVALID_VALUE;
  FakeTensorMap map;
  memset(&map, 0, sizeof(map));
  map.magic = FAKE_TENSOR_MAP_MAGIC;
  map.address = globalAddress;
  map.rank = tensorRank;
  map.dataType = tensorDataType;
  map.interleave = interleave;
  map.swizzle = swizzle;
  map.l2Promotion = l2Promotion;
  map.oobFill = oobFill;
  for (cuuint32_t i = 0; i < tensorRank; ++i) {
    map.dims[i] = (cuuint32_t)globalDim[i];
    map.box[i] = boxDim[i];
    map.elementStrides[i] = elementStrides[i];
    if (i + 1 < tensorRank)
      map.strides[i] = (cuuint32_t)globalStrides[i];
  }
  memset(tensorMap, 0, sizeof(*tensorMap));
  memcpy(tensorMap, &map, sizeof(map));
  return CUDA_SUCCESS;
}

/* The x of add_tma_f32_8: the tensor map must be Inputs/tma-add's, encoded
 * innermost first ([4, 2] elements, rows 16 bytes apart, box [4, 1]). */
static float *tensorMapArgument(void **params, int index) {
  const FakeTensorMap *map =
      (const FakeTensorMap *)(uintptr_t) * (CUdeviceptr *)params[index];
  if (map->magic != FAKE_TENSOR_MAP_MAGIC || map->rank != 2 ||
      map->dataType != CU_TENSOR_MAP_DATA_TYPE_FLOAT32 || map->dims[0] != 4 ||
      map->dims[1] != 2 || map->strides[0] != 16 || map->box[0] != 4 ||
      map->box[1] != 1 || map->elementStrides[0] != 1 ||
      map->elementStrides[1] != 1 ||
      map->interleave != CU_TENSOR_MAP_INTERLEAVE_NONE ||
      map->swizzle != CU_TENSOR_MAP_SWIZZLE_NONE ||
      map->l2Promotion != CU_TENSOR_MAP_L2_PROMOTION_L2_256B ||
      map->oobFill != CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)
    return NULL;
  return (float *)map->address;
}

CUresult CUDAAPI cuLaunchKernel(CUfunction function, unsigned gridX,
                                unsigned gridY, unsigned gridZ, unsigned blockX,
                                unsigned blockY, unsigned blockZ,
                                unsigned sharedBytes, CUstream stream,
                                void **params, void **extra) {
  (void)gridY, (void)gridZ, (void)blockY, (void)blockZ, (void)sharedBytes;
  (void)stream, (void)extra;
  if (strcmp(function->name, "memwall_empty") == 0) {
    if (capturing)
      ++capturedLaunches;
    else
      eventClock += 2000;
    return CUDA_SUCCESS;
  }
  if (gridX * blockX < 8)
    return CUDA_ERROR_INVALID_VALUE;
  int wrong = getenv("FAKE_CUDA_WRONG_RESULTS") != NULL;
  if (strcmp(function->name, "add_f32_8") == 0 ||
      strcmp(function->name, "add_tma_f32_8") == 0) {
    float *x = strcmp(function->name, "add_f32_8") == 0
                   ? argument(params, 0)
                   : tensorMapArgument(params, 0);
    float *y = argument(params, 1), *t = argument(params, 2);
    if (!x)
      return CUDA_ERROR_INVALID_VALUE;
    for (int i = 0; i < 8; ++i)
      t[i] = wrong ? x[i] - y[i] : x[i] + y[i];
  } else if (strcmp(function->name, "kv_append_f32_8") == 0) {
    /* Row 2 of each of 2 heads of 3 rows of 4 (Inputs/kv-append). */
    float *update = argument(params, 0), *appended = argument(params, 1);
    for (int i = 0; i < 8; ++i)
      appended[i + 8 * (i / 4) + 8] = update[i];
  } else {
    float *t = argument(params, 0), *u = argument(params, 1);
    for (int i = 0; i < 8; ++i)
      u[i] = 2 * t[i];
  }
  eventClock += 500000;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamCreate(CUstream *stream, unsigned int flags) {
  (void)flags;
  *stream = (CUstream)(uintptr_t)0x3000;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamDestroy(CUstream stream) {
  (void)stream;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamSynchronize(CUstream stream) {
  (void)stream;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventCreate(CUevent *event, unsigned int flags) {
  (void)flags;
  *event = calloc(1, sizeof(struct CUevent_st));
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventRecord(CUevent event, CUstream stream) {
  (void)stream;
  event->time = eventClock;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventElapsedTime(float *milliseconds, CUevent start,
                                    CUevent end) {
  *milliseconds = (float)((double)(end->time - start->time) / 1e6);
  return CUDA_SUCCESS;
}

/* Copies above 64 MiB copy only their first 64 MiB: --calibrate's 1 GiB copy
 * is timed, its bytes never checked, and whole copies would take seconds. */
CUresult CUDAAPI cuMemcpyDtoDAsync(CUdeviceptr destination, CUdeviceptr source,
                                   size_t bytes, CUstream stream) {
  (void)stream;
  size_t limit = (size_t)64 << 20;
  memmove((void *)(uintptr_t)destination, (const void *)(uintptr_t)source,
          bytes < limit ? bytes : limit);
  eventClock += (unsigned long long)(2.0 * (double)bytes / 2800.0);
  return CUDA_SUCCESS;
}

#ifndef FAKE_CUDA_NO_GRAPHS
struct CUgraph_st {
  unsigned long long launches;
};
struct CUgraphExec_st {
  unsigned long long launches;
};

CUresult CUDAAPI cuStreamBeginCapture(CUstream stream,
                                      CUstreamCaptureMode mode) {
  (void)stream, (void)mode;
  if (capturing)
    return CUDA_ERROR_ILLEGAL_STATE;
  capturing = 1;
  capturedLaunches = 0;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamEndCapture(CUstream stream, CUgraph *graph) {
  (void)stream;
  if (!capturing)
    return CUDA_ERROR_ILLEGAL_STATE;
  capturing = 0;
  *graph = calloc(1, sizeof(struct CUgraph_st));
  (*graph)->launches = capturedLaunches;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphInstantiate(CUgraphExec *exec, CUgraph graph,
                                    unsigned long long flags) {
  (void)flags;
  *exec = calloc(1, sizeof(struct CUgraphExec_st));
  (*exec)->launches = graph->launches;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphLaunch(CUgraphExec exec, CUstream stream) {
  (void)stream;
  eventClock += 1000 * exec->launches;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphExecDestroy(CUgraphExec exec) {
  free(exec);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphDestroy(CUgraph graph) {
  free(graph);
  return CUDA_SUCCESS;
}
#endif

CUresult CUDAAPI cuEventDestroy(CUevent event) {
  free(event);
  return CUDA_SUCCESS;
}

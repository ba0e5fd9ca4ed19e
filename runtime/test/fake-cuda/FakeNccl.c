// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

/*===- FakeNccl.c - A host stand-in for libnccl.so.2 ----------------------===//
 *
 * Together with FakeCuda.c (device pointers are host pointers) it runs the
 * all_reduce steps of runtime/test/Inputs/all-reduce* on machines without a
 * GPU or NCCL, with NCCL's C ABI declared here as memwall-run declares it.
 * Every rank of a run draws the same inputs, so the sum over N ranks is N
 * times the local input: that is what ncclAllReduce computes (f32 and bf16;
 * f16 only over one rank), and no data moves between processes. What it
 * checks is memwall-run's side of the contract: the communicator is made
 * while a context is retained, from an id rank 0's ncclGetUniqueId made
 * (other ranks read it from MEMWALL_NCCL_ID_FILE); the collective runs on a
 * stream, not the legacy default one; and every communicator is destroyed
 * before its context is released and before the process exits (otherwise
 * the process exits 70, saying which).
 *
 * Knobs (environment): FAKE_NCCL_INIT_ERROR=1 makes ncclCommInitRank fail
 * (ncclSystemError); FAKE_NCCL_VERSION replaces the version code 22703.
 * A communicator of more than one rank needs FAKE_NCCL_JOIN_LOG=FILE: each
 * rank appends "rank R of N: ID" to it and, as NCCL's bootstrap does, waits
 * there for the others.
 *
 *===----------------------------------------------------------------------===*/

#define _POSIX_C_SOURCE 200809L /* nanosleep */

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef int ncclResult_t;
enum {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
};
enum { ncclFloat16 = 6, ncclFloat32 = 7, ncclBfloat16 = 9 };
enum { ncclSum = 0 };
typedef struct {
  char internal[128];
} ncclUniqueId;

#define FAKE_NCCL_ID_MAGIC "FAKE-NCCL-ID "
#define FAKE_NCCL_COMM_MAGIC 0x6d6d6f436c63634eULL

typedef struct ncclComm {
  unsigned long long magic;
  int nranks, rank;
} * ncclComm_t;

static int liveComms = 0;
static char lastError[256] = "";

/* FakeCuda.c's state, in the libcuda.so.1 memwall-run has loaded. */
static void *driverSymbol(const char *name) {
  void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  return driver ? dlsym(driver, name) : NULL;
}

static int contextRetained(void) {
  int (*retained)(void) = NULL;
  *(void **)&retained = driverSymbol("fakeCudaContextRetained");
  return retained && retained();
}

static void advanceClock(unsigned long long nanoseconds) {
  void (*advance)(unsigned long long) = NULL;
  *(void **)&advance = driverSymbol("fakeCudaAdvanceClock");
  if (advance)
    advance(nanoseconds);
}

static ncclResult_t fail(ncclResult_t result, const char *message) {
  snprintf(lastError, sizeof(lastError), "fake: %s", message);
  return result;
}

static void checkAllDestroyed(void) {
  if (liveComms > 0) {
    fprintf(stderr, "FakeNccl: %d communicator(s) never destroyed\n",
            liveComms);
    _exit(70);
  }
}

ncclResult_t ncclGetVersion(int *version) {
  const char *forced = getenv("FAKE_NCCL_VERSION");
  *version = forced ? atoi(forced) : 22703;
  return ncclSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
  memset(id, 0, sizeof(*id));
  snprintf(id->internal, sizeof(id->internal), FAKE_NCCL_ID_MAGIC "%ld",
           (long)getpid());
  return ncclSuccess;
}

/* Like NCCL's bootstrap, returns once all `nranks` ranks have joined with
 * `id`: each appends a line to FAKE_NCCL_JOIN_LOG, then waits (up to 30 s)
 * for the file to hold `nranks` lines of this id. */
static int joinAll(const ncclUniqueId *id, int nranks, int rank) {
  const char *path = getenv("FAKE_NCCL_JOIN_LOG");
  if (!path)
    return 0;
  char line[256];
  snprintf(line, sizeof(line), "of %d: %.*s\n", nranks,
           (int)sizeof(id->internal), id->internal);
  FILE *log = fopen(path, "a");
  if (!log)
    return 0;
  fprintf(log, "rank %d %s", rank, line);
  fclose(log);
  for (int waited = 0; waited < 3000; ++waited) {
    int joined = 0;
    char read[300];
    if ((log = fopen(path, "r"))) {
      while (fgets(read, sizeof(read), log))
        joined += strstr(read, line) != NULL;
      fclose(log);
    }
    if (joined >= nranks)
      return 1;
    struct timespec tenMilliseconds = {0, 10000000};
    nanosleep(&tenMilliseconds, NULL);
  }
  return 0;
}

ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id,
                              int rank) {
  *comm = NULL;
  if (getenv("FAKE_NCCL_INIT_ERROR"))
    return fail(ncclSystemError, "cannot connect to the root rank");
  if (!contextRetained())
    return fail(ncclUnhandledCudaError, "no CUDA context is current");
  if (nranks < 1 || rank < 0 || rank >= nranks)
    return fail(ncclInvalidArgument, "rank outside the communicator");
  if (strncmp(id.internal, FAKE_NCCL_ID_MAGIC, strlen(FAKE_NCCL_ID_MAGIC)) != 0)
    return fail(ncclInvalidArgument, "the unique id is not one "
                                     "ncclGetUniqueId made");
  if (nranks > 1 && !joinAll(&id, nranks, rank))
    return fail(ncclSystemError, "the other ranks never joined "
                                 "(FAKE_NCCL_JOIN_LOG)");
  struct ncclComm *made = calloc(1, sizeof(struct ncclComm));
  made->magic = FAKE_NCCL_COMM_MAGIC;
  made->nranks = nranks;
  made->rank = rank;
  static int checkAtExit = 0;
  if (!checkAtExit)
    atexit(checkAllDestroyed);
  checkAtExit = 1;
  ++liveComms;
  *comm = made;
  return ncclSuccess;
}

static float bf16ToFloat(uint16_t bits) {
  uint32_t widened = (uint32_t)bits << 16;
  float value;
  memcpy(&value, &widened, sizeof(value));
  return value;
}

static uint16_t floatToBf16(float value) {
  uint32_t bits;
  memcpy(&bits, &value, sizeof(bits));
  bits += 0x7fff + ((bits >> 16) & 1); /* round to nearest even */
  return (uint16_t)(bits >> 16);
}

ncclResult_t ncclAllReduce(const void *send, void *receive, size_t count,
                           int type, int op, ncclComm_t comm, void *stream) {
  if (!comm || comm->magic != FAKE_NCCL_COMM_MAGIC)
    return fail(ncclInvalidArgument, "not a live communicator");
  if (!stream)
    return fail(ncclInvalidArgument, "the legacy default stream");
  if (op != ncclSum)
    return fail(ncclInvalidArgument, "not ncclSum");
  size_t width = type == ncclFloat32 ? 4 : 2;
  if (type != ncclFloat32 && type != ncclBfloat16 && type != ncclFloat16)
    return fail(ncclInvalidArgument, "not f32, bf16 or f16");
  if (comm->nranks == 1) {
    memmove(receive, send, count * width);
  } else if (type == ncclFloat32) {
    for (size_t i = 0; i < count; ++i)
      ((float *)receive)[i] = (float)comm->nranks * ((const float *)send)[i];
  } else if (type == ncclBfloat16) {
    for (size_t i = 0; i < count; ++i)
      ((uint16_t *)receive)[i] = floatToBf16(
          (float)comm->nranks * bf16ToFloat(((const uint16_t *)send)[i]));
  } else {
    return fail(ncclInvalidUsage, "the fake sums f16 over one rank only");
  }
  advanceClock(20000);
  return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  if (!comm || comm->magic != FAKE_NCCL_COMM_MAGIC)
    return fail(ncclInvalidArgument, "not a live communicator");
  if (!contextRetained()) {
    fprintf(stderr, "FakeNccl: communicator destroyed after its context was "
                    "released\n");
    _exit(70);
  }
  comm->magic = 0;
  free(comm);
  --liveComms;
  return ncclSuccess;
}

const char *ncclGetErrorString(ncclResult_t result) {
  switch (result) {
  case ncclSuccess:
    return "no error";
  case ncclUnhandledCudaError:
    return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
  case ncclSystemError:
    return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
  case ncclInternalError:
    return "internal error - please report this issue to the NCCL developers";
  case ncclInvalidArgument:
    return "invalid argument (run with NCCL_DEBUG=WARN for details)";
  case ncclInvalidUsage:
    return "invalid usage (run with NCCL_DEBUG=WARN for details)";
  default:
    return "unknown result code";
  }
}

const char *ncclGetLastError(ncclComm_t comm) {
  (void)comm;
  return lastError;
}

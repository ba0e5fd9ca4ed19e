//===- SimtInterpreter.cpp - CPU interpreter for GPU kernel IR ------------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// All threads of a block run in lockstep over the structured IR: every SSA
// value holds one entry per thread, and an active mask handles divergence.
// Lockstep order makes intra-block races deterministic, so shared memory is
// tracked per byte (barrier epoch, last writer, readers, in-flight async copy)
// to turn a missing barrier or wait into an error instead of silently
// producing the right answer.
//
// Hopper's asynchronous units are modelled at the level of the nvgpu ops a
// kernel holds before lowering: a TMA load lands at the latest moment the
// program allows (when a thread blocks on its mbarrier), and a warpgroup MMA
// reads shared memory through its matrix descriptors exactly as the MLIR 22
// lowering addresses it, so swizzle or descriptor mistakes give wrong
// numbers here as they would on the GPU.
//
// Warp-specialized kernels cannot run in lockstep: a producer warpgroup
// waits on mbarriers its consumers arrive at, and the other way round. An
// scf.if whose condition splits the block at warpgroup granularity and whose
// branches may wait on an mbarrier therefore runs its else branch as a
// separate "runner" (an OS thread). Exactly one runner executes at a time;
// a runner whose mbarrier wait cannot complete hands over to the next one,
// so the interleaving is deterministic, and when every runner waits with no
// op executed in between the kernel has deadlocked (reported as such). An
// mbarrier phase completed by arrivals of several threads orders their
// earlier shared memory accesses before the waiters' later ones, as a
// barrier among them would (the race checks treat it as an epoch boundary).
//
//===----------------------------------------------------------------------===//

#include "memwall/Simulator/SimtInterpreter.h"

#include "memwall/Dialect/MemWall/IR/MemWall.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <limits>
#include <mutex>
#include <optional>
#include <thread>

using namespace mlir;

namespace memwall::simt {

//===----------------------------------------------------------------------===//
// Float conversions
//===----------------------------------------------------------------------===//

uint16_t floatToBf16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  if (std::isnan(value))
    return static_cast<uint16_t>((bits >> 16) | 0x40); // keep it a quiet NaN
  uint32_t lsb = (bits >> 16) & 1;
  bits += 0x7FFF + lsb; // round to nearest, ties to even
  return static_cast<uint16_t>(bits >> 16);
}

float bf16ToFloat(uint16_t bits) {
  uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float value;
  std::memcpy(&value, &wide, 4);
  return value;
}

uint16_t floatToF16(float value) {
  llvm::APFloat f(value);
  bool losesInfo;
  f.convert(llvm::APFloat::IEEEhalf(), llvm::APFloat::rmNearestTiesToEven,
            &losesInfo);
  return static_cast<uint16_t>(f.bitcastToAPInt().getZExtValue());
}

float f16ToFloat(uint16_t bits) {
  llvm::APFloat f(llvm::APFloat::IEEEhalf(), llvm::APInt(16, bits));
  bool losesInfo;
  f.convert(llvm::APFloat::IEEEsingle(), llvm::APFloat::rmNearestTiesToEven,
            &losesInfo);
  return f.convertToFloat();
}

//===----------------------------------------------------------------------===//
// Context and parsing helpers
//===----------------------------------------------------------------------===//

std::unique_ptr<MLIRContext> createContext() {
  DialectRegistry registry;
  registry.insert<gpu::GPUDialect, nvgpu::NVGPUDialect, NVVM::NVVMDialect,
                  LLVM::LLVMDialect, arith::ArithDialect, math::MathDialect,
                  scf::SCFDialect, memref::MemRefDialect, vector::VectorDialect,
                  MemWallDialect>();
  auto context = std::make_unique<MLIRContext>(registry);
  context->loadAllAvailableDialects();
  return context;
}

OwningOpRef<ModuleOp> parseModule(MLIRContext &context, llvm::StringRef source,
                                  llvm::StringRef fileName) {
  return parseSourceString<ModuleOp>(source, ParserConfig(&context), fileName);
}

gpu::GPUFuncOp findKernel(ModuleOp module, llvm::StringRef name) {
  gpu::GPUFuncOp found;
  module.walk([&](gpu::GPUFuncOp func) {
    if (func.getName() == name)
      found = func;
  });
  return found;
}

namespace {

constexpr int64_t kWarpSize = 32;
// Fresh shared memory holds this pattern: as bf16/f16/f32 it reads as a
// large negative number, never as a plausible zero.
constexpr uint8_t kGarbage = 0xCD;

//===----------------------------------------------------------------------===//
// Bit-level helpers
//===----------------------------------------------------------------------===//

unsigned bitWidth(Type type) {
  if (type.isIndex())
    return 64;
  return type.getIntOrFloatBitWidth();
}

int64_t byteWidth(Type type) { return (bitWidth(type) + 7) / 8; }

uint64_t truncBits(uint64_t value, unsigned width) {
  return width >= 64 ? value : value & ((uint64_t(1) << width) - 1);
}

int64_t signExtend(uint64_t value, unsigned width) {
  if (width >= 64)
    return static_cast<int64_t>(value);
  unsigned shift = 64 - width;
  return static_cast<int64_t>(value << shift) >> shift;
}

bool isSupportedFloat(Type type) {
  return type.isF32() || type.isF64() || type.isBF16() || type.isF16();
}

/// The fp8 formats kernels hold: only converted (arith.extf/truncf, which
/// memwall-expand-fp8-conversions lowers to integer arithmetic) and read by
/// wgmma, never computed on.
bool isFp8(Type type) { return isa<Float8E4M3FNType, Float8E5M2Type>(type); }

bool isScalar(Type type) { return type.isIntOrIndexOrFloat(); }

constexpr int64_t kWarpgroupSize = 128;

/// Number of per-thread entries a value of `type` occupies: vectors are
/// flattened row-major, LLVM structs of scalars member by member and
/// warpgroup accumulators as the registers each thread of the warpgroup
/// owns.
unsigned numEntries(Type type) {
  if (auto vec = dyn_cast<VectorType>(type))
    return vec.getNumElements();
  if (auto acc = dyn_cast<nvgpu::WarpgroupAccumulatorType>(type))
    return acc.getFragmented().getNumElements() / kWarpgroupSize;
  if (auto st = dyn_cast<LLVM::LLVMStructType>(type))
    return st.getBody().size();
  return 1;
}

double floatValue(Type type, uint64_t bits) {
  if (type.isF32()) {
    uint32_t b = static_cast<uint32_t>(bits);
    float f;
    std::memcpy(&f, &b, 4);
    return f;
  }
  if (type.isF64()) {
    double d;
    std::memcpy(&d, &bits, 8);
    return d;
  }
  if (type.isBF16())
    return bf16ToFloat(static_cast<uint16_t>(bits));
  if (isFp8(type)) {
    // Every byte decoded once per format (wgmma reads fp8 element by
    // element).
    auto table = [](const llvm::fltSemantics &semantics) {
      std::array<double, 256> values;
      for (unsigned byte = 0; byte < 256; ++byte)
        values[byte] =
            llvm::APFloat(semantics, llvm::APInt(8, byte)).convertToDouble();
      return values;
    };
    static const std::array<double, 256> e4m3 =
        table(llvm::APFloat::Float8E4M3FN());
    static const std::array<double, 256> e5m2 =
        table(llvm::APFloat::Float8E5M2());
    return (isa<Float8E4M3FNType>(type) ? e4m3 : e5m2)[bits & 0xFF];
  }
  return f16ToFloat(static_cast<uint16_t>(bits));
}

// Narrower types go through float: values computed in float precision and
// then narrowed match what the GPU does for f32 math followed by truncf.
uint64_t floatBits(Type type, double value) {
  if (type.isF64()) {
    uint64_t b;
    std::memcpy(&b, &value, 8);
    return b;
  }
  float f = static_cast<float>(value);
  if (type.isF32()) {
    uint32_t b;
    std::memcpy(&b, &f, 4);
    return b;
  }
  if (type.isBF16())
    return floatToBf16(f);
  if (isFp8(type)) {
    // Round to nearest even, saturating to the largest finite value (PTX's
    // cvt.rn.satfinite, and memwall.cast's definition); NaN stays NaN.
    const llvm::fltSemantics &semantics =
        cast<FloatType>(type).getFloatSemantics();
    llvm::APFloat largest = llvm::APFloat::getLargest(semantics);
    double limit = largest.convertToDouble();
    llvm::APFloat x(std::isnan(f) ? f : std::clamp<float>(f, -limit, limit));
    bool inexact;
    x.convert(semantics, llvm::APFloat::rmNearestTiesToEven, &inexact);
    return x.bitcastToAPInt().getZExtValue();
  }
  return floatToF16(f);
}

uint64_t loadBytes(const uint8_t *p, int64_t n) {
  uint64_t v = 0;
  for (int64_t i = n - 1; i >= 0; --i)
    v = (v << 8) | p[i];
  return v;
}

void storeBytes(uint8_t *p, int64_t n, uint64_t v) {
  for (int64_t i = 0; i < n; ++i, v >>= 8)
    p[i] = static_cast<uint8_t>(v);
}

//===----------------------------------------------------------------------===//
// Interpreter state
//===----------------------------------------------------------------------===//

/// One SSA value: `width` element bit patterns per thread of the block.
struct Slot {
  unsigned width = 1;
  std::vector<uint64_t> bits;
  // For a warpgroup accumulator: the wgmma group that produces it (0: none),
  // so reading it before its wait.group is an error.
  uint64_t wgmmaGroup = 0;
  Slot() = default;
  Slot(unsigned width, int64_t threads)
      : width(width), bits(static_cast<size_t>(width) * threads, 0) {}
  uint64_t &at(int64_t t, unsigned e) { return bits[t * width + e]; }
  uint64_t at(int64_t t, unsigned e) const { return bits[t * width + e]; }
};

/// Race-detection state of one shared memory byte. Epochs start at 1, so 0
/// means "never".
struct ByteState {
  uint32_t writeEpoch = 0;
  int32_t writer = -1; // last writer; -1: never written
  uint32_t readEpoch = 0;
  int32_t reader = -1;       // a reader in readEpoch
  int32_t reader2 = -1;      // another, different reader in readEpoch
  int32_t pendingOwner = -1; // thread whose async copy targets the byte
  bool pendingIsTma = false; // that copy is a TMA load (else cp.async)
};

/// ByteState::writer of bytes a TMA load delivered: the async proxy wrote
/// them, ordered before every thread by the mbarrier wait that landed them.
constexpr int32_t kAsyncProxyWriter = -2;

struct Buffer {
  std::string name;
  uint8_t *data = nullptr;
  int64_t size = 0;
  bool shared = false;
  std::vector<uint8_t> storage; // shared buffers own their bytes
  std::vector<ByteState> state;
  /// Global buffers: per byte, the block (linear index + 1) of this launch
  /// that wrote it, 0 if none; sized at the first write.
  std::vector<int64_t> writer;
};

/// A memref is uniform across the block: a view of a buffer.
struct MemRefVal {
  unsigned buffer = 0;
  int64_t byteOffset = 0;
  SmallVector<int64_t> shape;
  Type elemType;
  int64_t elemBytes = 1;
};

struct PendingCopy {
  unsigned srcBuf, dstBuf;
  int64_t srcOff, srcBytes, dstOff, dstBytes;
};

enum class Access { Read, Write, AsyncIssue, TmaIssue };

/// A `!nvgpu.tensormap.descriptor` kernel argument.
struct TensorMapVal {
  unsigned buffer = 0;
  SmallVector<int64_t> shape, strides; // elements, outermost first
  nvgpu::TensorMapDescriptorType type;
};

/// A TMA load in flight: its box, already read from global memory and
/// swizzled, waiting to land in shared memory.
struct TmaTransfer {
  unsigned dstBuf;
  int64_t bytes;
  // Destination byte offset of each 16-byte chunk, and the chunk.
  std::vector<std::pair<int64_t, std::array<uint8_t, 16>>> chunks;
};

/// One mbarrier object: PTX's current phase, pending arrival count and
/// transaction count, plus the TMA loads that will complete transactions.
struct MBarrier {
  bool initialized = false;
  int64_t expected = 0, pending = 0, txCount = 0;
  uint64_t phase = 0;
  std::vector<TmaTransfer> inFlight;
};

/// A wgmma shared memory matrix descriptor, decoded: start, leading and
/// stride byte offsets, and the swizzle width in bytes (0: none).
struct WgmmaDesc {
  unsigned buffer = 0;
  int64_t start = 0, leadingBytes = 0, strideBytes = 0, swizzleBytes = 0;
};

/// The runners of one block (see the file comment): runner 0 is the
/// calling thread; spawn() adds one per warpgroup-divergent branch. The
/// runner holding `current` executes; everything else waits on `changed`.
class Runners {
public:
  ~Runners() {
    for (std::thread &thread : threads)
      if (thread.joinable())
        thread.join();
    for (State &state : states)
      llvm::consumeError(std::move(state.error));
  }

  /// Starts `body` on a new runner, which first waits for its turn; returns
  /// its id. The body's error is kept for join().
  int spawn(std::function<llvm::Error()> body) {
    std::unique_lock<std::mutex> lock(mutex);
    int id = static_cast<int>(states.size());
    states.emplace_back();
    threads.emplace_back([this, id, body = std::move(body)] {
      {
        std::unique_lock<std::mutex> lock(mutex);
        changed.wait(lock, [&] { return current == id; });
      }
      llvm::Error error = body();
      if (error)
        markFailed(id);
      std::unique_lock<std::mutex> lock(mutex);
      states[id].error = std::move(error);
      states[id].finished = true;
      passOn(id);
    });
    return id;
  }

  /// Hands over to the next unfinished runner and waits for the turn to
  /// come back; false (at once) when no other runner is unfinished.
  bool yield() {
    std::unique_lock<std::mutex> lock(mutex);
    int self = current;
    if (!passOn(self))
      return false;
    changed.wait(lock, [&] { return current == self; });
    return true;
  }

  /// Waits (yielding) until runner `id` finished; returns its error.
  llvm::Error join(int id) {
    while (true) {
      {
        std::unique_lock<std::mutex> lock(mutex);
        if (states[id].finished)
          break;
      }
      yield();
    }
    threads[id - 1].join();
    std::unique_lock<std::mutex> lock(mutex);
    return std::move(states[id].error);
  }

  /// The runner executing now.
  int self() {
    std::unique_lock<std::mutex> lock(mutex);
    return current;
  }

  /// Runner `id` failed: the others stop at their next wait.
  void markFailed(int id) {
    if (!aborted.exchange(true))
      firstFailed = id;
  }

  std::atomic<bool> aborted{false};
  /// The runner whose error is the cause when several fail.
  std::atomic<int> firstFailed{-1};

private:
  struct State {
    bool finished = false;
    llvm::Error error = llvm::Error::success();
  };

  /// Gives the turn to the first unfinished runner after `self` (wrapping
  /// around, itself excluded); false when there is none. Holds `mutex`.
  bool passOn(int self) {
    int count = static_cast<int>(states.size());
    for (int step = 1; step < count; ++step) {
      int next = (self + step) % count;
      if (!states[next].finished) {
        current = next;
        changed.notify_all();
        return true;
      }
    }
    return false;
  }

  std::mutex mutex;
  std::condition_variable changed;
  int current = 0;
  std::deque<State> states = std::deque<State>(1);
  std::deque<std::thread> threads;
};

class Interpreter;

/// The CTAs of one thread-block cluster (nvvm.cluster_dim) running
/// together, each on a runner of `runners` (one at a time, as a
/// warp-specialized block's warpgroups), with the cluster barrier's
/// arrivals per CTA and, per CTA and phase, its shared-memory epoch when it
/// arrived: a read of another CTA's shared memory (ld.shared::cluster) must
/// see bytes that CTA wrote before an arrival this CTA has waited on.
struct ClusterState {
  std::vector<Interpreter *> ctas;
  Runners runners;
  std::vector<uint64_t> arrived, waited;
  std::vector<std::vector<uint32_t>> epochAtArrive;
  /// Whose shared memory exists: started (its block set up) and not exited.
  std::vector<bool> started, exited;
  /// Ops executed by every CTA of the cluster: a waiter that lets all the
  /// others go without this changing is deadlocked.
  uint64_t progress = 0;
};

class Interpreter {
public:
  Interpreter(gpu::GPUFuncOp func, const LaunchConfig &config)
      : func(func), config(config) {}

  llvm::Error run(ArrayRef<MutableArrayRef<uint8_t>> args);

private:
  /// Binds the kernel arguments (before any block runs).
  llvm::Error setUp(ArrayRef<MutableArrayRef<uint8_t>> args);
  /// Runs every cluster of `clusterDims` CTAs together.
  llvm::Error runClusters(ArrayRef<MutableArrayRef<uint8_t>> args,
                          const std::array<int64_t, 3> &clusterDims);
  // Thread-block clusters: the barrier, and loads of (distributed) shared
  // memory through LLVM pointers (a shared address is a byte offset into
  // the dynamic shared memory; mapa adds the CTA's rank above bit 32).
  llvm::Error execClusterBarrier(Operation *op, const llvm::BitVector &mask);
  llvm::Error execSharedLoad(LLVM::LoadOp op, const llvm::BitVector &mask);

  llvm::Error addTensorMapArg(unsigned index, Value arg,
                              nvgpu::TensorMapDescriptorType type,
                              MutableArrayRef<uint8_t> storage);
  llvm::Error fail(Operation *op, const Twine &message);
  llvm::Error runBlock();
  llvm::Error execBlock(Block &block, const llvm::BitVector &mask,
                        SmallVectorImpl<Value> *yielded);
  llvm::Error execOp(Operation *op, const llvm::BitVector &mask);
  llvm::Error dispatchOp(Operation *op, const llvm::BitVector &mask);

  // Value access.
  const Slot *lookup(Value v) const {
    auto it = slots.find(v);
    return it == slots.end() ? nullptr : &it->second;
  }
  llvm::Expected<const Slot *> get(Operation *op, Value v);
  llvm::Expected<MemRefVal> getMemRef(Operation *op, Value v);
  llvm::Expected<SmallVector<int64_t>> indicesOf(Operation *op,
                                                 ValueRange indices, int64_t t);
  llvm::Expected<int64_t> uniformInt(Operation *op, Value v,
                                     const llvm::BitVector &mask);
  void setUniform(Value v, uint64_t bits);

  // Memory.
  llvm::Expected<int64_t> locate(Operation *op, const MemRefVal &m,
                                 ArrayRef<int64_t> indices, int64_t count,
                                 int64_t t);
  llvm::Error checkGlobalWrite(Operation *op, Buffer &buf, int64_t off,
                               int64_t n, Access kind);
  /// The race checks of one access: shared memory per byte and thread,
  /// global stores per byte and block.
  llvm::Error checkAccess(Operation *op, unsigned buf, int64_t off, int64_t n,
                          int64_t t, Access kind);
  llvm::Error checkFullWarps(Operation *op, const llvm::BitVector &mask);
  void completeGroup(int64_t t, std::vector<PendingCopy> &group);

  // Op families.
  llvm::Error mapElements(
      Operation *op, const llvm::BitVector &mask,
      llvm::function_ref<std::optional<uint64_t>(ArrayRef<uint64_t>)> fn,
      StringRef failure = "invalid operands");
  llvm::Error execConstant(arith::ConstantOp op, const llvm::BitVector &mask);
  llvm::Error execArith(Operation *op, const llvm::BitVector &mask,
                        bool &handled);
  llvm::Error execFor(scf::ForOp op, const llvm::BitVector &mask);
  llvm::Error execIf(scf::IfOp op, const llvm::BitVector &mask);
  llvm::Error execLoadStore(Operation *op, Value memref, ValueRange indices,
                            Value stored, Value loaded, Type valueType,
                            const llvm::BitVector &mask);
  llvm::Error execAtomicRMW(memref::AtomicRMWOp op,
                            const llvm::BitVector &mask);
  llvm::Error execView(memref::ViewOp op, const llvm::BitVector &mask);
  llvm::Error execVector(Operation *op, const llvm::BitVector &mask,
                         bool &handled);
  llvm::Error execShuffle(gpu::ShuffleOp op, const llvm::BitVector &mask);
  llvm::Error execLdMatrix(nvgpu::LdMatrixOp op, const llvm::BitVector &mask);
  llvm::Error execAsyncCopy(nvgpu::DeviceAsyncCopyOp op,
                            const llvm::BitVector &mask);
  llvm::Error execMma(NVVM::MmaOp op, const llvm::BitVector &mask);

  // Hopper: mbarrier, TMA, warpgroup MMA.
  llvm::Error execHopper(Operation *op, const llvm::BitVector &mask,
                         bool &handled);
  llvm::Expected<MBarrier *> barrierOf(Operation *op, Value group, Value id,
                                       int64_t t);
  llvm::Error arrive(Operation *op, MBarrier &barrier, int64_t count,
                     int64_t t);
  void deliver(MBarrier &barrier);
  llvm::Error execTryWait(nvgpu::MBarrierTryWaitParityOp op,
                          const llvm::BitVector &mask);
  llvm::Expected<const TensorMapVal *> tensorMapOf(Operation *op, Value v);
  llvm::Error execTmaLoad(nvgpu::TmaAsyncLoadOp op,
                          const llvm::BitVector &mask);
  llvm::Error execTmaStore(nvgpu::TmaAsyncStoreOp op,
                           const llvm::BitVector &mask);
  llvm::Error execWgmmaDescriptor(nvgpu::WarpgroupGenerateDescriptorOp op,
                                  const llvm::BitVector &mask);
  llvm::Error checkFullWarpgroups(Operation *op, const llvm::BitVector &mask);
  llvm::Error execWgmma(nvgpu::WarpgroupMmaOp op, const llvm::BitVector &mask);
  llvm::Error execWarpgroupAccumulate(WarpgroupAccumulateOp op,
                                      const llvm::BitVector &mask);
  /// Fails unless the wgmma group producing `acc` has completed in every
  /// warpgroup of `mask`.
  llvm::Error checkAccumulatorCompleted(Operation *op, const Slot &acc,
                                        const llvm::BitVector &mask);
  llvm::Error execWgmmaStore(nvgpu::WarpgroupMmaStoreOp op,
                             const llvm::BitVector &mask);

  gpu::GPUFuncOp func;
  LaunchConfig config;
  int64_t numThreads = 0, numWarpgroups = 0;
  std::array<int64_t, 3> blockId{0, 0, 0};
  std::vector<Buffer> buffers;
  unsigned numGlobal = 0;
  std::vector<std::pair<Value, MemRefVal>> argMemRefs;
  int dynamicShared = -1;
  uint32_t epoch = 1;
  llvm::DenseMap<Value, Slot> slots;
  llvm::DenseMap<Value, MemRefVal> memrefs;
  std::vector<std::vector<PendingCopy>> uncommitted;
  std::vector<std::deque<std::vector<PendingCopy>>> groups;
  llvm::DenseMap<Value, TensorMapVal> tensorMaps;
  llvm::DenseMap<Value, unsigned> barrierGroups; // into `mbarriers`
  std::vector<std::vector<MBarrier>> mbarriers;
  /// Per warpgroup (the same for all where the matrix view is uniform).
  llvm::DenseMap<Value, SmallVector<WgmmaDesc, 4>> wgmmaDescs;
  /// memref.view results whose byte shift differs between warpgroups (one
  /// view per warpgroup; `memrefs` does not hold them): a warp-specialized
  /// kernel's consumers address their own rows. Only warpgroup ops take them.
  llvm::DenseMap<Value, SmallVector<MemRefVal, 4>> warpgroupMemrefs;
  /// The view of `v` warpgroup `warpgroup` sees.
  llvm::Expected<MemRefVal> getWarpgroupMemRef(Operation *op, Value v,
                                               int64_t warpgroup);
  /// Per warpgroup: wgmma groups committed and known complete.
  std::vector<uint64_t> wgmmaCommitted, wgmmaCompleted;
  /// Shared memory an uncompleted wgmma group reads (the hardware reads it
  /// until wgmma.wait_group retires the group): bytes lo..hi of a buffer.
  struct WgmmaRead {
    int64_t warpgroup;
    uint64_t group;
    unsigned buffer;
    int64_t lo, hi;
  };
  std::vector<WgmmaRead> wgmmaReads;
  /// Fails when a write to bytes off..off+n of `buffer` lands on what an
  /// uncompleted wgmma group reads.
  llvm::Error checkWgmmaReads(Operation *op, unsigned buffer, int64_t off,
                              int64_t n, int64_t t);
  /// Whether an scf.if's branches may wait on an mbarrier (per kernel).
  llvm::DenseMap<Operation *, bool> mayWait;
  /// Ops executed so far, by every runner: a runner that waited a whole
  /// round without it changing is deadlocked.
  uint64_t progress = 0;
  /// The op being executed completed an mbarrier phase by arrivals.
  bool released = false;
  std::unique_ptr<Runners> runners;
  /// The cluster this block runs in and its rank there (null: no cluster).
  ClusterState *cluster = nullptr;
  int64_t clusterRank = 0;

  /// Marks wgmma groups complete down to `allowed` outstanding in every
  /// warpgroup with a thread in `mask`.
  void completeWgmmaGroups(const llvm::BitVector &mask, uint64_t allowed);
  /// Whether `then` and `otherwise` split the block along warpgroups.
  bool splitsWarpgroups(const llvm::BitVector &then,
                        const llvm::BitVector &otherwise) const;
};

llvm::Error Interpreter::fail(Operation *op, const Twine &message) {
  std::string text;
  llvm::raw_string_ostream os(text);
  op->getLoc().print(os);
  os << ": '" << op->getName() << "' in block (" << blockId[0] << ", "
     << blockId[1] << ", " << blockId[2] << "): " << message;
  return llvm::createStringError(llvm::inconvertibleErrorCode(), text);
}

llvm::Expected<const Slot *> Interpreter::get(Operation *op, Value v) {
  if (const Slot *s = lookup(v))
    return s;
  return fail(op, "operand of type " + llvm::formatv("{0}", v.getType()).str() +
                      " has no per-thread value (unsupported producer)");
}

llvm::Expected<MemRefVal> Interpreter::getMemRef(Operation *op, Value v) {
  auto it = memrefs.find(v);
  if (it != memrefs.end())
    return it->second;
  if (warpgroupMemrefs.count(v))
    return fail(op, "a view whose offset differs between warpgroups feeds "
                    "only warpgroup ops (nvgpu.warpgroup.generate.descriptor, "
                    "nvgpu.warpgroup.mma.store)");
  return fail(op, "memref operand does not come from a kernel argument, "
                  "workgroup attribution, dynamic shared memory or "
                  "memref.view");
}

llvm::Expected<MemRefVal>
Interpreter::getWarpgroupMemRef(Operation *op, Value v, int64_t warpgroup) {
  auto it = warpgroupMemrefs.find(v);
  if (it != warpgroupMemrefs.end())
    return it->second[warpgroup];
  return getMemRef(op, v);
}

llvm::Expected<SmallVector<int64_t>>
Interpreter::indicesOf(Operation *op, ValueRange indices, int64_t t) {
  SmallVector<int64_t> result;
  for (Value idx : indices) {
    auto s = get(op, idx);
    if (!s)
      return s.takeError();
    result.push_back(signExtend((*s)->at(t, 0), bitWidth(idx.getType())));
  }
  return result;
}

llvm::Expected<int64_t> Interpreter::uniformInt(Operation *op, Value v,
                                                const llvm::BitVector &mask) {
  auto s = get(op, v);
  if (!s)
    return s.takeError();
  unsigned w = bitWidth(v.getType());
  int first = mask.find_first();
  int64_t value = signExtend((*s)->at(first, 0), w);
  for (unsigned t : mask.set_bits()) {
    int64_t other = signExtend((*s)->at(t, 0), w);
    if (other != value)
      return fail(op, llvm::formatv("value must be uniform across active "
                                    "threads, but thread {0} has {1} and "
                                    "thread {2} has {3}",
                                    first, value, t, other));
  }
  return value;
}

void Interpreter::setUniform(Value v, uint64_t bits) {
  Slot s(1, numThreads);
  std::fill(s.bits.begin(), s.bits.end(), bits);
  slots[v] = std::move(s);
}

//===----------------------------------------------------------------------===//
// Launch
//===----------------------------------------------------------------------===//

llvm::Error Interpreter::run(ArrayRef<MutableArrayRef<uint8_t>> args) {
  if (llvm::Error e = setUp(args))
    return e;
  std::array<int64_t, 3> clusterDims{1, 1, 1};
  if (auto dims = func->getAttrOfType<DenseI32ArrayAttr>(
          NVVM::NVVMDialect::getClusterDimAttrName())) {
    if (dims.size() > 3)
      return fail(func, "nvvm.cluster_dim has more than 3 dimensions");
    for (auto [i, d] : llvm::enumerate(dims.asArrayRef())) {
      if (d <= 0 || config.grid[i] % d != 0)
        return fail(func, llvm::formatv("the grid's dimension {0} ({1}) is "
                                        "not a multiple of the cluster's ({2})",
                                        i, config.grid[i], d));
      clusterDims[i] = d;
    }
  }
  if (clusterDims[0] * clusterDims[1] * clusterDims[2] > 1)
    return runClusters(args, clusterDims);
  for (blockId[2] = 0; blockId[2] < config.grid[2]; ++blockId[2])
    for (blockId[1] = 0; blockId[1] < config.grid[1]; ++blockId[1])
      for (blockId[0] = 0; blockId[0] < config.grid[0]; ++blockId[0])
        if (llvm::Error e = runBlock())
          return e;
  return llvm::Error::success();
}

llvm::Error
Interpreter::runClusters(ArrayRef<MutableArrayRef<uint8_t>> args,
                         const std::array<int64_t, 3> &clusterDims) {
  int64_t size = clusterDims[0] * clusterDims[1] * clusterDims[2];
  std::vector<std::unique_ptr<Interpreter>> peers;
  for (int64_t r = 1; r < size; ++r) {
    peers.push_back(std::make_unique<Interpreter>(func, config));
    if (llvm::Error e = peers.back()->setUp(args))
      return e;
  }
  std::array<int64_t, 3> origin;
  for (origin[2] = 0; origin[2] < config.grid[2]; origin[2] += clusterDims[2])
    for (origin[1] = 0; origin[1] < config.grid[1]; origin[1] += clusterDims[1])
      for (origin[0] = 0; origin[0] < config.grid[0];
           origin[0] += clusterDims[0]) {
        ClusterState state;
        state.ctas.push_back(this);
        for (auto &peer : peers)
          state.ctas.push_back(peer.get());
        state.arrived.assign(size, 0);
        state.waited.assign(size, 0);
        state.epochAtArrive.assign(size, {});
        state.started.assign(size, false);
        state.exited.assign(size, false);
        // Rank r is (x, y, z) of the cluster, x fastest (%cluster_ctarank).
        for (auto [r, cta] : llvm::enumerate(state.ctas)) {
          int64_t rank = static_cast<int64_t>(r);
          cta->cluster = &state;
          cta->clusterRank = rank;
          cta->blockId = {origin[0] + rank % clusterDims[0],
                          origin[1] + rank / clusterDims[0] % clusterDims[1],
                          origin[2] + rank / (clusterDims[0] * clusterDims[1])};
        }
        SmallVector<int> ids;
        for (int64_t r = 1; r < size; ++r)
          ids.push_back(state.runners.spawn([&state, r]() -> llvm::Error {
            llvm::Error error = state.ctas[r]->runBlock();
            state.exited[r] = true;
            return error;
          }));
        llvm::Error error = runBlock();
        state.exited[0] = true;
        if (error)
          state.runners.markFailed(0);
        for (int id : ids) {
          llvm::Error other = state.runners.join(id);
          // The cause, not a wait another CTA's failure broke.
          if (other && (!error || state.runners.firstFailed == id))
            std::swap(error, other);
          llvm::consumeError(std::move(other));
        }
        for (Interpreter *cta : state.ctas)
          cta->cluster = nullptr;
        if (error)
          return error;
      }
  return llvm::Error::success();
}

llvm::Error Interpreter::setUp(ArrayRef<MutableArrayRef<uint8_t>> args) {
  Operation *fop = func.getOperation();
  if (!func.isKernel())
    return fail(fop, "function is not a kernel");
  numThreads = config.block[0] * config.block[1] * config.block[2];
  numWarpgroups = llvm::divideCeil(numThreads, kWarpgroupSize);
  mayWait.clear();
  for (int i = 0; i < 3; ++i)
    if (config.block[i] <= 0 || config.grid[i] <= 0)
      return fail(fop, "grid and block sizes must be positive");
  if (args.size() != func.getNumArguments())
    return fail(fop, llvm::formatv("kernel takes {0} arguments, {1} given",
                                   func.getNumArguments(), args.size()));

  // The body's leading block arguments are the kernel arguments; workgroup
  // attributions follow them.
  for (auto [i, arg] :
       llvm::enumerate(func.getArguments().take_front(args.size()))) {
    if (auto mapType =
            dyn_cast<nvgpu::TensorMapDescriptorType>(arg.getType())) {
      if (llvm::Error e = addTensorMapArg(i, arg, mapType, args[i]))
        return e;
      continue;
    }
    auto type = dyn_cast<MemRefType>(arg.getType());
    if (!type || !type.getLayout().isIdentity() ||
        !isScalar(type.getElementType()))
      return fail(fop, llvm::formatv("argument {0} must be a memref with an "
                                     "identity layout",
                                     i));
    Buffer buf;
    buf.name = llvm::formatv("kernel argument {0}", i).str();
    buf.data = args[i].data();
    buf.size = static_cast<int64_t>(args[i].size());
    buffers.push_back(std::move(buf));
    MemRefVal m;
    m.buffer = i;
    m.elemType = type.getElementType();
    m.elemBytes = byteWidth(m.elemType);
    int64_t elems = 1;
    for (int64_t d : type.getShape()) {
      if (ShapedType::isDynamic(d)) {
        if (type.getRank() != 1)
          return fail(fop, llvm::formatv("argument {0}: only 1-D memrefs may "
                                         "have a dynamic size",
                                         i));
        d = buffers.back().size / m.elemBytes;
      }
      m.shape.push_back(d);
      elems *= d;
    }
    if (elems * m.elemBytes > buffers.back().size)
      return fail(fop,
                  llvm::formatv("argument {0} needs {1} bytes but its "
                                "buffer has {2}",
                                i, elems * m.elemBytes, buffers.back().size));
    argMemRefs.emplace_back(arg, std::move(m));
  }
  numGlobal = buffers.size();
  return llvm::Error::success();
}

llvm::Error Interpreter::runBlock() {
  slots.clear();
  memrefs.clear();
  buffers.resize(numGlobal);
  dynamicShared = -1;
  epoch = 1;
  uncommitted.assign(numThreads, {});
  groups.assign(numThreads, {});

  for (auto &[arg, m] : argMemRefs)
    memrefs[arg] = m;
  barrierGroups.clear();
  mbarriers.clear();
  wgmmaDescs.clear();
  warpgroupMemrefs.clear();
  wgmmaCommitted.assign(numWarpgroups, 0);
  wgmmaCompleted.assign(numWarpgroups, 0);
  wgmmaReads.clear();
  progress = 0;
  released = false;
  runners = std::make_unique<Runners>();

  auto addShared = [&](std::string name, int64_t size) {
    Buffer buf;
    buf.name = std::move(name);
    buf.shared = true;
    buf.storage.assign(size, kGarbage);
    buf.state.assign(size, ByteState());
    buf.data = buf.storage.data();
    buf.size = size;
    buffers.push_back(std::move(buf));
    return static_cast<unsigned>(buffers.size() - 1);
  };

  for (auto [i, arg] : llvm::enumerate(func.getWorkgroupAttributions())) {
    auto type = cast<MemRefType>(arg.getType());
    if (!type.hasStaticShape() || !type.getLayout().isIdentity())
      return fail(func, "workgroup attributions must be statically shaped");
    MemRefVal m;
    m.elemType = type.getElementType();
    m.elemBytes = byteWidth(m.elemType);
    m.shape.assign(type.getShape().begin(), type.getShape().end());
    m.buffer = addShared(llvm::formatv("workgroup attribution {0}", i).str(),
                         type.getNumElements() * m.elemBytes);
    memrefs[arg] = m;
  }
  if (func.getNumPrivateAttributions() != 0)
    return fail(func, "private attributions are not supported");
  dynamicShared = addShared("dynamic shared memory", config.dynamicSharedBytes);
  if (cluster)
    cluster->started[clusterRank] = true;

  llvm::BitVector mask(numThreads, true);
  return execBlock(func.getBody().front(), mask, nullptr);
}

llvm::Error Interpreter::execBlock(Block &block, const llvm::BitVector &mask,
                                   SmallVectorImpl<Value> *yielded) {
  for (Operation &op : block) {
    if (auto yield = dyn_cast<scf::YieldOp>(op)) {
      if (yielded)
        yielded->assign(yield.getOperands().begin(), yield.getOperands().end());
      continue;
    }
    if (isa<gpu::ReturnOp>(op)) {
      // An early return would need per-thread exit tracking.
      if (&block != &func.getBody().front())
        return fail(&op, "gpu.return inside a nested region is not supported");
      return llvm::Error::success();
    }
    if (llvm::Error e = execOp(&op, mask))
      return e;
  }
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// Shared memory bookkeeping
//===----------------------------------------------------------------------===//

llvm::Expected<int64_t> Interpreter::locate(Operation *op, const MemRefVal &m,
                                            ArrayRef<int64_t> indices,
                                            int64_t count, int64_t t) {
  auto oob = [&]() {
    std::string idx;
    llvm::raw_string_ostream os(idx);
    llvm::interleaveComma(indices, os);
    return fail(
        op, llvm::formatv("out-of-bounds access by thread {0}: "
                          "indices [{1}] ({2} element(s)) into {3} "
                          "of shape [{4}]",
                          t, idx, count, buffers[m.buffer].name,
                          llvm::make_range(m.shape.begin(), m.shape.end())));
  };
  if (indices.size() != m.shape.size())
    return fail(op, "index count does not match the memref rank");
  int64_t linear = 0;
  for (auto [i, idx] : llvm::enumerate(indices)) {
    int64_t extent = i + 1 == indices.size() ? count : 1;
    if (idx < 0 || idx + extent > m.shape[i])
      return oob();
    linear = linear * m.shape[i] + idx;
  }
  int64_t off = m.byteOffset + linear * m.elemBytes;
  if (off + count * m.elemBytes > buffers[m.buffer].size)
    return oob();
  return off;
}

llvm::Error Interpreter::checkGlobalWrite(Operation *op, Buffer &buf,
                                          int64_t off, int64_t n, Access kind) {
  // Blocks run in no order on a GPU: two blocks of one launch storing to
  // one byte race (atomics do not come here), even where the sequential
  // order here gives the right answer.
  if (kind != Access::Write)
    return llvm::Error::success();
  if (buf.writer.empty())
    buf.writer.assign(buf.size, 0);
  int64_t self = blockId[0] +
                 config.grid[0] * (blockId[1] + config.grid[1] * blockId[2]) +
                 1;
  for (int64_t i = off; i < off + n; ++i) {
    if (buf.writer[i] != 0 && buf.writer[i] != self)
      return fail(op, llvm::formatv("block ({0}, {1}, {2}) writes byte {3} of "
                                    "{4}, which block {5} (linear) wrote in "
                                    "this launch: a race between blocks",
                                    blockId[0], blockId[1], blockId[2], i,
                                    buf.name, buf.writer[i] - 1));
    buf.writer[i] = self;
  }
  return llvm::Error::success();
}

llvm::Error Interpreter::checkAccess(Operation *op, unsigned bufIdx,
                                     int64_t off, int64_t n, int64_t t,
                                     Access kind) {
  Buffer &buf = buffers[bufIdx];
  if (!buf.shared)
    return checkGlobalWrite(op, buf, off, n, kind);
  const char *verb = kind == Access::Read ? "reads" : "writes";
  if (kind != Access::Read)
    if (llvm::Error e = checkWgmmaReads(op, bufIdx, off, n, t))
      return e;
  for (int64_t i = off; i < off + n; ++i) {
    ByteState &s = buf.state[i];
    auto where = llvm::formatv("byte {0} of {1}", i, buf.name).str();
    if (s.pendingOwner >= 0)
      return fail(
          op, llvm::formatv("thread {0} {1} {2} while {3} issued by thread {4} "
                            "to it is in flight (missing {5}?)",
                            t, verb, where,
                            s.pendingIsTma ? "a TMA load" : "an async copy",
                            s.pendingOwner,
                            s.pendingIsTma ? "mbarrier wait"
                                           : "nvgpu.device_async_wait"));
    if (kind == Access::Read) {
      if (s.writer == -1)
        return fail(op, llvm::formatv("thread {0} reads never-written {1} "
                                      "(uninitialised shared memory)",
                                      t, where));
      if (s.writeEpoch == epoch && s.writer != t)
        return fail(op,
                    llvm::formatv("data race: thread {0} reads {1} written by "
                                  "thread {2} with no gpu.barrier in between",
                                  t, where, s.writer));
      continue;
    }
    if (s.writeEpoch == epoch && s.writer >= 0 && s.writer != t)
      return fail(op,
                  llvm::formatv("data race: thread {0} {1} {2} also written by "
                                "thread {3} with no gpu.barrier in between",
                                t, verb, where, s.writer));
    if (s.readEpoch == epoch) {
      int32_t other = s.reader != t ? s.reader : s.reader2;
      if (other >= 0)
        return fail(op, llvm::formatv(
                            "data race: thread {0} {1} {2} read by thread {3} "
                            "with no gpu.barrier in between",
                            t, verb, where, other));
    }
  }
  for (int64_t i = off; i < off + n; ++i) {
    ByteState &s = buf.state[i];
    switch (kind) {
    case Access::Read:
      if (s.readEpoch != epoch) {
        s.readEpoch = epoch;
        s.reader = t;
        s.reader2 = -1;
      } else if (s.reader != t && s.reader2 < 0) {
        s.reader2 = t;
      }
      break;
    case Access::Write:
      s.writeEpoch = epoch;
      s.writer = t;
      break;
    case Access::AsyncIssue:
    case Access::TmaIssue:
      s.pendingOwner = t;
      s.pendingIsTma = kind == Access::TmaIssue;
      break;
    }
  }
  return llvm::Error::success();
}

llvm::Error Interpreter::checkFullWarps(Operation *op,
                                        const llvm::BitVector &mask) {
  for (int64_t base = 0; base < numThreads; base += kWarpSize) {
    int64_t active = 0;
    for (int64_t l = base; l < std::min(base + kWarpSize, numThreads); ++l)
      active += mask[l];
    if (active != 0 && active != kWarpSize)
      return fail(op, llvm::formatv("warp-collective op executed by {0} of "
                                    "the 32 lanes of warp {1} (divergent or "
                                    "partial warp)",
                                    active, base / kWarpSize));
  }
  return llvm::Error::success();
}

void Interpreter::completeGroup(int64_t t, std::vector<PendingCopy> &group) {
  for (PendingCopy &c : group) {
    Buffer &dst = buffers[c.dstBuf];
    const Buffer &src = buffers[c.srcBuf];
    for (int64_t i = 0; i < c.dstBytes; ++i) {
      dst.data[c.dstOff + i] = i < c.srcBytes ? src.data[c.srcOff + i] : 0;
      if (dst.shared) {
        ByteState &s = dst.state[c.dstOff + i];
        s.pendingOwner = -1;
        s.writeEpoch = epoch;
        s.writer = t;
      }
    }
  }
  group.clear();
}

//===----------------------------------------------------------------------===//
// Dispatch
//===----------------------------------------------------------------------===//

llvm::Error Interpreter::execOp(Operation *op, const llvm::BitVector &mask) {
  ++progress;
  if (cluster)
    ++cluster->progress;
  if (llvm::Error e = dispatchOp(op, mask))
    return e;
  // A phase completed by arrivals may unblock a waiter: let it run now, the
  // earliest the hardware could, so a slot released too early is refilled
  // while its readers are still in flight.
  if (released) {
    released = false;
    runners->yield();
  }
  return llvm::Error::success();
}

llvm::Error Interpreter::dispatchOp(Operation *op,
                                    const llvm::BitVector &mask) {
  // Regions with no active thread are skipped by their parents; ops always
  // see at least one active thread.
  int64_t bx = config.block[0], by = config.block[1];
  auto dimIndex = [](gpu::Dimension d) { return static_cast<int>(d); };
  auto threadCoord = [&](int64_t t, int dim) {
    return dim == 0 ? t % bx : dim == 1 ? (t / bx) % by : t / (bx * by);
  };

  if (auto o = dyn_cast<gpu::ThreadIdOp>(op)) {
    int dim = dimIndex(o.getDimension());
    std::optional<llvm::APInt> bound = o.getUpperBound();
    Slot s(1, numThreads);
    for (unsigned t : mask.set_bits()) {
      s.at(t, 0) = threadCoord(t, dim);
      if (bound && s.at(t, 0) >= bound->getZExtValue())
        return fail(op, "thread id exceeds its upper_bound");
    }
    slots[o.getResult()] = std::move(s);
    return llvm::Error::success();
  }
  if (auto o = dyn_cast<gpu::LaneIdOp>(op)) {
    Slot s(1, numThreads);
    for (unsigned t : mask.set_bits())
      s.at(t, 0) = t % kWarpSize;
    slots[o.getResult()] = std::move(s);
    return llvm::Error::success();
  }
  if (auto o = dyn_cast<gpu::BlockIdOp>(op)) {
    setUniform(o.getResult(), blockId[dimIndex(o.getDimension())]);
    return llvm::Error::success();
  }
  if (auto o = dyn_cast<gpu::BlockDimOp>(op)) {
    setUniform(o.getResult(), config.block[dimIndex(o.getDimension())]);
    return llvm::Error::success();
  }
  if (auto o = dyn_cast<gpu::GridDimOp>(op)) {
    setUniform(o.getResult(), config.grid[dimIndex(o.getDimension())]);
    return llvm::Error::success();
  }
  if (isa<gpu::BarrierOp>(op)) {
    if (static_cast<int64_t>(mask.count()) != numThreads)
      return fail(op, llvm::formatv("gpu.barrier reached by {0} of {1} "
                                    "threads (barrier under divergence)",
                                    mask.count(), numThreads));
    ++epoch;
    return llvm::Error::success();
  }
  if (auto o = dyn_cast<NVVM::BarrierOp>(op)) {
    // bar.sync id, count: the threads that reach it must be exactly
    // `count` (all of the block without one), all of them in this runner.
    int64_t expected = numThreads;
    if (Value count = o.getNumberOfThreads()) {
      auto n = uniformInt(op, count, mask);
      if (!n)
        return n.takeError();
      expected = *n;
    }
    if (static_cast<int64_t>(mask.count()) != expected)
      return fail(op, llvm::formatv("nvvm.barrier for {0} threads reached by "
                                    "{1} (partial barrier)",
                                    expected, mask.count()));
    if (std::optional<NVVM::BarrierReduction> kind = o.getReductionOp()) {
      // bar.red: every thread gets the reduction of the threads' predicates
      // (a count for popc, 0 or 1 for and/or).
      if (o.getBarrierId() || o.getNumberOfThreads() ||
          !o.getReductionPredicate())
        return fail(op, "a reducing nvvm.barrier is over the whole block "
                        "with a predicate");
      auto predicate = get(op, o.getReductionPredicate());
      if (!predicate)
        return predicate.takeError();
      uint64_t count = 0;
      for (unsigned t : mask.set_bits())
        count += (*predicate)->at(t, 0) != 0;
      uint64_t reduced = *kind == NVVM::BarrierReduction::POPC ? count
                         : *kind == NVVM::BarrierReduction::AND
                             ? count == mask.count()
                             : count != 0;
      Slot s(1, numThreads);
      for (unsigned t : mask.set_bits())
        s.at(t, 0) = reduced;
      slots[o.getRes()] = std::move(s);
    }
    ++epoch;
    return llvm::Error::success();
  }
  // Blocks run one after another, so every global access of an earlier
  // block is visible to a later one: a fence orders nothing more here.
  if (isa<NVVM::MembarOp>(op))
    return llvm::Error::success();
  if (auto o = dyn_cast<memref::AtomicRMWOp>(op))
    return execAtomicRMW(o, mask);
  if (auto o = dyn_cast<gpu::DynamicSharedMemoryOp>(op)) {
    MemRefVal m;
    m.buffer = dynamicShared;
    m.elemType = IntegerType::get(op->getContext(), 8);
    m.elemBytes = 1;
    m.shape.push_back(config.dynamicSharedBytes);
    memrefs[o.getResult()] = m;
    return llvm::Error::success();
  }
  if (auto o = dyn_cast<memref::ExtractAlignedPointerAsIndexOp>(op)) {
    // Shared buffers start 1024-byte aligned (runKernel): a shared address
    // is its offset. Global addresses are not modelled.
    auto m = getMemRef(op, o.getSource());
    if (!m)
      return m.takeError();
    if (!buffers[m->buffer].shared)
      return fail(op, "only shared memory addresses are modelled");
    Slot s(1, numThreads);
    for (unsigned t : mask.set_bits())
      s.at(t, 0) = static_cast<uint64_t>(m->byteOffset);
    slots[o.getResult()] = std::move(s);
    return llvm::Error::success();
  }
  if (isa<NVVM::ClusterArriveOp, NVVM::ClusterArriveRelaxedOp,
          NVVM::ClusterWaitOp>(op))
    return execClusterBarrier(op, mask);
  if (auto o = dyn_cast<LLVM::IntToPtrOp>(op)) {
    auto address = get(op, o.getArg());
    if (!address)
      return address.takeError();
    slots[o.getResult()] = **address;
    return llvm::Error::success();
  }
  if (auto o = dyn_cast<NVVM::MapaOp>(op)) {
    // A shared address of this CTA to the same offset in CTA `rank`'s.
    auto address = get(op, o.getA());
    auto rank = get(op, o.getB());
    if (!address)
      return address.takeError();
    if (!rank)
      return rank.takeError();
    int64_t size = cluster ? static_cast<int64_t>(cluster->ctas.size()) : 1;
    Slot s(1, numThreads);
    for (unsigned t : mask.set_bits()) {
      uint64_t r = (*rank)->at(t, 0) & 0xffffffffu;
      if (static_cast<int64_t>(r) >= size)
        return fail(op, llvm::formatv("thread {0} maps to rank {1} of a "
                                      "cluster of {2} CTA(s)",
                                      t, r, size));
      s.at(t, 0) = (r << 32) | ((*address)->at(t, 0) & 0xffffffffu);
    }
    slots[o.getResult()] = std::move(s);
    return llvm::Error::success();
  }
  if (auto o = dyn_cast<LLVM::LoadOp>(op))
    return execSharedLoad(o, mask);
  if (auto o = dyn_cast<gpu::ShuffleOp>(op))
    return execShuffle(o, mask);
  if (auto o = dyn_cast<arith::ConstantOp>(op))
    return execConstant(o, mask);
  if (auto o = dyn_cast<scf::ForOp>(op))
    return execFor(o, mask);
  if (auto o = dyn_cast<scf::IfOp>(op))
    return execIf(o, mask);
  if (auto o = dyn_cast<memref::LoadOp>(op))
    return execLoadStore(op, o.getMemRef(), o.getIndices(), nullptr,
                         o.getResult(), o.getType(), mask);
  if (auto o = dyn_cast<memref::StoreOp>(op))
    return execLoadStore(op, o.getMemRef(), o.getIndices(), o.getValue(),
                         nullptr, o.getValue().getType(), mask);
  if (auto o = dyn_cast<vector::LoadOp>(op))
    return execLoadStore(op, o.getBase(), o.getIndices(), nullptr,
                         o.getResult(), o.getVectorType(), mask);
  if (auto o = dyn_cast<vector::StoreOp>(op))
    return execLoadStore(op, o.getBase(), o.getIndices(), o.getValueToStore(),
                         nullptr, o.getVectorType(), mask);
  if (auto o = dyn_cast<memref::ViewOp>(op))
    return execView(o, mask);
  if (auto o = dyn_cast<memref::AssumeAlignmentOp>(op)) {
    auto m = getMemRef(op, o.getMemref());
    if (!m)
      return m.takeError();
    memrefs[o.getResult()] = *m;
    return llvm::Error::success();
  }
  if (auto o = dyn_cast<nvgpu::LdMatrixOp>(op))
    return execLdMatrix(o, mask);
  if (auto o = dyn_cast<nvgpu::DeviceAsyncCopyOp>(op))
    return execAsyncCopy(o, mask);
  if (auto o = dyn_cast<nvgpu::DeviceAsyncCreateGroupOp>(op)) {
    for (unsigned t : mask.set_bits())
      groups[t].push_back(std::move(uncommitted[t]));
    for (unsigned t : mask.set_bits())
      uncommitted[t].clear();
    slots[o.getResult()] = Slot(1, numThreads);
    return llvm::Error::success();
  }
  if (auto o = dyn_cast<nvgpu::DeviceAsyncWaitOp>(op)) {
    size_t allowed = o.getNumGroups().value_or(0);
    for (unsigned t : mask.set_bits()) {
      while (groups[t].size() > allowed) {
        completeGroup(t, groups[t].front());
        groups[t].pop_front();
      }
    }
    return llvm::Error::success();
  }
  if (auto o = dyn_cast<NVVM::MmaOp>(op))
    return execMma(o, mask);
  bool hopper = false;
  if (llvm::Error e = execHopper(op, mask, hopper))
    return e;
  if (hopper)
    return llvm::Error::success();
  if (auto o = dyn_cast<LLVM::ExtractValueOp>(op)) {
    if (o.getPosition().size() != 1 || !isScalar(o.getType()))
      return fail(op, "only extraction of a scalar struct member is supported");
    auto c = get(op, o.getContainer());
    if (!c)
      return c.takeError();
    Slot s(1, numThreads);
    for (unsigned t : mask.set_bits())
      s.at(t, 0) = (*c)->at(t, o.getPosition()[0]);
    slots[o.getResult()] = std::move(s);
    return llvm::Error::success();
  }

  bool handled = false;
  if (llvm::Error e = execArith(op, mask, handled))
    return e;
  if (handled)
    return llvm::Error::success();
  if (llvm::Error e = execVector(op, mask, handled))
    return e;
  if (handled)
    return llvm::Error::success();
  return fail(op, "unsupported op");
}

//===----------------------------------------------------------------------===//
// arith / math
//===----------------------------------------------------------------------===//

llvm::Error Interpreter::mapElements(
    Operation *op, const llvm::BitVector &mask,
    llvm::function_ref<std::optional<uint64_t>(ArrayRef<uint64_t>)> fn,
    StringRef failure) {
  SmallVector<const Slot *> operands;
  for (Value v : op->getOperands()) {
    auto s = get(op, v);
    if (!s)
      return s.takeError();
    operands.push_back(*s);
  }
  Type resultType = op->getResult(0).getType();
  unsigned width = numEntries(resultType);
  unsigned resultBits = bitWidth(getElementTypeOrSelf(resultType));
  Slot result(width, numThreads);
  SmallVector<uint64_t, 4> in(operands.size());
  for (unsigned t : mask.set_bits()) {
    for (unsigned e = 0; e < width; ++e) {
      // Scalar operands (e.g. a select condition) apply to every element.
      for (auto [i, s] : llvm::enumerate(operands))
        in[i] = s->at(t, s->width == 1 ? 0 : e);
      std::optional<uint64_t> r = fn(in);
      if (!r)
        return fail(op, llvm::formatv("{0} in thread {1}", failure, t));
      result.at(t, e) = truncBits(*r, resultBits);
    }
  }
  slots[op->getResult(0)] = std::move(result);
  return llvm::Error::success();
}

llvm::Error Interpreter::execConstant(arith::ConstantOp op,
                                      const llvm::BitVector &mask) {
  auto toBits = [](Attribute attr) -> std::optional<uint64_t> {
    if (auto i = dyn_cast<IntegerAttr>(attr))
      return i.getValue().getZExtValue();
    if (auto f = dyn_cast<FloatAttr>(attr))
      return f.getValue().bitcastToAPInt().getZExtValue();
    return std::nullopt;
  };
  Attribute value = op.getValue();
  if (auto dense = dyn_cast<DenseElementsAttr>(value)) {
    Slot s(dense.getNumElements(), numThreads);
    SmallVector<uint64_t> elems;
    if (isa<FloatType>(dense.getElementType())) {
      for (const llvm::APFloat &f : dense.getValues<llvm::APFloat>())
        elems.push_back(f.bitcastToAPInt().getZExtValue());
    } else if (dense.getElementType().isIntOrIndex()) {
      for (const llvm::APInt &i : dense.getValues<llvm::APInt>())
        elems.push_back(i.getZExtValue());
    } else {
      return fail(op, "unsupported dense constant element type");
    }
    for (int64_t t = 0; t < numThreads; ++t)
      for (auto [e, b] : llvm::enumerate(elems))
        s.at(t, e) = b;
    slots[op.getResult()] = std::move(s);
    return llvm::Error::success();
  }
  std::optional<uint64_t> bits = toBits(value);
  if (!bits)
    return fail(op, "unsupported constant attribute");
  setUniform(op.getResult(), *bits);
  return llvm::Error::success();
}

using Bits = std::optional<uint64_t>;

llvm::Error Interpreter::execArith(Operation *op, const llvm::BitVector &mask,
                                   bool &handled) {
  handled = true;
  if (op->getNumResults() != 1 || op->getNumOperands() == 0) {
    handled = false;
    return llvm::Error::success();
  }
  Type inType = getElementTypeOrSelf(op->getOperand(0).getType());
  Type outType = getElementTypeOrSelf(op->getResult(0).getType());
  if (!isScalar(inType) || !isScalar(outType)) {
    handled = false;
    return llvm::Error::success();
  }
  unsigned w = bitWidth(inType);
  auto sx = [w](uint64_t v) { return signExtend(v, w); };
  auto zx = [w](uint64_t v) { return truncBits(v, w); };
  auto fv = [inType](uint64_t v) { return floatValue(inType, v); };
  auto fb = [outType](double d) -> Bits { return floatBits(outType, d); };
  bool isF64 = inType.isF64();

  // Integer binary ops.
  using IntFn = std::function<Bits(uint64_t, uint64_t)>;
  IntFn intFn =
      llvm::TypeSwitch<Operation *, IntFn>(op)
          .Case([&](arith::AddIOp) {
            return [](uint64_t a, uint64_t b) -> Bits { return a + b; };
          })
          .Case([&](arith::SubIOp) {
            return [](uint64_t a, uint64_t b) -> Bits { return a - b; };
          })
          .Case([&](arith::MulIOp) {
            return [](uint64_t a, uint64_t b) -> Bits { return a * b; };
          })
          .Case([&](arith::AndIOp) {
            return [](uint64_t a, uint64_t b) -> Bits { return a & b; };
          })
          .Case([&](arith::OrIOp) {
            return [](uint64_t a, uint64_t b) -> Bits { return a | b; };
          })
          .Case([&](arith::XOrIOp) {
            return [](uint64_t a, uint64_t b) -> Bits { return a ^ b; };
          })
          .Case([&](arith::DivUIOp) {
            return [=](uint64_t a, uint64_t b) -> Bits {
              if (zx(b) == 0)
                return std::nullopt;
              return zx(a) / zx(b);
            };
          })
          .Case([&](arith::RemUIOp) {
            return [=](uint64_t a, uint64_t b) -> Bits {
              if (zx(b) == 0)
                return std::nullopt;
              return zx(a) % zx(b);
            };
          })
          .Case([&](arith::CeilDivUIOp) {
            return [=](uint64_t a, uint64_t b) -> Bits {
              if (zx(b) == 0)
                return std::nullopt;
              return zx(a) / zx(b) + (zx(a) % zx(b) != 0);
            };
          })
          .Case([&](arith::DivSIOp) {
            return [=](uint64_t a, uint64_t b) -> Bits {
              if (sx(b) == 0 ||
                  (sx(b) == -1 &&
                   sx(a) == (w >= 64 ? INT64_MIN : -(int64_t(1) << (w - 1)))))
                return std::nullopt;
              return static_cast<uint64_t>(sx(a) / sx(b));
            };
          })
          .Case([&](arith::RemSIOp) {
            return [=](uint64_t a, uint64_t b) -> Bits {
              if (sx(b) == 0)
                return std::nullopt;
              if (sx(b) == -1)
                return 0;
              return static_cast<uint64_t>(sx(a) % sx(b));
            };
          })
          .Case([&](arith::CeilDivSIOp) {
            return [=](uint64_t a, uint64_t b) -> Bits {
              if (sx(b) == 0 || sx(b) == -1)
                return sx(b) == 0 ? Bits()
                                  : Bits(static_cast<uint64_t>(-sx(a)));
              int64_t q = sx(a) / sx(b), r = sx(a) % sx(b);
              return static_cast<uint64_t>(
                  q + (r != 0 && ((r < 0) == (sx(b) < 0))));
            };
          })
          .Case([&](arith::FloorDivSIOp) {
            return [=](uint64_t a, uint64_t b) -> Bits {
              if (sx(b) == 0 || sx(b) == -1)
                return sx(b) == 0 ? Bits()
                                  : Bits(static_cast<uint64_t>(-sx(a)));
              int64_t q = sx(a) / sx(b), r = sx(a) % sx(b);
              return static_cast<uint64_t>(
                  q - (r != 0 && ((r < 0) != (sx(b) < 0))));
            };
          })
          .Case([&](arith::ShLIOp) {
            return [=](uint64_t a, uint64_t b) -> Bits {
              return zx(b) >= w ? 0 : a << zx(b);
            };
          })
          .Case([&](arith::ShRUIOp) {
            return [=](uint64_t a, uint64_t b) -> Bits {
              return zx(b) >= w ? 0 : zx(a) >> zx(b);
            };
          })
          .Case([&](arith::ShRSIOp) {
            return [=](uint64_t a, uint64_t b) -> Bits {
              uint64_t s = std::min<uint64_t>(zx(b), w - 1);
              return static_cast<uint64_t>(sx(a) >> s);
            };
          })
          .Case([&](arith::MinUIOp) {
            return [=](uint64_t a, uint64_t b) -> Bits {
              return std::min(zx(a), zx(b));
            };
          })
          .Case([&](arith::MaxUIOp) {
            return [=](uint64_t a, uint64_t b) -> Bits {
              return std::max(zx(a), zx(b));
            };
          })
          .Case([&](arith::MinSIOp) {
            return [=](uint64_t a, uint64_t b) -> Bits {
              return static_cast<uint64_t>(std::min(sx(a), sx(b)));
            };
          })
          .Case([&](arith::MaxSIOp) {
            return [=](uint64_t a, uint64_t b) -> Bits {
              return static_cast<uint64_t>(std::max(sx(a), sx(b)));
            };
          })
          .Default([](Operation *) { return IntFn(); });
  if (intFn)
    return mapElements(
        op, mask, [&](ArrayRef<uint64_t> in) { return intFn(in[0], in[1]); },
        "division by zero or overflow");

  if (auto cmp = dyn_cast<arith::CmpIOp>(op)) {
    arith::CmpIPredicate p = cmp.getPredicate();
    return mapElements(op, mask, [&](ArrayRef<uint64_t> in) -> Bits {
      uint64_t a = zx(in[0]), b = zx(in[1]);
      int64_t sa = sx(in[0]), sb = sx(in[1]);
      switch (p) {
      case arith::CmpIPredicate::eq:
        return a == b;
      case arith::CmpIPredicate::ne:
        return a != b;
      case arith::CmpIPredicate::slt:
        return sa < sb;
      case arith::CmpIPredicate::sle:
        return sa <= sb;
      case arith::CmpIPredicate::sgt:
        return sa > sb;
      case arith::CmpIPredicate::sge:
        return sa >= sb;
      case arith::CmpIPredicate::ult:
        return a < b;
      case arith::CmpIPredicate::ule:
        return a <= b;
      case arith::CmpIPredicate::ugt:
        return a > b;
      case arith::CmpIPredicate::uge:
        return a >= b;
      }
      return std::nullopt;
    });
  }
  if (isa<arith::SelectOp>(op))
    return mapElements(op, mask, [](ArrayRef<uint64_t> in) -> Bits {
      return (in[0] & 1) ? in[1] : in[2];
    });
  if (isa<arith::IndexCastOp, arith::ExtSIOp>(op))
    return mapElements(op, mask, [&](ArrayRef<uint64_t> in) -> Bits {
      return static_cast<uint64_t>(sx(in[0]));
    });
  if (isa<arith::IndexCastUIOp, arith::ExtUIOp, arith::TruncIOp,
          arith::BitcastOp>(op))
    return mapElements(
        op, mask, [&](ArrayRef<uint64_t> in) -> Bits { return zx(in[0]); });
  if (isa<arith::SIToFPOp, arith::UIToFPOp>(op)) {
    bool isSigned = isa<arith::SIToFPOp>(op);
    return mapElements(op, mask, [&](ArrayRef<uint64_t> in) -> Bits {
      if (outType.isF64())
        return fb(isSigned ? static_cast<double>(sx(in[0]))
                           : static_cast<double>(zx(in[0])));
      // Convert straight to float to round once.
      float f = isSigned ? static_cast<float>(sx(in[0]))
                         : static_cast<float>(zx(in[0]));
      return fb(f);
    });
  }

  // Everything below takes floats (fp8 only to widen).
  if (!isSupportedFloat(inType) && !(isFp8(inType) && isa<arith::ExtFOp>(op))) {
    handled = false;
    return llvm::Error::success();
  }
  if (isa<arith::FPToSIOp, arith::FPToUIOp>(op)) {
    bool isSigned = isa<arith::FPToSIOp>(op);
    unsigned ow = bitWidth(outType);
    return mapElements(op, mask, [&](ArrayRef<uint64_t> in) -> Bits {
      double d = std::trunc(fv(in[0]));
      if (std::isnan(d))
        return 0;
      // Out-of-range conversions are poison; saturate for determinism.
      if (isSigned) {
        double lo = -std::ldexp(1.0, ow - 1), hi = std::ldexp(1.0, ow - 1) - 1;
        d = std::clamp(d, lo, hi);
        return static_cast<uint64_t>(static_cast<int64_t>(d));
      }
      d = std::clamp(d, 0.0, std::ldexp(1.0, ow) - 1);
      return d >= 9.2e18 ? static_cast<uint64_t>(d)
                         : static_cast<uint64_t>(static_cast<int64_t>(d));
    });
  }
  if (isa<arith::ExtFOp, arith::TruncFOp>(op)) {
    if (!isSupportedFloat(outType) && !isFp8(outType)) {
      handled = false;
      return llvm::Error::success();
    }
    return mapElements(op, mask,
                       [&](ArrayRef<uint64_t> in) { return fb(fv(in[0])); });
  }

  // Same-type float ops: compute in double (exact for + - * / on float
  // inputs before the single rounding in fb) or float for transcendental
  // functions, then round to the element type.
  using FloatFn = std::function<double(ArrayRef<double>)>;
  auto unary = [&](double (*f64)(double), float (*f32)(float)) -> FloatFn {
    return [=](ArrayRef<double> x) -> double {
      return isF64 ? f64(x[0])
                   : static_cast<double>(f32(static_cast<float>(x[0])));
    };
  };
  FloatFn floatFn =
      llvm::TypeSwitch<Operation *, FloatFn>(op)
          .Case([&](arith::AddFOp) {
            return [](ArrayRef<double> x) { return x[0] + x[1]; };
          })
          .Case([&](arith::SubFOp) {
            return [](ArrayRef<double> x) { return x[0] - x[1]; };
          })
          .Case([&](arith::MulFOp) {
            return [](ArrayRef<double> x) { return x[0] * x[1]; };
          })
          .Case([&](arith::DivFOp) {
            return [](ArrayRef<double> x) { return x[0] / x[1]; };
          })
          .Case([&](arith::NegFOp) {
            return [](ArrayRef<double> x) { return -x[0]; };
          })
          // The arith folders' own IEEE-754 semantics (NaN propagation,
          // -0 < +0 for maximumf/minimumf).
          .Case([&](arith::MaximumFOp) {
            return [](ArrayRef<double> x) {
              return llvm::maximum(APFloat(x[0]), APFloat(x[1]))
                  .convertToDouble();
            };
          })
          .Case([&](arith::MinimumFOp) {
            return [](ArrayRef<double> x) {
              return llvm::minimum(APFloat(x[0]), APFloat(x[1]))
                  .convertToDouble();
            };
          })
          .Case([&](arith::MaxNumFOp) {
            return [](ArrayRef<double> x) { return std::fmax(x[0], x[1]); };
          })
          .Case([&](arith::MinNumFOp) {
            return [](ArrayRef<double> x) { return std::fmin(x[0], x[1]); };
          })
          .Case([&](math::ExpOp) { return unary(std::exp, std::exp); })
          .Case([&](math::Exp2Op) { return unary(std::exp2, std::exp2); })
          .Case([&](math::LogOp) { return unary(std::log, std::log); })
          .Case([&](math::Log2Op) { return unary(std::log2, std::log2); })
          .Case([&](math::SqrtOp) { return unary(std::sqrt, std::sqrt); })
          .Case([&](math::TanhOp) { return unary(std::tanh, std::tanh); })
          .Case([&](math::SinOp) { return unary(std::sin, std::sin); })
          .Case([&](math::CosOp) { return unary(std::cos, std::cos); })
          .Case([&](math::ErfOp) { return unary(std::erf, std::erf); })
          .Case([&](math::AbsFOp) { return unary(std::fabs, std::fabs); })
          .Case([&](math::RsqrtOp) {
            return [=](ArrayRef<double> x) -> double {
              if (isF64)
                return 1.0 / std::sqrt(x[0]);
              return 1.0f / std::sqrt(static_cast<float>(x[0]));
            };
          })
          .Case([&](math::FmaOp) {
            return [=](ArrayRef<double> x) -> double {
              if (isF64)
                return std::fma(x[0], x[1], x[2]);
              return std::fma(static_cast<float>(x[0]),
                              static_cast<float>(x[1]),
                              static_cast<float>(x[2]));
            };
          })
          .Default([](Operation *) { return FloatFn(); });
  if (floatFn)
    return mapElements(op, mask, [&](ArrayRef<uint64_t> in) {
      SmallVector<double, 3> x;
      for (uint64_t b : in)
        x.push_back(fv(b));
      return fb(floatFn(x));
    });

  if (auto cmp = dyn_cast<arith::CmpFOp>(op)) {
    arith::CmpFPredicate p = cmp.getPredicate();
    return mapElements(op, mask, [&](ArrayRef<uint64_t> in) -> Bits {
      double a = fv(in[0]), b = fv(in[1]);
      bool unordered = std::isnan(a) || std::isnan(b);
      using P = arith::CmpFPredicate;
      switch (p) {
      case P::AlwaysFalse:
        return 0;
      case P::AlwaysTrue:
        return 1;
      case P::OEQ:
        return !unordered && a == b;
      case P::OGT:
        return !unordered && a > b;
      case P::OGE:
        return !unordered && a >= b;
      case P::OLT:
        return !unordered && a < b;
      case P::OLE:
        return !unordered && a <= b;
      case P::ONE:
        return !unordered && a != b;
      case P::ORD:
        return !unordered;
      case P::UEQ:
        return unordered || a == b;
      case P::UGT:
        return unordered || a > b;
      case P::UGE:
        return unordered || a >= b;
      case P::ULT:
        return unordered || a < b;
      case P::ULE:
        return unordered || a <= b;
      case P::UNE:
        return unordered || a != b;
      case P::UNO:
        return unordered;
      }
      return std::nullopt;
    });
  }
  handled = false;
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// scf
//===----------------------------------------------------------------------===//

llvm::Error Interpreter::execFor(scf::ForOp op, const llvm::BitVector &mask) {
  auto lb = uniformInt(op, op.getLowerBound(), mask);
  if (!lb)
    return lb.takeError();
  auto ub = uniformInt(op, op.getUpperBound(), mask);
  if (!ub)
    return ub.takeError();
  auto step = uniformInt(op, op.getStep(), mask);
  if (!step)
    return step.takeError();
  if (*step <= 0)
    return fail(op, "loop step must be positive");
  unsigned w = bitWidth(op.getInductionVar().getType());
  bool isUnsigned = op.getUnsignedCmp();

  SmallVector<Slot> iter;
  for (Value init : op.getInitArgs()) {
    auto s = get(op, init);
    if (!s)
      return s.takeError();
    iter.push_back(**s);
  }
  Block *body = op.getBody();
  SmallVector<Value> yielded;
  for (int64_t iv = *lb;; iv += *step) {
    bool inRange = isUnsigned ? truncBits(iv, w) < truncBits(*ub, w)
                              : signExtend(iv, w) < signExtend(*ub, w);
    if (!inRange)
      break;
    setUniform(op.getInductionVar(), truncBits(iv, w));
    for (auto [arg, s] : llvm::zip(op.getRegionIterArgs(), iter))
      slots[arg] = s;
    if (llvm::Error e = execBlock(*body, mask, &yielded))
      return e;
    for (auto [i, v] : llvm::enumerate(yielded)) {
      auto s = get(op, v);
      if (!s)
        return s.takeError();
      iter[i] = **s;
    }
  }
  for (auto [res, s] : llvm::zip(op.getResults(), iter))
    slots[res] = std::move(s);
  return llvm::Error::success();
}

llvm::Error Interpreter::execIf(scf::IfOp op, const llvm::BitVector &mask) {
  auto cond = get(op, op.getCondition());
  if (!cond)
    return cond.takeError();
  llvm::BitVector thenMask(numThreads), elseMask(numThreads);
  for (unsigned t : mask.set_bits())
    ((*cond)->at(t, 0) & 1 ? thenMask : elseMask).set(t);

  SmallVector<Slot> results;
  for (Type type : op.getResultTypes())
    results.emplace_back(numEntries(type), numThreads);
  auto runBranch = [&](Region &region,
                       const llvm::BitVector &branchMask) -> llvm::Error {
    if (region.empty() || branchMask.none())
      return llvm::Error::success();
    SmallVector<Value> yielded;
    if (llvm::Error e = execBlock(region.front(), branchMask, &yielded))
      return e;
    for (auto [i, v] : llvm::enumerate(yielded)) {
      auto s = get(op, v);
      if (!s)
        return s.takeError();
      for (unsigned t : branchMask.set_bits())
        for (unsigned e = 0; e < results[i].width; ++e)
          results[i].at(t, e) = (*s)->at(t, e);
    }
    return llvm::Error::success();
  };
  auto [cached, inserted] = mayWait.try_emplace(op, false);
  if (inserted)
    cached->second = op->walk([](nvgpu::MBarrierTryWaitParityOp) {
                         return WalkResult::interrupt();
                       }).wasInterrupted();
  if (cached->second && splitsWarpgroups(thenMask, elseMask)) {
    if (cluster)
      return fail(op, "warp specialization inside a thread-block cluster "
                      "is not modelled");
    // Warp specialization: the else branch runs beside this one.
    int self = runners->self();
    int other = runners->spawn([&]() -> llvm::Error {
      return runBranch(op.getElseRegion(), elseMask);
    });
    llvm::Error error = runBranch(op.getThenRegion(), thenMask);
    if (error)
      runners->markFailed(self);
    llvm::Error otherError = runners->join(other);
    // Report the cause, not the wait another runner's failure broke.
    if (error && otherError && runners->firstFailed != self)
      std::swap(error, otherError);
    if (error) {
      llvm::consumeError(std::move(otherError));
      return error;
    }
    if (otherError)
      return otherError;
  } else {
    if (llvm::Error e = runBranch(op.getThenRegion(), thenMask))
      return e;
    if (llvm::Error e = runBranch(op.getElseRegion(), elseMask))
      return e;
  }
  for (auto [res, s] : llvm::zip(op.getResults(), results))
    slots[res] = std::move(s);
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// memref / vector memory ops
//===----------------------------------------------------------------------===//

llvm::Error Interpreter::execLoadStore(Operation *op, Value memref,
                                       ValueRange indices, Value stored,
                                       Value loaded, Type valueType,
                                       const llvm::BitVector &mask) {
  auto m = getMemRef(op, memref);
  if (!m)
    return m.takeError();
  Type elemType = getElementTypeOrSelf(valueType);
  if (elemType != m->elemType)
    return fail(op, "value element type differs from the memref's");
  unsigned count = numEntries(valueType);
  const Slot *value = nullptr;
  if (stored) {
    auto s = get(op, stored);
    if (!s)
      return s.takeError();
    value = *s;
  }
  Slot result(count, numThreads);
  Buffer &buf = buffers[m->buffer];
  for (unsigned t : mask.set_bits()) {
    auto idx = indicesOf(op, indices, t);
    if (!idx)
      return idx.takeError();
    auto off = locate(op, *m, *idx, count, t);
    if (!off)
      return off.takeError();
    if (llvm::Error e = checkAccess(op, m->buffer, *off, count * m->elemBytes,
                                    t, stored ? Access::Write : Access::Read))
      return e;
    for (unsigned e = 0; e < count; ++e) {
      uint8_t *p = buf.data + *off + e * m->elemBytes;
      if (stored)
        storeBytes(p, m->elemBytes, value->at(t, e));
      else
        result.at(t, e) = loadBytes(p, m->elemBytes);
    }
  }
  if (loaded)
    slots[loaded] = std::move(result);
  return llvm::Error::success();
}

llvm::Error Interpreter::execAtomicRMW(memref::AtomicRMWOp op,
                                       const llvm::BitVector &mask) {
  auto m = getMemRef(op, op.getMemref());
  if (!m)
    return m.takeError();
  if (buffers[m->buffer].shared)
    return fail(op, "only global atomics are modelled");
  if (op.getKind() != arith::AtomicRMWKind::addi || !op.getType().isInteger(32))
    return fail(op, "only i32 addi atomics are modelled");
  auto operand = get(op, op.getValue());
  if (!operand)
    return operand.takeError();
  Slot result(1, numThreads);
  Buffer &buf = buffers[m->buffer];
  // The active threads in thread order, each seeing the sums of those
  // before it: one order the GPU may choose.
  for (unsigned t : mask.set_bits()) {
    auto idx = indicesOf(op, op.getIndices(), t);
    if (!idx)
      return idx.takeError();
    auto off = locate(op, *m, *idx, 1, t);
    if (!off)
      return off.takeError();
    uint8_t *p = buf.data + *off;
    uint64_t old = loadBytes(p, 4);
    storeBytes(p, 4, (old + (*operand)->at(t, 0)) & 0xffffffffu);
    result.at(t, 0) = old;
  }
  slots[op.getResult()] = std::move(result);
  return llvm::Error::success();
}

llvm::Error Interpreter::execView(memref::ViewOp op,
                                  const llvm::BitVector &mask) {
  auto src = getMemRef(op, op.getSource());
  if (!src)
    return src.takeError();
  MemRefType type = op.getType();
  MemRefVal m;
  m.buffer = src->buffer;
  m.elemType = type.getElementType();
  m.elemBytes = byteWidth(m.elemType);
  auto sizes = op.getSizes().begin();
  int64_t elems = 1;
  for (int64_t d : type.getShape()) {
    if (ShapedType::isDynamic(d)) {
      auto s = uniformInt(op, *sizes++, mask);
      if (!s)
        return s.takeError();
      d = *s;
    }
    m.shape.push_back(d);
    elems *= d;
  }
  int64_t srcBytes = src->shape[0] * src->elemBytes;
  auto viewAt = [&](int64_t shift) -> llvm::Expected<MemRefVal> {
    if (shift < 0 || shift + elems * m.elemBytes > srcBytes)
      return fail(op, llvm::formatv("view of {0} bytes at byte shift {1} "
                                    "exceeds the {2}-byte source ({3})",
                                    elems * m.elemBytes, shift, srcBytes,
                                    buffers[m.buffer].name));
    MemRefVal view = m;
    view.byteOffset = src->byteOffset + shift;
    return view;
  };
  auto shifts = get(op, op.getByteShift());
  if (!shifts)
    return shifts.takeError();
  // One shift per warpgroup (uniform within each); usually one for all.
  SmallVector<std::optional<int64_t>, 4> perWarpgroup(numWarpgroups);
  bool uniform = true;
  std::optional<int64_t> first;
  for (unsigned t : mask.set_bits()) {
    int64_t shift = signExtend((*shifts)->at(t, 0), 64);
    std::optional<int64_t> &mine = perWarpgroup[t / kWarpgroupSize];
    if (mine && *mine != shift)
      return fail(op, llvm::formatv("the byte shift must be uniform within a "
                                    "warpgroup, but thread {0} has {1} where "
                                    "its warpgroup has {2}",
                                    t, shift, *mine));
    mine = shift;
    uniform &= !first || *first == shift;
    first = first.value_or(shift);
  }
  warpgroupMemrefs.erase(op.getResult());
  if (uniform) {
    auto view = viewAt(*first);
    if (!view)
      return view.takeError();
    memrefs[op.getResult()] = *view;
    return llvm::Error::success();
  }
  memrefs.erase(op.getResult());
  SmallVector<MemRefVal, 4> views(perWarpgroup.size());
  for (auto [warpgroup, shift] : llvm::enumerate(perWarpgroup)) {
    if (!shift)
      continue;
    auto view = viewAt(*shift);
    if (!view)
      return view.takeError();
    views[warpgroup] = *view;
  }
  warpgroupMemrefs[op.getResult()] = std::move(views);
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// vector register ops
//===----------------------------------------------------------------------===//

llvm::Error Interpreter::execVector(Operation *op, const llvm::BitVector &mask,
                                    bool &handled) {
  handled = true;
  // Offset and length of the sub-vector at static `pos` of `type`.
  auto subRange =
      [](VectorType type,
         ArrayRef<int64_t> pos) -> std::optional<std::pair<int64_t, int64_t>> {
    ArrayRef<int64_t> shape = type.getShape();
    int64_t offset = 0;
    for (auto [i, p] : llvm::enumerate(pos)) {
      if (p < 0 || p >= shape[i])
        return std::nullopt;
      offset = offset * shape[i] + p;
    }
    int64_t count = 1;
    for (int64_t d : shape.drop_front(pos.size()))
      count *= d;
    return std::make_pair(offset * count, count);
  };

  if (auto o = dyn_cast<vector::ExtractOp>(op)) {
    if (!o.getDynamicPosition().empty())
      return fail(op, "dynamic positions are not supported");
    auto range = subRange(o.getSourceVectorType(), o.getStaticPosition());
    if (!range)
      return fail(op, "position out of range");
    auto src = get(op, o.getSource());
    if (!src)
      return src.takeError();
    Slot s(range->second, numThreads);
    for (unsigned t : mask.set_bits())
      for (int64_t e = 0; e < range->second; ++e)
        s.at(t, e) = (*src)->at(t, range->first + e);
    slots[o.getResult()] = std::move(s);
    return llvm::Error::success();
  }
  if (auto o = dyn_cast<vector::InsertOp>(op)) {
    if (!o.getDynamicPosition().empty())
      return fail(op, "dynamic positions are not supported");
    auto range = subRange(o.getDestVectorType(), o.getStaticPosition());
    if (!range)
      return fail(op, "position out of range");
    auto dst = get(op, o.getDest());
    if (!dst)
      return dst.takeError();
    auto val = get(op, o.getValueToStore());
    if (!val)
      return val.takeError();
    Slot s = **dst;
    for (unsigned t : mask.set_bits())
      for (int64_t e = 0; e < range->second; ++e)
        s.at(t, range->first + e) = (*val)->at(t, e);
    slots[o.getResult()] = std::move(s);
    return llvm::Error::success();
  }
  if (auto o = dyn_cast<vector::FromElementsOp>(op)) {
    Slot s(o.getElements().size(), numThreads);
    for (auto [e, v] : llvm::enumerate(o.getElements())) {
      auto src = get(op, v);
      if (!src)
        return src.takeError();
      for (unsigned t : mask.set_bits())
        s.at(t, e) = (*src)->at(t, 0);
    }
    slots[o.getResult()] = std::move(s);
    return llvm::Error::success();
  }
  if (auto o = dyn_cast<vector::BroadcastOp>(op)) {
    VectorType resType = o.getResultVectorType();
    auto srcVec = dyn_cast<VectorType>(o.getSourceType());
    // Only replication along new leading dimensions (and scalars).
    if (srcVec && !resType.getShape()
                       .take_back(srcVec.getRank())
                       .equals(srcVec.getShape()))
      return fail(op, "only broadcasts that add leading dimensions are "
                      "supported");
    auto src = get(op, o.getSource());
    if (!src)
      return src.takeError();
    unsigned width = numEntries(resType), srcWidth = (*src)->width;
    Slot s(width, numThreads);
    for (unsigned t : mask.set_bits())
      for (unsigned e = 0; e < width; ++e)
        s.at(t, e) = (*src)->at(t, e % srcWidth);
    slots[o.getResult()] = std::move(s);
    return llvm::Error::success();
  }
  if (auto o = dyn_cast<vector::ShapeCastOp>(op)) {
    auto src = get(op, o.getSource());
    if (!src)
      return src.takeError();
    slots[o.getResult()] = **src;
    return llvm::Error::success();
  }
  if (auto o = dyn_cast<vector::BitCastOp>(op)) {
    Type inElem = o.getSourceVectorType().getElementType();
    Type outElem = o.getResultVectorType().getElementType();
    if (bitWidth(inElem) % 8 || bitWidth(outElem) % 8)
      return fail(op, "sub-byte element types are not supported");
    auto src = get(op, o.getSource());
    if (!src)
      return src.takeError();
    int64_t inBytes = byteWidth(inElem), outBytes = byteWidth(outElem);
    unsigned inCount = (*src)->width;
    unsigned outCount = numEntries(o.getResultVectorType());
    Slot s(outCount, numThreads);
    // Element 0 goes to the low bytes (little endian), as on the GPU.
    std::vector<uint8_t> bytes(inCount * inBytes);
    for (unsigned t : mask.set_bits()) {
      for (unsigned e = 0; e < inCount; ++e)
        storeBytes(&bytes[e * inBytes], inBytes, (*src)->at(t, e));
      for (unsigned e = 0; e < outCount; ++e)
        s.at(t, e) = loadBytes(&bytes[e * outBytes], outBytes);
    }
    slots[o.getResult()] = std::move(s);
    return llvm::Error::success();
  }
  handled = false;
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// Warp collectives and async copies
//===----------------------------------------------------------------------===//

llvm::Error Interpreter::execShuffle(gpu::ShuffleOp op,
                                     const llvm::BitVector &mask) {
  if (!isScalar(op.getValue().getType()))
    return fail(op, "only scalar shuffles are supported");
  auto value = get(op, op.getValue());
  if (!value)
    return value.takeError();
  auto offset = get(op, op.getOffset());
  if (!offset)
    return offset.takeError();
  auto width = get(op, op.getWidth());
  if (!width)
    return width.takeError();
  // NVVM lowers a shuffle of width w < 32 with the member mask of lanes
  // [0, w): exactly those lanes of each participating warp must take part
  // (a block of 4 threads shuffles with width 4). Width 32 needs full warps.
  int64_t shuffleWidth = mask.any() ? (*width)->at(mask.find_first(), 0) : 32;
  if (shuffleWidth == kWarpSize) {
    if (llvm::Error e = checkFullWarps(op, mask))
      return e;
  } else {
    if (shuffleWidth <= 0 || shuffleWidth > kWarpSize ||
        !llvm::isPowerOf2_64(shuffleWidth))
      return fail(op, "width must be a power of two up to 32");
    for (int64_t base = 0; base < numThreads; base += kWarpSize) {
      bool any = false, all = true;
      for (int64_t lane = 0; lane < kWarpSize; ++lane) {
        bool member = lane < shuffleWidth;
        bool active = base + lane < numThreads && mask[base + lane];
        any |= active;
        if (member != active)
          all = false;
      }
      if (any && !all)
        return fail(op, "a shuffle of width " + std::to_string(shuffleWidth) +
                            " needs exactly lanes 0.." +
                            std::to_string(shuffleWidth - 1) + " of warp " +
                            std::to_string(base / kWarpSize) + " active");
    }
  }
  Slot result(1, numThreads), valid(1, numThreads);
  for (unsigned t : mask.set_bits()) {
    if ((*width)->at(t, 0) != shuffleWidth)
      return fail(op, "non-uniform shuffle width");
    int64_t lane = t % kWarpSize, base = t - lane;
    int64_t off = signExtend((*offset)->at(t, 0), 32);
    int64_t src = 0;
    switch (op.getMode()) {
    case gpu::ShuffleMode::XOR:
      src = lane ^ off;
      break;
    case gpu::ShuffleMode::DOWN:
      src = lane + off;
      break;
    case gpu::ShuffleMode::UP:
      src = lane - off;
      break;
    case gpu::ShuffleMode::IDX:
      src = off;
      break;
    }
    bool ok = src >= 0 && src < shuffleWidth;
    valid.at(t, 0) = ok;
    // Out-of-range lanes get their own value back, as shfl.sync does.
    result.at(t, 0) = (*value)->at(ok ? base + src : t, 0);
  }
  slots[op.getShuffleResult()] = std::move(result);
  slots[op.getValid()] = std::move(valid);
  return llvm::Error::success();
}

llvm::Error Interpreter::execLdMatrix(nvgpu::LdMatrixOp op,
                                      const llvm::BitVector &mask) {
  if (llvm::Error e = checkFullWarps(op, mask))
    return e;
  auto m = getMemRef(op, op.getSrcMemref());
  if (!m)
    return m.takeError();
  int64_t tiles = op.getNumTiles();
  if ((tiles != 1 && tiles != 2 && tiles != 4) || m->elemBytes != 2 ||
      numEntries(op.getRes().getType()) != tiles * 2)
    return fail(op, "only x1/x2/x4 ldmatrix of 16-bit elements is supported");
  if (!buffers[m->buffer].shared)
    return fail(op, "ldmatrix source must be shared memory");
  Slot result(tiles * 2, numThreads);
  Buffer &buf = buffers[m->buffer];
  for (int64_t base = 0; base < numThreads; base += kWarpSize) {
    if (!mask[base])
      continue;
    // mat[r][row][col]: row k of matrix r comes from lane 8r+k's address.
    uint16_t mat[4][8][8];
    for (int64_t r = 0; r < tiles; ++r) {
      for (int64_t k = 0; k < 8; ++k) {
        int64_t lane = base + 8 * r + k;
        auto idx = indicesOf(op, op.getIndices(), lane);
        if (!idx)
          return idx.takeError();
        auto off = locate(op, *m, *idx, 8, lane);
        if (!off)
          return off.takeError();
        if (llvm::Error e =
                checkAccess(op, m->buffer, *off, 16, lane, Access::Read))
          return e;
        for (int64_t c = 0; c < 8; ++c)
          mat[r][k][c] = loadBytes(buf.data + *off + 2 * c, 2);
      }
    }
    for (int64_t l = 0; l < kWarpSize; ++l) {
      for (int64_t r = 0; r < tiles; ++r) {
        for (int64_t h = 0; h < 2; ++h) {
          uint16_t v = op.getTranspose() ? mat[r][2 * (l % 4) + h][l / 4]
                                         : mat[r][l / 4][2 * (l % 4) + h];
          result.at(base + l, r * 2 + h) = v;
        }
      }
    }
  }
  slots[op.getRes()] = std::move(result);
  return llvm::Error::success();
}

llvm::Error Interpreter::execAsyncCopy(nvgpu::DeviceAsyncCopyOp op,
                                       const llvm::BitVector &mask) {
  auto dst = getMemRef(op, op.getDst());
  if (!dst)
    return dst.takeError();
  auto src = getMemRef(op, op.getSrc());
  if (!src)
    return src.takeError();
  if (src->elemBytes != dst->elemBytes)
    return fail(op, "source and destination element sizes differ");
  int64_t count = op.getDstElements().getZExtValue();
  const Slot *srcElems = nullptr;
  if (Value v = op.getSrcElements()) {
    auto s = get(op, v);
    if (!s)
      return s.takeError();
    srcElems = *s;
  }
  for (unsigned t : mask.set_bits()) {
    int64_t n = srcElems ? signExtend(srcElems->at(t, 0), 64) : count;
    if (n < 0 || n > count)
      return fail(op, llvm::formatv("thread {0}: srcElements {1} outside "
                                    "[0, {2}]",
                                    t, n, count));
    auto dIdx = indicesOf(op, op.getDstIndices(), t);
    if (!dIdx)
      return dIdx.takeError();
    auto dOff = locate(op, *dst, *dIdx, count, t);
    if (!dOff)
      return dOff.takeError();
    int64_t sOff = 0;
    // A zero-length source is never read, so its address may be anything.
    if (n > 0) {
      auto sIdx = indicesOf(op, op.getSrcIndices(), t);
      if (!sIdx)
        return sIdx.takeError();
      auto off = locate(op, *src, *sIdx, n, t);
      if (!off)
        return off.takeError();
      sOff = *off;
      if (llvm::Error e = checkAccess(op, src->buffer, sOff, n * src->elemBytes,
                                      t, Access::Read))
        return e;
    }
    if (llvm::Error e =
            checkAccess(op, dst->buffer, *dOff, count * dst->elemBytes, t,
                        Access::AsyncIssue))
      return e;
    uncommitted[t].push_back(PendingCopy{src->buffer, dst->buffer, sOff,
                                         n * src->elemBytes, *dOff,
                                         count * dst->elemBytes});
  }
  slots[op.getAsyncToken()] = Slot(1, numThreads);
  return llvm::Error::success();
}

llvm::Error Interpreter::execMma(NVVM::MmaOp op, const llvm::BitVector &mask) {
  if (llvm::Error e = checkFullWarps(op, mask))
    return e;
  NVVM::MMAShapeAttr shape = op.getShapeAttr();
  auto typeA = op.getMultiplicandAPtxType();
  auto typeB = op.getMultiplicandBPtxType();
  bool isBf16 = typeA == NVVM::MMATypes::bf16;
  auto resType = dyn_cast<LLVM::LLVMStructType>(op.getRes().getType());
  if (shape.getM() != 16 || shape.getN() != 8 || shape.getK() != 16 || !typeA ||
      typeA != typeB ||
      (*typeA != NVVM::MMATypes::bf16 && *typeA != NVVM::MMATypes::f16) ||
      op.getLayoutA() != NVVM::MMALayout::row ||
      op.getLayoutB() != NVVM::MMALayout::col || op.getOperandA().size() != 4 ||
      op.getOperandB().size() != 2 || op.getOperandC().size() != 4 ||
      !resType || resType.getBody().size() != 4 ||
      !llvm::all_of(resType.getBody(), [](Type t) { return t.isF32(); }) ||
      !llvm::all_of(op.getOperandC().getTypes(),
                    [](Type t) { return t.isF32(); }))
    return fail(op, "only row.col m16n8k16 with bf16/f16 multiplicands and "
                    "f32 accumulators is supported");

  // Each multiplicand register holds two 16-bit values, the lower k index
  // in the low half, whether typed as i32 or vector<2xT>.
  auto halves = [&](Value v,
                    int64_t t) -> llvm::Expected<std::pair<float, float>> {
    auto s = get(op, v);
    if (!s)
      return s.takeError();
    uint64_t lo, hi;
    if ((*s)->width == 2) {
      lo = (*s)->at(t, 0);
      hi = (*s)->at(t, 1);
    } else {
      lo = (*s)->at(t, 0) & 0xFFFF;
      hi = ((*s)->at(t, 0) >> 16) & 0xFFFF;
    }
    auto conv = [&](uint64_t b) {
      return isBf16 ? bf16ToFloat(b) : f16ToFloat(b);
    };
    return std::make_pair(conv(lo), conv(hi));
  };
  auto operandsA = op.getOperandA(), operandsB = op.getOperandB(),
       operandsC = op.getOperandC();
  SmallVector<const Slot *> c;
  for (Value v : operandsC) {
    auto s = get(op, v);
    if (!s)
      return s.takeError();
    c.push_back(*s);
  }

  Slot result(4, numThreads);
  for (int64_t base = 0; base < numThreads; base += kWarpSize) {
    if (!mask[base])
      continue;
    float a[16][16], b[16][8], acc[16][8];
    for (int64_t l = 0; l < kWarpSize; ++l) {
      int64_t g = l / 4, t = l % 4, lane = base + l;
      // a0..a3: rows g, g+8, g, g+8; column pairs 2t, 2t, 2t+8, 2t+8.
      const int64_t aRow[4] = {g, g + 8, g, g + 8};
      const int64_t aCol[4] = {2 * t, 2 * t, 2 * t + 8, 2 * t + 8};
      for (int i = 0; i < 4; ++i) {
        auto h = halves(operandsA[i], lane);
        if (!h)
          return h.takeError();
        a[aRow[i]][aCol[i]] = h->first;
        a[aRow[i]][aCol[i] + 1] = h->second;
      }
      for (int i = 0; i < 2; ++i) {
        auto h = halves(operandsB[i], lane);
        if (!h)
          return h.takeError();
        b[2 * t + 8 * i][g] = h->first;
        b[2 * t + 8 * i + 1][g] = h->second;
      }
      for (int i = 0; i < 4; ++i)
        acc[g + 8 * (i / 2)][2 * t + i % 2] = static_cast<float>(
            floatValue(operandsC[i].getType(), c[i]->at(lane, 0)));
    }
    for (int64_t l = 0; l < kWarpSize; ++l) {
      int64_t g = l / 4, t = l % 4;
      for (int i = 0; i < 4; ++i) {
        int64_t row = g + 8 * (i / 2), col = 2 * t + i % 2;
        float sum = acc[row][col];
        for (int k = 0; k < 16; ++k)
          sum += a[row][k] * b[k][col];
        result.at(base + l, i) =
            floatBits(Float32Type::get(op.getContext()), sum);
      }
    }
  }
  slots[op.getRes()] = std::move(result);
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// Hopper: mbarrier, TMA, warpgroup MMA
//===----------------------------------------------------------------------===//

int64_t swizzleBytesOf(nvgpu::TensorMapSwizzleKind kind) {
  switch (kind) {
  case nvgpu::TensorMapSwizzleKind::SWIZZLE_NONE:
    return 0;
  case nvgpu::TensorMapSwizzleKind::SWIZZLE_32B:
    return 32;
  case nvgpu::TensorMapSwizzleKind::SWIZZLE_64B:
    return 64;
  case nvgpu::TensorMapSwizzleKind::SWIZZLE_128B:
    return 128;
  }
  return 0;
}

/// The shared memory address a TMA swizzle (and a wgmma descriptor with the
/// same mode) maps `address` to: the 16-byte chunk index within each
/// `swizzleBytes` span is XORed with the span's index modulo
/// swizzleBytes / 16, i.e. CUTLASS's Swizzle<log2(swizzleBytes / 16), 4, 3>.
int64_t swizzle(int64_t address, int64_t swizzleBytes) {
  if (swizzleBytes == 0)
    return address;
  int64_t chunkMask = swizzleBytes / 16 - 1;
  return address ^ (((address >> 7) & chunkMask) << 4);
}

llvm::Error Interpreter::addTensorMapArg(unsigned index, Value arg,
                                         nvgpu::TensorMapDescriptorType type,
                                         MutableArrayRef<uint8_t> storage) {
  Operation *fop = func.getOperation();
  const TensorMapArg *host = nullptr;
  for (const TensorMapArg &m : config.tensorMaps)
    if (m.argument == index)
      host = &m;
  if (!host)
    return fail(fop, llvm::formatv("argument {0} is a tensor map but "
                                   "LaunchConfig::tensorMaps does not "
                                   "describe it",
                                   index));
  MemRefType box = type.getTensor();
  int64_t rank = box.getRank();
  int64_t elemBytes = byteWidth(box.getElementType());
  if (!box.hasStaticShape() || rank < 1 || rank > 5 ||
      static_cast<int64_t>(host->globalShape.size()) != rank)
    return fail(fop, llvm::formatv("argument {0}: the tensor map's box and "
                                   "global shape need the same rank, 1 to 5",
                                   index));
  TensorMapVal map;
  map.buffer = buffers.size();
  map.type = type;
  map.shape.assign(host->globalShape.begin(), host->globalShape.end());
  if (host->globalStrides.empty()) {
    map.strides.assign(rank, 1);
    for (int64_t d = rank - 2; d >= 0; --d)
      map.strides[d] = map.strides[d + 1] * map.shape[d + 1];
  } else {
    map.strides.assign(host->globalStrides.begin(), host->globalStrides.end());
  }
  if (static_cast<int64_t>(map.strides.size()) != rank ||
      map.strides.back() != 1 ||
      llvm::any_of(ArrayRef(map.strides).drop_back(),
                   [&](int64_t s) { return s <= 0 || s * elemBytes % 16; }))
    return fail(fop, llvm::formatv("argument {0}: tensor map strides must end "
                                   "in 1 and be multiples of 16 bytes",
                                   index));
  int64_t lastByte = elemBytes;
  for (int64_t d = 0; d < rank; ++d) {
    if (map.shape[d] <= 0)
      return fail(fop, llvm::formatv("argument {0}: empty tensor map", index));
    lastByte += (map.shape[d] - 1) * map.strides[d] * elemBytes;
  }
  if (lastByte > static_cast<int64_t>(storage.size()))
    return fail(fop, llvm::formatv("argument {0}: the tensor map spans {1} "
                                   "bytes but its buffer has {2}",
                                   index, lastByte, storage.size()));
  Buffer buf;
  buf.name = llvm::formatv("kernel argument {0}", index).str();
  buf.data = storage.data();
  buf.size = static_cast<int64_t>(storage.size());
  buffers.push_back(std::move(buf));
  tensorMaps[arg] = std::move(map);
  return llvm::Error::success();
}

llvm::Expected<MBarrier *> Interpreter::barrierOf(Operation *op, Value group,
                                                  Value id, int64_t t) {
  auto it = barrierGroups.find(group);
  if (it == barrierGroups.end())
    return fail(op, "mbarrier group does not come from nvgpu.mbarrier.create");
  auto idx = indicesOf(op, id, t);
  if (!idx)
    return idx.takeError();
  std::vector<MBarrier> &barriers = mbarriers[it->second];
  int64_t i = (*idx)[0];
  if (i < 0 || i >= static_cast<int64_t>(barriers.size()))
    return fail(op, llvm::formatv("thread {0}: mbarrier index {1} outside a "
                                  "group of {2}",
                                  t, i, barriers.size()));
  if (!barriers[i].initialized && !isa<nvgpu::MBarrierInitOp>(op))
    return fail(op, llvm::formatv("thread {0} uses mbarrier {1} before "
                                  "nvgpu.mbarrier.init",
                                  t, i));
  return &barriers[i];
}

/// The phase completes once every expected arrival happened and every
/// expected transaction byte landed.
static void completePhaseIfDone(MBarrier &barrier) {
  if (barrier.pending != 0 || barrier.txCount != 0)
    return;
  ++barrier.phase;
  barrier.pending = barrier.expected;
}

llvm::Error Interpreter::arrive(Operation *op, MBarrier &barrier, int64_t count,
                                int64_t t) {
  barrier.pending -= count;
  if (barrier.pending < 0)
    return fail(op, llvm::formatv("thread {0}: more arrivals than the "
                                  "mbarrier's expected count {1}",
                                  t, barrier.expected));
  uint64_t phase = barrier.phase;
  completePhaseIfDone(barrier);
  // Several threads' arrivals order their accesses before the waiters'.
  if (barrier.phase != phase && barrier.expected > 1) {
    ++epoch;
    released = true;
  }
  return llvm::Error::success();
}

void Interpreter::deliver(MBarrier &barrier) {
  for (TmaTransfer &transfer : barrier.inFlight) {
    Buffer &dst = buffers[transfer.dstBuf];
    for (auto &[off, chunk] : transfer.chunks) {
      std::memcpy(dst.data + off, chunk.data(), chunk.size());
      for (int64_t i = off; i < off + 16; ++i) {
        ByteState &s = dst.state[i];
        s.pendingOwner = -1;
        s.pendingIsTma = false;
        s.writer = kAsyncProxyWriter;
        s.writeEpoch = 0;
      }
    }
    barrier.txCount -= transfer.bytes;
  }
  barrier.inFlight.clear();
  completePhaseIfDone(barrier);
}

llvm::Error Interpreter::execClusterBarrier(Operation *op,
                                            const llvm::BitVector &mask) {
  if (static_cast<int64_t>(mask.count()) != numThreads)
    return fail(op, llvm::formatv("cluster barrier reached by {0} of {1} "
                                  "threads (the aligned barrier needs every "
                                  "thread of the CTA)",
                                  mask.count(), numThreads));
  if (!cluster)
    return fail(op, "cluster barrier in a kernel launched without a cluster "
                    "(nvvm.cluster_dim)");
  ClusterState &state = *cluster;
  int64_t self = clusterRank;
  int64_t size = static_cast<int64_t>(state.ctas.size());
  if (!isa<NVVM::ClusterWaitOp>(op)) {
    if (state.arrived[self] != state.waited[self])
      return fail(op, "arrives at the cluster barrier again before waiting "
                      "on its previous arrival");
    // Only the release form orders this CTA's earlier writes before the
    // waiters' later reads.
    ++epoch;
    state.epochAtArrive[self].push_back(
        isa<NVVM::ClusterArriveRelaxedOp>(op) ? 0 : epoch);
    uint64_t phase = ++state.arrived[self];
    // The phase completes: the others run on now, the earliest they could.
    if (llvm::all_of(state.arrived, [&](uint64_t a) { return a >= phase; }))
      state.runners.yield();
    return llvm::Error::success();
  }
  if (state.arrived[self] == state.waited[self])
    return fail(op, "waits on the cluster barrier without arriving");
  uint64_t phase = state.arrived[self];
  while (true) {
    int64_t missing = -1;
    for (int64_t r = 0; r < size; ++r)
      if (state.arrived[r] < phase) {
        missing = r;
        break;
      }
    if (missing < 0)
      break;
    uint64_t seen = state.progress;
    bool exited = state.exited[missing];
    if (exited || !state.runners.yield() || state.progress == seen ||
        state.runners.aborted)
      return fail(
          op, llvm::formatv(
                  "deadlock: CTA {0} of the cluster waits for phase "
                  "{1} of the cluster barrier, which CTA {2} {3}{4}",
                  self, phase, missing,
                  exited ? "exited without arriving at" : "never arrives at",
                  state.runners.aborted ? " (another CTA failed)" : ""));
  }
  state.waited[self] = phase;
  // Every thread of the cluster arrived: a barrier of this CTA as well.
  ++epoch;
  return llvm::Error::success();
}

llvm::Error Interpreter::execSharedLoad(LLVM::LoadOp op,
                                        const llvm::BitVector &mask) {
  auto pointerType = dyn_cast<LLVM::LLVMPointerType>(op.getAddr().getType());
  unsigned space = pointerType ? pointerType.getAddressSpace() : 0;
  bool clusterSpace =
      space == static_cast<unsigned>(NVVM::NVVMMemorySpace::SharedCluster);
  if (!clusterSpace &&
      space != static_cast<unsigned>(NVVM::NVVMMemorySpace::Shared))
    return fail(op, "only loads of shared or cluster-shared memory through "
                    "LLVM pointers are modelled");
  Type type = op.getResult().getType();
  if (!isScalar(type))
    return fail(op, "only scalar loads through LLVM pointers are modelled");
  auto address = get(op, op.getAddr());
  if (!address)
    return address.takeError();
  int64_t bytes = byteWidth(type);
  Slot result(1, numThreads);
  for (unsigned t : mask.set_bits()) {
    uint64_t bits = (*address)->at(t, 0);
    int64_t rank =
        clusterSpace ? static_cast<int64_t>(bits >> 32) : clusterRank;
    int64_t offset = static_cast<int64_t>(bits & 0xffffffffu);
    if (offset + bytes > config.dynamicSharedBytes)
      return fail(op, llvm::formatv("thread {0} loads bytes {1}..{2} past the "
                                    "{3} bytes of dynamic shared memory",
                                    t, offset, offset + bytes,
                                    config.dynamicSharedBytes));
    uint64_t value = 0;
    if (rank == clusterRank) {
      if (llvm::Error e =
              checkAccess(op, dynamicShared, offset, bytes, t, Access::Read))
        return e;
      std::memcpy(&value, buffers[dynamicShared].data + offset, bytes);
    } else {
      ClusterState &state = *cluster;
      if (!state.started[rank])
        return fail(op, llvm::formatv("thread {0} reads never-written shared "
                                      "memory of CTA {1} of its cluster (it "
                                      "has not started)",
                                      t, rank));
      if (state.exited[rank])
        return fail(op, llvm::formatv(
                            "thread {0} reads the shared memory of CTA {1} of "
                            "its cluster after that CTA exited (no cluster "
                            "barrier keeps it alive)",
                            t, rank));
      Interpreter &owner = *state.ctas[rank];
      const Buffer &buffer = owner.buffers[owner.dynamicShared];
      uint64_t phase = state.waited[clusterRank];
      uint32_t released = phase == 0 ? 0 : state.epochAtArrive[rank][phase - 1];
      for (int64_t i = offset; i < offset + bytes; ++i) {
        const ByteState &byte = buffer.state[i];
        if (byte.writer == -1 || byte.pendingOwner >= 0)
          return fail(op, llvm::formatv("thread {0} reads byte {1} of CTA "
                                        "{2}'s shared memory, never written "
                                        "(or in flight)",
                                        t, i, rank));
        if (byte.writeEpoch >= released)
          return fail(
              op, llvm::formatv("data race: thread {0} reads byte {1} of CTA "
                                "{2}'s shared memory, written after that CTA's "
                                "last release arrival at a cluster barrier "
                                "phase this CTA waited on",
                                t, i, rank));
      }
      std::memcpy(&value, buffer.data + offset, bytes);
    }
    result.at(t, 0) = value;
  }
  slots[op.getResult()] = std::move(result);
  return llvm::Error::success();
}

llvm::Error Interpreter::execTryWait(nvgpu::MBarrierTryWaitParityOp op,
                                     const llvm::BitVector &mask) {
  auto parity = get(op, op.getPhaseParity());
  if (!parity)
    return parity.takeError();
  // A copy: other runners may grow `slots` while this one waits.
  Slot parities = **parity;
  for (unsigned t : mask.set_bits()) {
    auto barrier = barrierOf(op, op.getBarriers(), op.getMbarId(), t);
    if (!barrier)
      return barrier.takeError();
    MBarrier &b = **barrier;
    uint64_t p = parities.at(t, 0) & 1;
    // Waiting for the phase of parity p: done once the current phase has the
    // other parity. Blocked, the thread lets in-flight TMA loads land; other
    // runners (warp specialization) go while it waits; in lockstep no other
    // thread of the block runs.
    if ((b.phase & 1) != p)
      continue;
    deliver(b);
    // Blocked: let the other runners go until the phase completes or a
    // whole round of them executes nothing.
    for (MBarrier *now = &b; (now->phase & 1) == p;) {
      uint64_t seen = progress;
      if (!runners->yield() || progress == seen || runners->aborted)
        return fail(op,
                    llvm::formatv(
                        "deadlock: thread {0} waits for phase {1} (parity "
                        "{2}) of an mbarrier that can never complete it: "
                        "{3} arrival(s) and {4} transaction byte(s) still "
                        "missing after every issued TMA load landed{5}",
                        t, now->phase, p, now->pending, now->txCount,
                        runners->aborted ? " (another warpgroup failed)" : ""));
      // Other runners may have grown the containers: look it up again.
      auto again = barrierOf(op, op.getBarriers(), op.getMbarId(), t);
      if (!again)
        return again.takeError();
      now = *again;
      deliver(*now);
    }
  }
  return llvm::Error::success();
}

llvm::Expected<const TensorMapVal *> Interpreter::tensorMapOf(Operation *op,
                                                              Value v) {
  auto it = tensorMaps.find(v);
  if (it == tensorMaps.end())
    return fail(op, "tensor map must be a kernel argument");
  return &it->second;
}

/// Calls `fn(boxOffset, globalOffset)` for every element of the box at
/// `coords` (innermost first, as PTX orders them): byte offsets in the
/// dense box and in the global tensor, the latter nullopt outside it.
static void forEachBoxElement(
    const TensorMapVal &map, ArrayRef<int64_t> coords,
    llvm::function_ref<void(int64_t, std::optional<int64_t>)> fn) {
  ArrayRef<int64_t> box = map.type.getTensor().getShape();
  int64_t rank = box.size();
  int64_t elemBytes = byteWidth(map.type.getTensor().getElementType());
  int64_t count = map.type.getTensor().getNumElements();
  SmallVector<int64_t> pos(rank, 0);
  for (int64_t e = 0; e < count; ++e) {
    int64_t rem = e;
    for (int64_t d = rank - 1; d >= 0; --d) {
      pos[d] = rem % box[d];
      rem /= box[d];
    }
    bool inside = true;
    int64_t global = 0;
    for (int64_t d = 0; d < rank; ++d) {
      int64_t g = coords[rank - 1 - d] + pos[d];
      inside &= g >= 0 && g < map.shape[d];
      global += g * map.strides[d];
    }
    fn(e * elemBytes,
       inside ? std::optional<int64_t>(global * elemBytes) : std::nullopt);
  }
}

/// Checks the box against TMA's rules and the shared memory side `m`;
/// returns the box's size in bytes.
static std::optional<std::string>
checkTmaBox(const TensorMapVal &map, const MemRefVal &m, const Buffer &smem) {
  nvgpu::TensorMapDescriptorType type = map.type;
  MemRefType box = type.getTensor();
  int64_t elemBytes = byteWidth(box.getElementType());
  int64_t boxBytes = box.getNumElements() * elemBytes;
  int64_t innerBytes = box.getShape().back() * elemBytes;
  int64_t sw = swizzleBytesOf(type.getSwizzle());
  if (type.getInterleave() != nvgpu::TensorMapInterleaveKind::INTERLEAVE_NONE)
    return std::string("only interleave = none tensor maps are supported");
  if (box.getElementType() != m.elemType)
    return std::string("the shared memory element type differs from the "
                       "tensor map's");
  if (innerBytes % 16)
    return llvm::formatv("the box's inner dimension spans {0} bytes, not a "
                         "multiple of 16",
                         innerBytes)
        .str();
  if (sw && innerBytes != sw)
    return llvm::formatv("the box's inner dimension spans {0} bytes but "
                         "swizzle {1}B needs exactly {1}",
                         innerBytes, sw)
        .str();
  if (!smem.shared)
    return std::string("the TMA shared memory operand is in global memory");
  if (m.byteOffset % 128)
    return llvm::formatv("shared memory operand at byte {0} is not 128-byte "
                         "aligned",
                         m.byteOffset)
        .str();
  int64_t viewBytes = m.elemBytes;
  for (int64_t d : m.shape)
    viewBytes *= d;
  if (viewBytes < boxBytes)
    return llvm::formatv("the {0}-byte box does not fit the {1}-byte shared "
                         "memory operand",
                         boxBytes, viewBytes)
        .str();
  return std::nullopt;
}

llvm::Error Interpreter::execTmaLoad(nvgpu::TmaAsyncLoadOp op,
                                     const llvm::BitVector &mask) {
  if (op.getMulticastMask())
    return fail(op, "TMA multicast is not supported");
  auto map = tensorMapOf(op, op.getTensorMapDescriptor());
  if (!map)
    return map.takeError();
  auto dst = getMemRef(op, op.getDst());
  if (!dst)
    return dst.takeError();
  Buffer &smem = buffers[dst->buffer];
  if (std::optional<std::string> bad = checkTmaBox(**map, *dst, smem))
    return fail(op, *bad);
  nvgpu::TensorMapDescriptorType type = (*map)->type;
  MemRefType box = type.getTensor();
  int64_t elemBytes = byteWidth(box.getElementType());
  int64_t boxBytes = box.getNumElements() * elemBytes;
  int64_t sw = swizzleBytesOf(type.getSwizzle());
  // Out-of-bounds elements read as zero, or as a quiet NaN for oob = nan.
  uint64_t fill = 0;
  if (type.getOob() == nvgpu::TensorMapOOBKind::OOB_NAN)
    fill = floatBits(box.getElementType(),
                     std::numeric_limits<double>::quiet_NaN());
  const Slot *predicate = nullptr;
  if (Value p = op.getPredicate()) {
    auto s = get(op, p);
    if (!s)
      return s.takeError();
    predicate = *s;
  }
  const Buffer &global = buffers[(*map)->buffer];
  std::vector<uint8_t> staged(boxBytes);
  for (unsigned t : mask.set_bits()) {
    if (predicate && !(predicate->at(t, 0) & 1))
      continue;
    auto coords = indicesOf(op, op.getCoordinates(), t);
    if (!coords)
      return coords.takeError();
    auto barrier = barrierOf(op, op.getBarriers(), op.getMbarId(), t);
    if (!barrier)
      return barrier.takeError();
    forEachBoxElement(
        **map, *coords, [&](int64_t boxOff, std::optional<int64_t> globalOff) {
          if (globalOff)
            std::memcpy(&staged[boxOff], global.data + *globalOff, elemBytes);
          else
            storeBytes(&staged[boxOff], elemBytes, fill);
        });
    TmaTransfer transfer{dst->buffer, boxBytes, {}};
    for (int64_t c = 0; c < boxBytes; c += 16) {
      int64_t off = swizzle(dst->byteOffset + c, sw);
      if (llvm::Error e =
              checkAccess(op, dst->buffer, off, 16, t, Access::TmaIssue))
        return e;
      std::array<uint8_t, 16> chunk;
      std::memcpy(chunk.data(), &staged[c], 16);
      transfer.chunks.emplace_back(off, chunk);
    }
    (*barrier)->inFlight.push_back(std::move(transfer));
  }
  return llvm::Error::success();
}

llvm::Error Interpreter::execTmaStore(nvgpu::TmaAsyncStoreOp op,
                                      const llvm::BitVector &mask) {
  auto map = tensorMapOf(op, op.getTensorMapDescriptor());
  if (!map)
    return map.takeError();
  auto src = getMemRef(op, op.getSrc());
  if (!src)
    return src.takeError();
  if (std::optional<std::string> bad =
          checkTmaBox(**map, *src, buffers[src->buffer]))
    return fail(op, *bad);
  MemRefType box = (*map)->type.getTensor();
  int64_t elemBytes = byteWidth(box.getElementType());
  int64_t sw = swizzleBytesOf((*map)->type.getSwizzle());
  const Slot *predicate = nullptr;
  if (Value p = op.getPredicate()) {
    auto s = get(op, p);
    if (!s)
      return s.takeError();
    predicate = *s;
  }
  Buffer &global = buffers[(*map)->buffer];
  const Buffer &smem = buffers[src->buffer];
  for (unsigned t : mask.set_bits()) {
    if (predicate && !(predicate->at(t, 0) & 1))
      continue;
    auto coords = indicesOf(op, op.getCoordinates(), t);
    if (!coords)
      return coords.takeError();
    llvm::Error error = llvm::Error::success();
    // Elements outside the tensor are not written.
    forEachBoxElement(
        **map, *coords, [&](int64_t boxOff, std::optional<int64_t> globalOff) {
          int64_t off = swizzle(src->byteOffset + boxOff, sw);
          if (error)
            return;
          if (llvm::Error e =
                  checkAccess(op, src->buffer, off, elemBytes, t, Access::Read))
            error = std::move(e);
          else if (globalOff)
            std::memcpy(global.data + *globalOff, smem.data + off, elemBytes);
        });
    if (error)
      return error;
  }
  return llvm::Error::success();
}

llvm::Error
Interpreter::execWgmmaDescriptor(nvgpu::WarpgroupGenerateDescriptorOp op,
                                 const llvm::BitVector &mask) {
  // The fields MLIR 22's lowering encodes (in 16-byte units, as here in
  // bytes): the stride byte offset is 8 rows of the swizzle span, the
  // leading byte offset the tensor map box's rows times that span.
  nvgpu::TensorMapDescriptorType mapType = op.getTensorMap().getType();
  int64_t sw = swizzleBytesOf(mapType.getSwizzle());
  int64_t layout = sw ? sw : 1;
  int64_t sizeN = mapType.getTensor().getDimSize(0);
  SmallVector<WgmmaDesc, 4> descs(numWarpgroups);
  for (auto [warpgroup, desc] : llvm::enumerate(descs)) {
    if (!mask[warpgroup * kWarpgroupSize])
      continue;
    auto m = getWarpgroupMemRef(op, op.getTensor(), warpgroup);
    if (!m)
      return m.takeError();
    if (!buffers[m->buffer].shared)
      return fail(op, "the matrix must be in shared memory");
    if (m->byteOffset % 16)
      return fail(op, llvm::formatv("matrix start at byte {0} is not 16-byte "
                                    "aligned",
                                    m->byteOffset));
    desc.buffer = m->buffer;
    desc.start = m->byteOffset;
    desc.strideBytes = ((layout << 3) >> 4) << 4;
    desc.leadingBytes = ((sizeN * layout) >> 4) << 4;
    desc.swizzleBytes = sw;
  }
  wgmmaDescs[op.getDescriptor()] = std::move(descs);
  return llvm::Error::success();
}

llvm::Error Interpreter::checkFullWarpgroups(Operation *op,
                                             const llvm::BitVector &mask) {
  for (int64_t base = 0; base < numThreads; base += kWarpgroupSize) {
    int64_t active = 0;
    for (int64_t t = base; t < std::min(base + kWarpgroupSize, numThreads); ++t)
      active += mask[t];
    if (active != 0 && active != kWarpgroupSize)
      return fail(op, llvm::formatv("warpgroup op executed by {0} of the 128 "
                                    "threads of warpgroup {1} (divergent or "
                                    "partial warpgroup)",
                                    active, base / kWarpgroupSize));
  }
  return llvm::Error::success();
}

/// Byte address of element (x, k) of a wgmma operand, x being its M (A) or
/// N (B) index, in the canonical layouts of PTX's "Shared Memory Matrix
/// Layout" (CUTLASS make_gmma_desc), before the swizzle. A K-major core
/// matrix is 8 rows of 16 bytes (8 16-bit or 16 8-bit elements).
static int64_t wgmmaElementAddress(const WgmmaDesc &d, int64_t start,
                                   bool kMajor, int64_t x, int64_t k,
                                   int64_t elemBytes) {
  int64_t sw = d.swizzleBytes;
  int64_t perCore = 16 / elemBytes;
  if (kMajor) {
    // Rows of x, each holding k contiguously; 8-row groups SBO apart.
    if (sw == 0)
      return start + (x / 8) * d.strideBytes + (x % 8) * 16 +
             (k / perCore) * d.leadingBytes + (k % perCore) * elemBytes;
    return start + (x / 8) * d.strideBytes + (x % 8) * sw + k * elemBytes;
  }
  // Rows of k, each holding x contiguously.
  if (sw == 0)
    return start + (x / 8) * d.strideBytes + (x % 8) * elemBytes +
           (k / 8) * d.leadingBytes + (k % 8) * 16;
  int64_t perRow = sw / elemBytes;
  return start + (x / perRow) * d.leadingBytes + (x % perRow) * elemBytes +
         (k / 8) * d.strideBytes + (k % 8) * sw;
}

/// `acc` plus the products of `a` and `b` (`count` each), summed as a
/// tensor core of `bits` accumulation bits is modelled to
/// (DeviceModel::fp8AccumulatorBits): every addend truncated toward zero
/// to a multiple of 2^(e - bits), e the exponent of the largest, then the
/// exact sum rounded to f32. The products of fp8 values are exact in f32.
static float sumTruncated(float acc, const float *a, const float *b,
                          int64_t count, int bits) {
  llvm::SmallVector<double, 33> terms{acc};
  for (int64_t k = 0; k < count; ++k)
    terms.push_back(static_cast<double>(a[k]) * b[k]);
  double largest = 0;
  for (double term : terms)
    largest = std::max(largest, std::fabs(term));
  if (largest == 0 || !std::isfinite(largest)) {
    for (int64_t k = 0; k < count; ++k)
      acc += a[k] * b[k];
    return acc;
  }
  double quantum = std::ldexp(1.0, std::ilogb(largest) - bits);
  double sum = 0;
  for (double term : terms)
    sum += std::trunc(term / quantum) * quantum;
  return static_cast<float>(sum);
}

llvm::Error Interpreter::execWgmma(nvgpu::WarpgroupMmaOp op,
                                   const llvm::BitVector &mask) {
  if (llvm::Error e = checkFullWarpgroups(op, mask))
    return e;
  auto descA = wgmmaDescs.find(op.getDescriptorA());
  auto descB = wgmmaDescs.find(op.getDescriptorB());
  if (descA == wgmmaDescs.end() || descB == wgmmaDescs.end())
    return fail(op, "matrix descriptors must come from "
                    "nvgpu.warpgroup.generate.descriptor");
  MemRefType typeA = op.getDescriptorA().getType().getTensor();
  MemRefType typeB = op.getDescriptorB().getType().getTensor();
  VectorType accType = op.getMatrixC().getType().getFragmented();
  Type elemA = typeA.getElementType(), elemB = typeB.getElementType();
  int64_t totalM = typeA.getDimSize(0), totalK = typeA.getDimSize(1);
  int64_t totalN = typeB.getDimSize(1);
  // bf16 x bf16 or f16 x f16 (m64nNk16), or fp8 of either format on both
  // sides (m64nNk32): each instruction's K is 32 bytes.
  bool fp8 = isFp8(elemA) && isFp8(elemB);
  if (!(fp8 || ((elemA.isBF16() || elemA.isF16()) && elemB == elemA)) ||
      !accType.getElementType().isF32())
    return fail(op, "only bf16/f16 or fp8 (e4m3/e5m2) multiplicands with f32 "
                    "accumulators are supported");
  int64_t elemBytes = fp8 ? 1 : 2;
  int64_t instrK = 32 / elemBytes;
  if (totalM % 64 || totalK % instrK || totalN % 8 || totalN > 256 ||
      accType.getDimSize(0) != totalM || accType.getDimSize(1) != totalN)
    return fail(op, llvm::formatv("shapes must be M = 64m, K = {0}k, N = 8n "
                                  "<= 256 with a matching accumulator",
                                  instrK));
  bool kMajorA = !op.getTransposeA().value_or(false);
  bool kMajorB = !op.getTransposeB().value_or(false);
  if (fp8 && !(kMajorA && kMajorB))
    return fail(op, "fp8 wgmma reads both operands K-major (no transpose)");
  auto accIn = get(op, op.getMatrixC());
  if (!accIn)
    return accIn.takeError();

  Slot result = **accIn;
  for (int64_t base = 0; base < numThreads; base += kWarpgroupSize)
    if (mask[base])
      result.wgmmaGroup = ++wgmmaCommitted[base / kWarpgroupSize];
  int64_t regsPerBlock = totalN / 2;
  float a[64][32];
  std::vector<std::array<float, 32>> bT(totalN); // bT[n][k]
  // Loads element (x, k) of an operand through its descriptor; `reader` is
  // the warpgroup's first thread, for the race checks.
  // The bytes each operand's reads span, per warpgroup (0: A, 1: B).
  std::array<int64_t, 2> readLo, readHi;
  auto readOperand = [&](const WgmmaDesc &d, int64_t start, bool kMajor,
                         int64_t x, int64_t k, int64_t reader,
                         int operand) -> llvm::Expected<float> {
    int64_t off = swizzle(
        wgmmaElementAddress(d, start, kMajor, x, k, elemBytes), d.swizzleBytes);
    readLo[operand] = std::min(readLo[operand], off);
    readHi[operand] = std::max(readHi[operand], off + 1);
    Buffer &buf = buffers[d.buffer];
    if (off < 0 || off + elemBytes > buf.size)
      return fail(op, llvm::formatv("descriptor reads byte {0} outside the "
                                    "{1}-byte {2}",
                                    off, buf.size, buf.name));
    if (llvm::Error e =
            checkAccess(op, d.buffer, off, elemBytes, reader, Access::Read))
      return std::move(e);
    return static_cast<float>(floatValue(operand == 0 ? elemA : elemB,
                                         loadBytes(buf.data + off, elemBytes)));
  };

  for (int64_t base = 0; base < numThreads; base += kWarpgroupSize) {
    if (!mask[base])
      continue;
    // This warpgroup's descriptors.
    const WgmmaDesc &a0 = descA->second[base / kWarpgroupSize];
    const WgmmaDesc &b0 = descB->second[base / kWarpgroupSize];
    readLo.fill(std::numeric_limits<int64_t>::max());
    readHi.fill(std::numeric_limits<int64_t>::min());
    // The lowering's instruction sequence: one m64nNk16 (k32) per (i, k),
    // the descriptors advanced as NVGPUToNVVM's iterateDescriptorA/B do.
    for (int64_t i = 0; i < totalM / 64; ++i) {
      for (int64_t k = 0; k < totalK / instrK; ++k) {
        int64_t stepA =
            ((instrK * k + totalK * totalK * i) * elemBytes) >> 4 << 4;
        int64_t stepB =
            (typeB.getDimSize(0) * instrK * k * elemBytes) >> 4 << 4;
        for (int64_t r = 0; r < 64; ++r)
          for (int64_t kk = 0; kk < instrK; ++kk) {
            auto v = readOperand(a0, a0.start + stepA, kMajorA, r, kk, base, 0);
            if (!v)
              return v.takeError();
            a[r][kk] = *v;
          }
        for (int64_t n = 0; n < totalN; ++n)
          for (int64_t kk = 0; kk < instrK; ++kk) {
            auto v = readOperand(b0, b0.start + stepB, kMajorB, n, kk, base, 1);
            if (!v)
              return v.takeError();
            bT[n][kk] = *v;
          }
        // PTX's wgmma .m64nNk16 D fragment: warp w of the warpgroup owns
        // rows 16w..16w+15; register 4j+q of lane l holds row
        // 16w + l/4 + 8(q/2), column 8j + 2(l%4) + q%2.
        for (int64_t l = 0; l < kWarpgroupSize; ++l) {
          int64_t t = base + l, warp = l / kWarpSize, lane = l % kWarpSize;
          for (int64_t reg = 0; reg < regsPerBlock; ++reg) {
            int64_t j = reg / 4, q = reg % 4;
            int64_t row = 16 * warp + lane / 4 + 8 * (q / 2);
            int64_t col = 8 * j + 2 * (lane % 4) + q % 2;
            uint64_t &bits = result.at(t, i * regsPerBlock + reg);
            float sum = static_cast<float>(
                floatValue(Float32Type::get(op.getContext()), bits));
            if (fp8 && config.device.fp8AccumulatorBits > 0) {
              sum = sumTruncated(sum, a[row], bT[col].data(), instrK,
                                 config.device.fp8AccumulatorBits);
            } else {
              for (int64_t kk = 0; kk < instrK; ++kk)
                sum += a[row][kk] * bT[col][kk];
            }
            bits = floatBits(Float32Type::get(op.getContext()), sum);
          }
        }
      }
    }
    int64_t warpgroup = base / kWarpgroupSize;
    wgmmaReads.push_back({warpgroup, wgmmaCommitted[warpgroup], a0.buffer,
                          readLo[0], readHi[0]});
    wgmmaReads.push_back({warpgroup, wgmmaCommitted[warpgroup], b0.buffer,
                          readLo[1], readHi[1]});
  }
  // The lowering ends with wgmma.wait_group(waitGroup).
  completeWgmmaGroups(mask, op.getWaitGroup());
  slots[op.getMatrixD()] = std::move(result);
  return llvm::Error::success();
}

llvm::Error
Interpreter::checkAccumulatorCompleted(Operation *op, const Slot &acc,
                                       const llvm::BitVector &mask) {
  for (int64_t base = 0; base < numThreads; base += kWarpgroupSize)
    if (mask[base] && acc.wgmmaGroup > wgmmaCompleted[base / kWarpgroupSize])
      return fail(op, "reads an accumulator whose wgmma group is still in "
                      "flight (missing nvvm.wgmma.wait.group.sync.aligned?)");
  return llvm::Error::success();
}

llvm::Error Interpreter::execWarpgroupAccumulate(WarpgroupAccumulateOp op,
                                                 const llvm::BitVector &mask) {
  if (llvm::Error e = checkFullWarpgroups(op, mask))
    return e;
  auto acc = get(op, op.getAccumulator());
  if (!acc)
    return acc.takeError();
  auto partial = get(op, op.getPartial());
  if (!partial)
    return partial.takeError();
  for (const Slot *operand : {*acc, *partial})
    if (llvm::Error e = checkAccumulatorCompleted(op, *operand, mask))
      return e;
  // FADD on the CUDA cores: each register rounded to nearest f32.
  Slot result = **acc;
  result.wgmmaGroup = 0;
  Type f32 = Float32Type::get(op.getContext());
  for (unsigned t : mask.set_bits())
    for (unsigned e = 0; e < result.width; ++e) {
      float sum = static_cast<float>(floatValue(f32, result.at(t, e))) +
                  static_cast<float>(floatValue(f32, (*partial)->at(t, e)));
      result.at(t, e) = floatBits(f32, sum);
    }
  slots[op.getResult()] = std::move(result);
  return llvm::Error::success();
}

llvm::Error Interpreter::execWgmmaStore(nvgpu::WarpgroupMmaStoreOp op,
                                        const llvm::BitVector &mask) {
  if (llvm::Error e = checkFullWarpgroups(op, mask))
    return e;
  auto acc = get(op, op.getMatrixD());
  if (!acc)
    return acc.takeError();
  if (llvm::Error e = checkAccumulatorCompleted(op, **acc, mask))
    return e;
  VectorType accType = op.getMatrixD().getType().getFragmented();
  int64_t regsPerBlock = accType.getDimSize(1) / 2;
  int64_t blocks = accType.getDimSize(0) / 64;
  for (unsigned t : mask.set_bits()) {
    // Each warpgroup's own destination where the view differs per
    // warpgroup.
    auto m = getWarpgroupMemRef(op, op.getDstMemref(), t / kWarpgroupSize);
    if (!m)
      return m.takeError();
    if (m->shape.size() != 2 || !m->elemType.isF32())
      return fail(op, "the destination must be a 2-D f32 memref");
    Buffer &buf = buffers[m->buffer];
    // As NVGPUToNVVM stores it: from threadIdx.x, each 64-row block
    // `regsPerBlock` rows below the previous one.
    int64_t tidx = t % config.block[0];
    int64_t warp = tidx / kWarpSize, lane = tidx % kWarpSize;
    for (int64_t i = 0; i < blocks; ++i) {
      for (int64_t reg = 0; reg < regsPerBlock; ++reg) {
        int64_t j = reg / 4, q = reg % 4;
        int64_t row = 16 * warp + lane / 4 + 8 * (q / 2) + i * regsPerBlock;
        int64_t col = 8 * j + 2 * (lane % 4) + q % 2;
        auto off = locate(op, *m, {row, col}, 1, t);
        if (!off)
          return off.takeError();
        if (llvm::Error e =
                checkAccess(op, m->buffer, *off, 4, t, Access::Write))
          return e;
        storeBytes(buf.data + *off, 4, (*acc)->at(t, i * regsPerBlock + reg));
      }
    }
  }
  return llvm::Error::success();
}

llvm::Error Interpreter::checkWgmmaReads(Operation *op, unsigned buffer,
                                         int64_t off, int64_t n, int64_t t) {
  llvm::erase_if(wgmmaReads, [&](const WgmmaRead &read) {
    return read.group <= wgmmaCompleted[read.warpgroup];
  });
  for (const WgmmaRead &read : wgmmaReads)
    if (read.buffer == buffer && off < read.hi && read.lo < off + n)
      return fail(op,
                  llvm::formatv("thread {0} writes byte {1} of {2}, which "
                                "wgmma group {3} of warpgroup {4} still "
                                "reads (the buffer is reused before "
                                "wgmma.wait_group retired the group)",
                                t, std::max(off, read.lo), buffers[buffer].name,
                                read.group, read.warpgroup));
  return llvm::Error::success();
}

void Interpreter::completeWgmmaGroups(const llvm::BitVector &mask,
                                      uint64_t allowed) {
  for (int64_t base = 0; base < numThreads; base += kWarpgroupSize) {
    if (!mask[base])
      continue;
    uint64_t &done = wgmmaCompleted[base / kWarpgroupSize];
    uint64_t committed = wgmmaCommitted[base / kWarpgroupSize];
    done = std::max(done, committed - std::min(committed, allowed));
  }
}

bool Interpreter::splitsWarpgroups(const llvm::BitVector &then,
                                   const llvm::BitVector &otherwise) const {
  if (then.none() || otherwise.none())
    return false;
  for (int64_t base = 0; base < numThreads; base += kWarpgroupSize) {
    int64_t end = std::min(base + kWarpgroupSize, numThreads);
    bool inThen = false, inElse = false;
    for (int64_t t = base; t < end; ++t) {
      inThen |= then[t];
      inElse |= otherwise[t];
    }
    if (inThen && inElse)
      return false;
  }
  return true;
}

llvm::Error Interpreter::execHopper(Operation *op, const llvm::BitVector &mask,
                                    bool &handled) {
  handled = true;
  if (auto o = dyn_cast<nvgpu::MBarrierCreateOp>(op)) {
    barrierGroups[o.getBarriers()] = mbarriers.size();
    mbarriers.emplace_back(o.getBarriers().getType().getNumBarriers());
    return llvm::Error::success();
  }
  // Per-thread predicate of an op with an optional one.
  auto enabled = [&](Value predicate) -> llvm::Expected<llvm::BitVector> {
    llvm::BitVector on = mask;
    if (!predicate)
      return on;
    auto s = get(op, predicate);
    if (!s)
      return s.takeError();
    for (unsigned t : mask.set_bits())
      if (!((*s)->at(t, 0) & 1))
        on.reset(t);
    return on;
  };
  if (auto o = dyn_cast<nvgpu::MBarrierInitOp>(op)) {
    auto on = enabled(o.getPredicate());
    if (!on)
      return on.takeError();
    for (unsigned t : on->set_bits()) {
      auto barrier = barrierOf(op, o.getBarriers(), o.getMbarId(), t);
      if (!barrier)
        return barrier.takeError();
      auto count = indicesOf(op, o.getCount(), t);
      if (!count)
        return count.takeError();
      if ((*count)[0] <= 0)
        return fail(op, "mbarrier count must be positive");
      MBarrier &b = **barrier;
      b = MBarrier();
      b.initialized = true;
      b.expected = b.pending = (*count)[0];
    }
    return llvm::Error::success();
  }
  if (auto o = dyn_cast<nvgpu::MBarrierArriveExpectTxOp>(op)) {
    auto on = enabled(o.getPredicate());
    if (!on)
      return on.takeError();
    for (unsigned t : on->set_bits()) {
      auto barrier = barrierOf(op, o.getBarriers(), o.getMbarId(), t);
      if (!barrier)
        return barrier.takeError();
      auto tx = indicesOf(op, o.getTxcount(), t);
      if (!tx)
        return tx.takeError();
      (*barrier)->txCount += (*tx)[0];
      if (llvm::Error e = arrive(op, **barrier, 1, t))
        return e;
    }
    return llvm::Error::success();
  }
  if (isa<nvgpu::MBarrierArriveOp, nvgpu::MBarrierArriveNoCompleteOp>(op)) {
    auto noComplete = dyn_cast<nvgpu::MBarrierArriveNoCompleteOp>(op);
    Value group = op->getOperand(0), id = op->getOperand(1);
    Slot token(1, numThreads);
    for (unsigned t : mask.set_bits()) {
      auto barrier = barrierOf(op, group, id, t);
      if (!barrier)
        return barrier.takeError();
      int64_t count = 1;
      if (noComplete) {
        auto c = indicesOf(op, noComplete.getCount(), t);
        if (!c)
          return c.takeError();
        count = (*c)[0];
      }
      token.at(t, 0) = (*barrier)->phase;
      if (noComplete && (*barrier)->pending - count <= 0)
        return fail(op, llvm::formatv("thread {0}: arrive.nocomplete would "
                                      "complete the phase (undefined in PTX)",
                                      t));
      if (llvm::Error e = arrive(op, **barrier, count, t))
        return e;
    }
    slots[op->getResult(0)] = std::move(token);
    return llvm::Error::success();
  }
  if (auto o = dyn_cast<nvgpu::MBarrierTestWaitOp>(op)) {
    // Non-blocking: in-flight TMA loads have not landed yet.
    auto token = get(op, o.getToken());
    if (!token)
      return token.takeError();
    Slot done(1, numThreads);
    for (unsigned t : mask.set_bits()) {
      auto barrier = barrierOf(op, o.getBarriers(), o.getMbarId(), t);
      if (!barrier)
        return barrier.takeError();
      done.at(t, 0) = (*barrier)->phase != (*token)->at(t, 0);
    }
    slots[o.getWaitComplete()] = std::move(done);
    return llvm::Error::success();
  }
  if (auto o = dyn_cast<nvgpu::MBarrierTryWaitParityOp>(op))
    return execTryWait(o, mask);
  if (auto o = dyn_cast<nvgpu::TmaAsyncLoadOp>(op))
    return execTmaLoad(o, mask);
  if (auto o = dyn_cast<nvgpu::TmaAsyncStoreOp>(op))
    return execTmaStore(o, mask);
  if (auto o = dyn_cast<nvgpu::WarpgroupGenerateDescriptorOp>(op))
    return execWgmmaDescriptor(o, mask);
  if (auto o = dyn_cast<nvgpu::WarpgroupMmaInitAccumulatorOp>(op)) {
    slots[o.getMatrixC()] =
        Slot(numEntries(o.getMatrixC().getType()), numThreads);
    return llvm::Error::success();
  }
  if (auto o = dyn_cast<nvgpu::WarpgroupMmaOp>(op))
    return execWgmma(o, mask);
  if (auto o = dyn_cast<nvgpu::WarpgroupMmaStoreOp>(op))
    return execWgmmaStore(o, mask);
  if (auto o = dyn_cast<WarpgroupAccumulateOp>(op))
    return execWarpgroupAccumulate(o, mask);
  if (auto o = dyn_cast<NVVM::WgmmaWaitGroupSyncOp>(op)) {
    completeWgmmaGroups(mask, o.getGroup());
    return llvm::Error::success();
  }
  if (isa<NVVM::SetMaxRegisterOp>(op))
    // Moves registers between warpgroups: no effect on values, but the
    // whole warpgroup executes it (.sync.aligned).
    return checkFullWarpgroups(op, mask);
  // Ordering and cache hints with no effect on values here: nvgpu's
  // warpgroup.mma already fences and commits, bulk stores complete at once.
  if (isa<nvgpu::TmaPrefetchOp, nvgpu::TmaFenceOp, NVVM::WgmmaFenceAlignedOp,
          NVVM::WgmmaGroupSyncAlignedOp, NVVM::FenceProxyOp,
          NVVM::FenceMbarrierInitOp, NVVM::CpAsyncBulkCommitGroupOp,
          NVVM::CpAsyncBulkWaitGroupOp>(op))
    return llvm::Error::success();
  handled = false;
  return llvm::Error::success();
}

} // namespace

llvm::Error runKernel(gpu::GPUFuncOp func, const LaunchConfig &config,
                      ArrayRef<MutableArrayRef<uint8_t>> args) {
  Interpreter interpreter(func, config);
  return interpreter.run(args);
}

} // namespace memwall::simt

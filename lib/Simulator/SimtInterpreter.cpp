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
//===----------------------------------------------------------------------===//

#include "memwall/Simulator/SimtInterpreter.h"

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
#include <cmath>
#include <cstring>
#include <deque>
#include <functional>
#include <limits>
#include <optional>

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
  registry
      .insert<gpu::GPUDialect, nvgpu::NVGPUDialect, NVVM::NVVMDialect,
              LLVM::LLVMDialect, arith::ArithDialect, math::MathDialect,
              scf::SCFDialect, memref::MemRefDialect, vector::VectorDialect>();
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

bool isScalar(Type type) { return type.isIntOrIndexOrFloat(); }

/// Number of per-thread entries a value of `type` occupies: vectors are
/// flattened row-major and LLVM structs of scalars member by member.
unsigned numEntries(Type type) {
  if (auto vec = dyn_cast<VectorType>(type))
    return vec.getNumElements();
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
};

struct Buffer {
  std::string name;
  uint8_t *data = nullptr;
  int64_t size = 0;
  bool shared = false;
  std::vector<uint8_t> storage; // shared buffers own their bytes
  std::vector<ByteState> state;
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

enum class Access { Read, Write, AsyncIssue };

class Interpreter {
public:
  Interpreter(gpu::GPUFuncOp func, const LaunchConfig &config)
      : func(func), config(config) {}

  llvm::Error run(ArrayRef<MutableArrayRef<uint8_t>> args);

private:
  llvm::Error fail(Operation *op, const Twine &message);
  llvm::Error runBlock();
  llvm::Error execBlock(Block &block, const llvm::BitVector &mask,
                        SmallVectorImpl<Value> *yielded);
  llvm::Error execOp(Operation *op, const llvm::BitVector &mask);

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
  llvm::Error checkShared(Operation *op, unsigned buf, int64_t off, int64_t n,
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
  llvm::Error execView(memref::ViewOp op, const llvm::BitVector &mask);
  llvm::Error execVector(Operation *op, const llvm::BitVector &mask,
                         bool &handled);
  llvm::Error execShuffle(gpu::ShuffleOp op, const llvm::BitVector &mask);
  llvm::Error execLdMatrix(nvgpu::LdMatrixOp op, const llvm::BitVector &mask);
  llvm::Error execAsyncCopy(nvgpu::DeviceAsyncCopyOp op,
                            const llvm::BitVector &mask);
  llvm::Error execMma(NVVM::MmaOp op, const llvm::BitVector &mask);

  gpu::GPUFuncOp func;
  LaunchConfig config;
  int64_t numThreads = 0;
  std::array<int64_t, 3> blockId{0, 0, 0};
  std::vector<Buffer> buffers;
  unsigned numGlobal = 0;
  std::vector<MemRefVal> argMemRefs;
  int dynamicShared = -1;
  uint32_t epoch = 1;
  llvm::DenseMap<Value, Slot> slots;
  llvm::DenseMap<Value, MemRefVal> memrefs;
  std::vector<std::vector<PendingCopy>> uncommitted;
  std::vector<std::deque<std::vector<PendingCopy>>> groups;
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
  return fail(op, "memref operand does not come from a kernel argument, "
                  "workgroup attribution, dynamic shared memory or "
                  "memref.view");
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
  Operation *fop = func.getOperation();
  if (!func.isKernel())
    return fail(fop, "function is not a kernel");
  numThreads = config.block[0] * config.block[1] * config.block[2];
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
    argMemRefs.push_back(std::move(m));
  }
  numGlobal = buffers.size();

  for (blockId[2] = 0; blockId[2] < config.grid[2]; ++blockId[2])
    for (blockId[1] = 0; blockId[1] < config.grid[1]; ++blockId[1])
      for (blockId[0] = 0; blockId[0] < config.grid[0]; ++blockId[0])
        if (llvm::Error e = runBlock())
          return e;
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

  for (auto [arg, m] :
       llvm::zip(func.getArguments().take_front(argMemRefs.size()), argMemRefs))
    memrefs[arg] = m;

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

llvm::Error Interpreter::checkShared(Operation *op, unsigned bufIdx,
                                     int64_t off, int64_t n, int64_t t,
                                     Access kind) {
  Buffer &buf = buffers[bufIdx];
  if (!buf.shared)
    return llvm::Error::success();
  const char *verb = kind == Access::Read ? "reads" : "writes";
  for (int64_t i = off; i < off + n; ++i) {
    ByteState &s = buf.state[i];
    auto where = llvm::formatv("byte {0} of {1}", i, buf.name).str();
    if (s.pendingOwner >= 0)
      return fail(
          op, llvm::formatv("thread {0} {1} {2} while an async copy issued by "
                            "thread {3} to it is in flight (missing "
                            "nvgpu.device_async_wait?)",
                            t, verb, where, s.pendingOwner));
    if (kind == Access::Read) {
      if (s.writer < 0)
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
      s.pendingOwner = t;
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
  if (auto o = dyn_cast<gpu::DynamicSharedMemoryOp>(op)) {
    MemRefVal m;
    m.buffer = dynamicShared;
    m.elemType = IntegerType::get(op->getContext(), 8);
    m.elemBytes = 1;
    m.shape.push_back(config.dynamicSharedBytes);
    memrefs[o.getResult()] = m;
    return llvm::Error::success();
  }
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

  // Everything below takes floats.
  if (!isSupportedFloat(inType)) {
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
    if (!isSupportedFloat(outType)) {
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
  if (llvm::Error e = runBranch(op.getThenRegion(), thenMask))
    return e;
  if (llvm::Error e = runBranch(op.getElseRegion(), elseMask))
    return e;
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
    if (llvm::Error e = checkShared(op, m->buffer, *off, count * m->elemBytes,
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

llvm::Error Interpreter::execView(memref::ViewOp op,
                                  const llvm::BitVector &mask) {
  auto src = getMemRef(op, op.getSource());
  if (!src)
    return src.takeError();
  auto shift = uniformInt(op, op.getByteShift(), mask);
  if (!shift)
    return shift.takeError();
  MemRefType type = op.getType();
  MemRefVal m;
  m.buffer = src->buffer;
  m.elemType = type.getElementType();
  m.elemBytes = byteWidth(m.elemType);
  m.byteOffset = src->byteOffset + *shift;
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
  if (*shift < 0 || *shift + elems * m.elemBytes > srcBytes)
    return fail(op, llvm::formatv("view of {0} bytes at byte shift {1} "
                                  "exceeds the {2}-byte source ({3})",
                                  elems * m.elemBytes, *shift, srcBytes,
                                  buffers[m.buffer].name));
  memrefs[op.getResult()] = m;
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
                checkShared(op, m->buffer, *off, 16, lane, Access::Read))
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
      if (llvm::Error e = checkShared(op, src->buffer, sOff, n * src->elemBytes,
                                      t, Access::Read))
        return e;
    }
    if (llvm::Error e =
            checkShared(op, dst->buffer, *dOff, count * dst->elemBytes, t,
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

} // namespace

llvm::Error runKernel(gpu::GPUFuncOp func, const LaunchConfig &config,
                      ArrayRef<MutableArrayRef<uint8_t>> args) {
  Interpreter interpreter(func, config);
  return interpreter.run(args);
}

} // namespace memwall::simt

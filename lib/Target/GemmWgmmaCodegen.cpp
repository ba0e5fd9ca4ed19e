//===- GemmWgmmaCodegen.cpp - The sm_90a GEMM main loop -------------------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// One warpgroup (128 threads) computes the blockM x blockN tile as blockM /
// 64 accumulators of 64 x blockN f32 (wgmma's m64nNk16 D fragments; fp8
// operands run m64nNk32, both K-major, each k-step of the description
// below 32 bytes of a row, as for 16-bit operands).
//
// Shared memory, from its first 1024-byte aligned byte (the dynamic shared
// memory base is 16-byte aligned only, behind the static mbarriers; the
// 128B swizzle repeats every 1024 bytes and TMA and wgmma both apply it to
// the address): `stages` lhs slots of blockM x 64, then `stages` rhs slots
// (blockN x 64 of an [N, K] rhs, K-major; blockN / 64 boxes of 64 x 64 of a
// [K, N] rhs, N-major), every row 128 bytes, 128B-swizzled as TMA writes
// them. One mbarrier per slot (arrival count 1). A dual GEMM (two rhs of
// one lhs: Llama's gate and up) has a second ring of rhs slots after the
// first, filled by the same stage's loads and mbarrier, and a second set of
// accumulators.
//
// Pipeline (MLIR's NVGPU tutorial, chapter 5: no producer warp, as the
// lockstep interpreter runs one control flow): thread 0 issues k-steps
// 0 .. stages - 2 (expect_tx of the stage's bytes, then the TMA loads, which
// zero-fill past M, N and K). K-step k waits on its slot's mbarrier with
// parity (k / stages) % 2, then issues per k16 and per 64-row block one
// nvgpu.warpgroup.mma (fence, wgmma.mma_async, commit) whose
// wgmma.wait_group lets the current stage's groups stay in flight while
// forcing the previous stage's to complete; the slot those read is then
// free, and thread 0 refills it with k-step k + stages - 1. The operands'
// descriptors are generated per k16 (A 32 bytes further along its 128-byte
// rows; B 32 bytes along K-major rows or 16 rows down N-major ones), as
// NVGPUToNVVM advances descriptors only within the shapes it was written
// for.
//
// The warp-specialized form (GemmVariant::WgmmaWarpSpecialized, CUTLASS's
// sm90 "cooperative" kernel): blocks of 128 x 3 threads, threadIdx.y the
// warpgroup. Warpgroup 2, the producer, gives registers back
// (setmaxnreg.dec) and runs the loads: k-step s waits until both consumers
// released the slot's previous k-step on the slot's "empty" mbarrier
// (arrival count 256), then one thread arms the "full" mbarrier and issues
// the TMA loads. Warpgroups 0 and 1 take registers (setmaxnreg.inc) and run
// the k-loop, each over rows 64·y.. of the tile (A's descriptors offset by
// the warpgroup; one copy of the loop: a copy per warpgroup makes ptxas
// serialize the wgmma and spill the 128x256 tile's accumulators): wait on
// "full", four wgmma k16 steps, and once wait_group lets the previous
// k-step's wgmma complete every consumer thread arrives on that k-step's
// "empty". Once both consumers retired their last wgmma (a "done" mbarrier
// of 256 arrivals) each stores its accumulators to its rows of a dense f32
// tile over the ring, which the epilogue reads (the norm statistics in a
// blockM x 2 tile after it). The producer never reaches the epilogue: it
// runs on the 256 consumer threads, synchronized by named barrier 1.
//
// fp8 promotion (both forms, unless memwall.gemm_fp8_fast_accumulation):
// each k-step's wgmma ops accumulate into zeroed partials, the last one
// waits for all of them (wait_group 0), and memwall.warpgroup_accumulate
// adds the partials to the f32 accumulators on the CUDA cores, so the
// tensor cores' reduced fp8 accumulation spans 128 of K, not all of it. The
// k-step's slot is then free: the warp-specialized consumers release it at
// once instead of one k-step later.
//
//===----------------------------------------------------------------------===//

#include "GemmWgmmaCodegen.h"
#include "KernelBuilding.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <algorithm>

using namespace mlir;
using namespace memwall;

namespace {
/// Bytes of one row of a swizzled tile: the 128B swizzle span, 64 16-bit
/// or 128 fp8 elements.
constexpr int64_t kRowBytes = kGemmWgmmaRowBytes;
/// The wgmma instruction's M, and its K in bytes of an operand row (k16 of
/// bf16/f16, k32 of fp8).
constexpr int64_t kWgmmaM = 64, kWgmmaKBytes = 32;
/// Bound on one try_wait's suspend time hint, in nanoseconds.
constexpr int64_t kWaitTicks = 10000000;

MemRefType sharedType(MLIRContext *context, ArrayRef<int64_t> shape,
                      Type element) {
  return MemRefType::get(shape, element, AffineMap(),
                         gpu::AddressSpaceAttr::get(
                             context, gpu::AddressSpace::Workgroup));
}

/// Named barrier of the warp-specialized kernel's consumer warpgroups.
constexpr int32_t kConsumerBarrierId = 1;
constexpr int64_t kConsumerThreads = 256;

class MainLoopBuilder : IndexArithmetic {
public:
  MainLoopBuilder(ImplicitLocOpBuilder &b, const GemmProblem &problem,
                  const GemmTiling &tiling, Value lhsMap, Value rhsMap,
                  Value tid, Value tileRow, Value tileColumn, Value firstK,
                  int64_t kSteps, Value siblingRhsMap = Value())
      : IndexArithmetic(b), b(b), problem(problem), tiling(tiling),
        lhsMap(lhsMap), rhsMap(rhsMap), siblingRhsMap(siblingRhsMap), tid(tid),
        tileRow(tileRow), tileColumn(tileColumn), firstK(firstK),
        kSteps(kSteps), element(problem.elementType),
        elementBytes(element.getIntOrFloatBitWidth() / 8),
        wgmmaK(kWgmmaKBytes / elementBytes) {}

  /// The aligned shared memory and the ring's mbarriers, initialized.
  GemmWgmmaRing buildRing() {
    GemmWgmmaRing ring;
    ring.shared = alignSharedMemory();
    Value isThread0 =
        arith::CmpIOp::create(b, arith::CmpIPredicate::eq, tid, idx(0));
    auto workgroup = gpu::AddressSpaceAttr::get(b.getContext(),
                                                gpu::AddressSpace::Workgroup);
    ring.barriers = nvgpu::MBarrierCreateOp::create(
        b, nvgpu::MBarrierGroupType::get(b.getContext(), workgroup,
                                         tiling.stages));
    for (int64_t s = 0; s < tiling.stages; ++s)
      nvgpu::MBarrierInitOp::create(b, ring.barriers, idx(1), idx(s),
                                    isThread0);
    // The initialized barriers are visible to the TMA unit and every thread.
    NVVM::FenceMbarrierInitOp::create(b);
    gpu::BarrierOp::create(b);
    return ring;
  }

  /// The plain main loop on a new ring, or on `ring` after `stepsBefore`
  /// k-steps went through it (slots and phases continue from there).
  GemmWgmmaMainLoop build(const GemmWgmmaRing *ring = nullptr,
                          Value stepsBefore = Value()) {
    GemmWgmmaMainLoop result;
    GemmWgmmaRing own = ring ? *ring : buildRing();
    result.shared = shared = own.shared;
    barriers = own.barriers;
    firstStep = stepsBefore;
    Value isThread0 =
        arith::CmpIOp::create(b, arith::CmpIPredicate::eq, tid, idx(0));

    auto issueIfBefore = [&](Value step) {
      Value inRange = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, step,
                                            idx(kSteps));
      issueStage(rem(ringStep(step), tiling.stages), step,
                 arith::AndIOp::create(b, isThread0, inRange));
    };
    for (int64_t s = 0; s + 1 < tiling.stages; ++s)
      issueIfBefore(idx(s));

    // One accumulator per 64-row block, per rhs (set-major).
    int64_t blocks = tiling.blockM / kWgmmaM * rhsMaps().size();
    auto accumulatorType = nvgpu::WarpgroupAccumulatorType::get(
        b.getContext(),
        VectorType::get({kWgmmaM, tiling.blockN}, b.getF32Type()));
    SmallVector<Value> init;
    for (int64_t i = 0; i < blocks; ++i)
      init.push_back(
          nvgpu::WarpgroupMmaInitAccumulatorOp::create(b, accumulatorType));
    auto loop = scf::ForOp::create(b, idx(0), idx(kSteps), idx(1), init);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      Value step = loop.getInductionVar();
      Value slot = waitForStage(step);
      SmallVector<Value> acc(loop.getRegionIterArgs());
      accumulateSlot(slot, acc, accumulatorType);
      // Every wgmma of the previous k-step has completed: its slot is free.
      issueIfBefore(add(step, tiling.stages - 1));
      scf::YieldOp::create(b, acc);
    }
    NVVM::WgmmaWaitGroupSyncOp::create(b, b.getI64IntegerAttr(0));
    // The epilogue reuses the ring.
    gpu::BarrierOp::create(b);
    result.accumulators.assign(loop.getResults().begin(),
                               loop.getResults().end());
    return result;
  }

  /// The warp-specialized loop; `b` is left in the consumers' branch.
  GemmWgmmaMainLoop buildWarpSpecialized(Value warpgroup) {
    GemmWgmmaMainLoop result;
    result.shared = alignSharedMemory();
    result.warpgroup = warpgroup;
    shared = result.shared;
    MLIRContext *context = b.getContext();
    Value isThread0 =
        arith::CmpIOp::create(b, arith::CmpIPredicate::eq, tid, idx(0));
    auto workgroup =
        gpu::AddressSpaceAttr::get(context, gpu::AddressSpace::Workgroup);
    auto groupType =
        nvgpu::MBarrierGroupType::get(context, workgroup, tiling.stages);
    barriers = nvgpu::MBarrierCreateOp::create(b, groupType);
    Value empty = nvgpu::MBarrierCreateOp::create(b, groupType);
    for (int64_t s = 0; s < tiling.stages; ++s) {
      nvgpu::MBarrierInitOp::create(b, barriers, idx(1), idx(s), isThread0);
      nvgpu::MBarrierInitOp::create(b, empty, idx(kConsumerThreads), idx(s),
                                    isThread0);
    }
    NVVM::FenceMbarrierInitOp::create(b);
    gpu::BarrierOp::create(b);

    auto setMaxRegisters = [&](int64_t count, NVVM::SetMaxRegisterAction how) {
      NVVM::SetMaxRegisterOp::create(
          b, b.getI32IntegerAttr(count),
          NVVM::SetMaxRegisterActionAttr::get(context, how));
    };
    Value isProducer =
        arith::CmpIOp::create(b, arith::CmpIPredicate::eq, warpgroup, idx(2));
    auto split = scf::IfOp::create(b, isProducer, /*withElseRegion=*/true);
    result.producerSplit = split;

    // The producer: k-step s into slot s % stages once its previous k-step
    // (s - stages) was released.
    b.setInsertionPointToStart(split.thenBlock());
    setMaxRegisters(kGemmWarpSpecializedProducerRegisters,
                    NVVM::SetMaxRegisterAction::decrease);
    Value isIssuer = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, tid,
                                           idx(kConsumerThreads));
    auto produce = scf::ForOp::create(b, idx(0), idx(kSteps), idx(1));
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(produce.getBody());
      Value step = produce.getInductionVar();
      Value slot = rem(step, tiling.stages);
      Value reused = arith::CmpIOp::create(b, arith::CmpIPredicate::uge, step,
                                           idx(tiling.stages));
      auto wait = scf::IfOp::create(b, reused, /*withElseRegion=*/false);
      {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(wait.thenBlock());
        // Release n of the slot (n = step / stages - 1) completes phase n.
        Value parity = arith::IndexCastOp::create(
            b, b.getI1Type(), rem(add(div(step, tiling.stages), 1), 2));
        nvgpu::MBarrierTryWaitParityOp::create(b, empty, parity,
                                               idx(kWaitTicks), slot);
      }
      issueStage(slot, step, isIssuer);
    }

    // The consumers: one k-loop, each warpgroup on its 64 rows of A.
    b.setInsertionPointToStart(split.elseBlock());
    setMaxRegisters(kGemmWarpSpecializedConsumerRegisters,
                    NVVM::SetMaxRegisterAction::increase);
    auto accumulatorType = nvgpu::WarpgroupAccumulatorType::get(
        context, VectorType::get({kWgmmaM, tiling.blockN}, b.getF32Type()));
    // Once both consumers retired every wgmma (and so every TMA load has
    // landed), the ring is free for the staged accumulators.
    Value done = nvgpu::MBarrierCreateOp::create(
        b, nvgpu::MBarrierGroupType::get(context, workgroup, 1));
    nvgpu::MBarrierInitOp::create(b, done, idx(kConsumerThreads), idx(0),
                                  isThread0);
    Value rowsOfA = mul(warpgroup, kWgmmaM * kRowBytes);
    Value init =
        nvgpu::WarpgroupMmaInitAccumulatorOp::create(b, accumulatorType);
    auto loop =
        scf::ForOp::create(b, idx(0), idx(kSteps), idx(1), ValueRange{init});
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      Value step = loop.getInductionVar();
      Value slot = waitForStage(step);
      SmallVector<Value> acc(loop.getRegionIterArgs());
      accumulateSlot(slot, acc, accumulatorType, rowsOfA);
      auto releaseSlot = [&](Value released) {
        nvgpu::MBarrierArriveOp::create(
            b, nvgpu::MBarrierTokenType::get(context), empty, released);
      };
      if (isGemmFp8Promoted(problem)) {
        // The promotion waited for every wgmma of this k-step.
        releaseSlot(slot);
      } else {
        // wait_group let this k-step's wgmma stay in flight and completed
        // the previous one's: its slot may be refilled.
        Value released =
            arith::CmpIOp::create(b, arith::CmpIPredicate::uge, step, idx(1));
        auto release = scf::IfOp::create(b, released, /*withElseRegion=*/false);
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(release.thenBlock());
        releaseSlot(rem(add(step, tiling.stages - 1), tiling.stages));
      }
      scf::YieldOp::create(b, acc);
    }
    NVVM::WgmmaWaitGroupSyncOp::create(b, b.getI64IntegerAttr(0));
    nvgpu::MBarrierArriveOp::create(b, nvgpu::MBarrierTokenType::get(context),
                                    done, idx(0));
    nvgpu::MBarrierTryWaitParityOp::create(
        b, done, arith::ConstantIntOp::create(b, b.getI1Type(), 0),
        idx(kWaitTicks), idx(0));
    // Each warpgroup's rows of the staged tile: warpgroup.mma.store indexes
    // rows by threadIdx.x, 0..127 in each warpgroup of a 128 x 3 block.
    nvgpu::WarpgroupMmaStoreOp::create(
        b, loop.getResult(0),
        view(mul(warpgroup, kWgmmaM * tiling.blockN * 4),
             {kWgmmaM, tiling.blockN}, b.getF32Type()));
    result.stagedTile =
        view(idx(0), {tiling.blockM, tiling.blockN}, b.getF32Type());
    result.statistics = view(idx(tiling.blockM * tiling.blockN * 4),
                             {tiling.blockM, 2}, b.getF32Type());
    // Every consumer's rows are staged before the epilogue reads any.
    buildGemmConsumerBarrier(b);
    return result;
  }

private:
  /// K-step `step` of this main loop counted along the ring (which may have
  /// run other main loops' steps before: the row-chunked kernel's chunks).
  Value ringStep(Value step) { return firstStep ? add(firstStep, step) : step; }

  /// Waits until k-step `step`'s tiles have landed in its ring slot (phase
  /// step / stages of the slot's "full" mbarrier); returns the slot.
  Value waitForStage(Value step) {
    Value along = ringStep(step);
    Value slot = rem(along, tiling.stages);
    Value parity = arith::IndexCastOp::create(
        b, b.getI1Type(), rem(div(along, tiling.stages), 2));
    nvgpu::MBarrierTryWaitParityOp::create(b, barriers, parity, idx(kWaitTicks),
                                           slot);
    return slot;
  }

  /// Bytes of one lhs and one rhs ring slot.
  int64_t lhsSlotBytes() const { return tiling.blockM * kRowBytes; }
  int64_t rhsSlotBytes() const { return tiling.blockN * kRowBytes; }

  /// The dynamic shared memory from its first 1024-byte aligned byte.
  Value alignSharedMemory() {
    auto bytes = sharedType(b.getContext(), {ShapedType::kDynamic},
                            b.getI8Type());
    Value raw = gpu::DynamicSharedMemoryOp::create(b, bytes);
    Value address = memref::ExtractAlignedPointerAsIndexOp::create(b, raw);
    Value pad = rem(arith::SubIOp::create(b, idx(kGemmWgmmaAlignmentSlack),
                                          rem(address, kGemmWgmmaAlignmentSlack)),
                    kGemmWgmmaAlignmentSlack);
    return memref::ViewOp::create(
        b, bytes, raw, pad,
        ValueRange{idx(tiling.sharedBytes - kGemmWgmmaAlignmentSlack)});
  }

  /// A view of `shape` at byte `offset` of the aligned shared memory.
  Value view(Value offset, ArrayRef<int64_t> shape, Type type) {
    return memref::ViewOp::create(
        b, sharedType(b.getContext(), shape, type), shared, offset,
        ValueRange{});
  }
  Value lhsSlot(Value slot) { return mul(slot, lhsSlotBytes()); }
  /// Rhs `index`'s slot (a dual's second rhs ring follows the first).
  Value rhsSlot(Value slot, int64_t index = 0) {
    return add(mul(slot, rhsSlotBytes()),
               tiling.stages * (lhsSlotBytes() + index * rhsSlotBytes()));
  }
  /// The rhs tensor maps: one, or a dual GEMM's two.
  SmallVector<Value, 2> rhsMaps() const {
    SmallVector<Value, 2> maps{rhsMap};
    if (siblingRhsMap)
      maps.push_back(siblingRhsMap);
    return maps;
  }

  /// Thread 0 (where `predicate`) loads k-step `step` into ring slot
  /// `slot`, completing on the slot's mbarrier.
  void issueStage(Value slot, Value step, Value predicate) {
    int64_t rhsCount = static_cast<int64_t>(rhsMaps().size());
    int64_t bytes = (tiling.blockM + rhsCount * tiling.blockN) * tiling.blockK *
                    elementBytes;
    nvgpu::MBarrierArriveExpectTxOp::create(b, barriers, idx(bytes), slot,
                                            predicate);
    Value stepK = add(mul(step, tiling.blockK), firstK);
    auto load = [&](Value map, Value offset, ValueRange coordinates) {
      auto box = cast<nvgpu::TensorMapDescriptorType>(map.getType())
                     .getTensor()
                     .getShape();
      nvgpu::TmaAsyncLoadOp::create(b, view(offset, box, element), barriers,
                                    map, coordinates, slot,
                                    /*multicastMask=*/Value(), predicate);
    };
    // Coordinates innermost first: (k, m), or for a heads-merged lhs (d,
    // s, h, b) of [B, H, S, D].
    if (problem.lhsHeads)
      load(lhsMap, lhsSlot(slot),
           {rem(stepK, problem.lhsHeadDim), rem(tileRow, problem.lhsSeqLen),
            div(stepK, problem.lhsHeadDim), div(tileRow, problem.lhsSeqLen)});
    else
      load(lhsMap, lhsSlot(slot), {stepK, tileRow});
    for (auto [index, map] : llvm::enumerate(rhsMaps())) {
      Value destination = rhsSlot(slot, static_cast<int64_t>(index));
      if (problem.transposeRhs) {
        load(map, destination, {stepK, tileColumn});
        continue;
      }
      for (int64_t j = 0; j < tiling.blockN / 64; ++j)
        load(map, add(destination, j * 64 * kRowBytes),
             {add(tileColumn, j * 64), stepK});
    }
  }

  /// Accumulates ring slot `slot` into `acc` (multiplySlot). A promoted
  /// fp8 GEMM multiplies into zeroed partials instead, waits for every
  /// wgmma of the slot and adds the partials to `acc` in f32 on the CUDA
  /// cores: the tensor cores' reduced fp8 accumulation then spans one
  /// k-step (4 k32 steps, 128 of K), as CUTLASS's default promotion
  /// interval, not the whole K.
  void accumulateSlot(Value slot, SmallVectorImpl<Value> &acc,
                      Type accumulatorType, Value rowsOfA = Value()) {
    if (!isGemmFp8Promoted(problem)) {
      multiplySlot(slot, acc, accumulatorType, rowsOfA);
      return;
    }
    SmallVector<Value> partials;
    for (size_t i = 0; i < acc.size(); ++i)
      partials.push_back(
          nvgpu::WarpgroupMmaInitAccumulatorOp::create(b, accumulatorType));
    multiplySlot(slot, partials, accumulatorType, rowsOfA,
                 /*waitForAll=*/true);
    for (auto [sum, partial] : llvm::zip_equal(acc, partials))
      sum = WarpgroupAccumulateOp::create(b, sum.getType(), sum, partial);
  }

  /// Accumulates ring slot `slot` into `acc`: per wgmma K step (k16, or
  /// k32 of fp8: 32 bytes of a row) one wgmma per 64-row block and rhs
  /// (`acc` holds the blocks of each rhs's set in turn).
  /// `rowsOfA`: bytes into the lhs slot where the first block's rows start
  /// (a consumer warpgroup's own rows), or null for 0. The last wgmma waits
  /// until the previous k-step's have completed, or with `waitForAll` until
  /// all have.
  void multiplySlot(Value slot, SmallVectorImpl<Value> &acc,
                    Type accumulatorType, Value rowsOfA = Value(),
                    bool waitForAll = false) {
    int64_t kSteps = tiling.blockK / wgmmaK;
    int64_t groupsPerStage = kSteps * static_cast<int64_t>(acc.size());
    auto descriptor = [&](Value offset, ArrayRef<int64_t> shape, Value map) {
      Value tensor = view(offset, shape, element);
      return nvgpu::WarpgroupGenerateDescriptorOp::create(
          b,
          nvgpu::WarpgroupMatrixDescriptorType::get(
              b.getContext(), cast<MemRefType>(tensor.getType())),
          tensor, map);
    };
    SmallVector<Value, 2> maps = rhsMaps();
    int64_t blocks = static_cast<int64_t>(acc.size() / maps.size());
    for (int64_t kk = 0; kk < kSteps; ++kk) {
      // B's K step: 32 bytes along K-major rows, or (16-bit only) 16 rows
      // of 128 bytes down N-major ones.
      int64_t bStep =
          problem.transposeRhs ? kk * kWgmmaKBytes : kk * wgmmaK * kRowBytes;
      for (auto [set, map] : llvm::enumerate(maps)) {
        Value descriptorB =
            descriptor(add(rhsSlot(slot, static_cast<int64_t>(set)), bStep),
                       {wgmmaK, tiling.blockN}, map);
        for (int64_t block = 0; block < blocks; ++block) {
          Value &value = acc[set * blocks + block];
          int64_t aStep = block * kWgmmaM * kRowBytes + kk * kWgmmaKBytes;
          Value aStart = add(lhsSlot(slot), aStep);
          if (rowsOfA)
            aStart = add(aStart, rowsOfA);
          Value descriptorA = descriptor(aStart, {kWgmmaM, wgmmaK}, lhsMap);
          bool last =
              kk + 1 == kSteps && set + 1 == maps.size() && block + 1 == blocks;
          int64_t pending = waitForAll && last ? 0 : groupsPerStage;
          value = nvgpu::WarpgroupMmaOp::create(
              b, accumulatorType, descriptorA, descriptorB,
              static_cast<uint64_t>(pending), /*transposeA=*/UnitAttr(),
              problem.transposeRhs ? UnitAttr() : b.getUnitAttr(), value);
        }
      }
    }
  }

  ImplicitLocOpBuilder &b;
  const GemmProblem &problem;
  const GemmTiling &tiling;
  Value lhsMap, rhsMap, siblingRhsMap, tid, tileRow, tileColumn, firstK;
  int64_t kSteps;
  Type element;
  /// Bytes of an operand element, and the elements of one wgmma K step.
  int64_t elementBytes, wgmmaK;
  Value shared, barriers;
  /// K-steps the ring ran before this main loop (plain kernel; null: 0).
  Value firstStep;
};
} // namespace

nvgpu::TensorMapDescriptorType
memwall::getGemmWgmmaOperandMapType(MLIRContext *context,
                                    const GemmProblem &problem,
                                    const GemmTiling &tiling, bool isLhs) {
  SmallVector<int64_t, 4> box;
  // A heads-merged lhs: one head's blockK columns of one sequence's rows of
  // [B, H, S, D].
  if (isLhs && problem.lhsHeads)
    box = {1, 1, tiling.blockM, tiling.blockK};
  else if (isLhs)
    box = {tiling.blockM, tiling.blockK};
  else if (problem.transposeRhs)
    box = {tiling.blockN, tiling.blockK};
  else
    box = {tiling.blockK, 64};
  auto tensor = MemRefType::get(box, problem.elementType, AffineMap(),
                                IntegerAttr::get(IntegerType::get(context, 64),
                                                 3));
  return nvgpu::TensorMapDescriptorType::get(
      context, tensor, nvgpu::TensorMapSwizzleKind::SWIZZLE_128B,
      nvgpu::TensorMapL2PromoKind::L2PROMO_256B,
      nvgpu::TensorMapOOBKind::OOB_ZERO,
      nvgpu::TensorMapInterleaveKind::INTERLEAVE_NONE);
}

std::string memwall::whyCannotBuildGemmWgmma(const GemmProblem &problem,
                                             const GemmTiling &tiling) {
  if (std::string why = whyNotWgmmaGemm(problem); !why.empty())
    return why;
  bool warpSpecialized = tiling.variant == GemmVariant::WgmmaWarpSpecialized;
  if (warpSpecialized) {
    if (tiling.blockK != getGemmWgmmaBlockK(problem.elementType) ||
        tiling.threads != kConsumerThreads || tiling.producerThreads != 128 ||
        tiling.blockM != 2 * kWgmmaM || tiling.blockN % 64 != 0 ||
        tiling.blockN > 256 || tiling.stages < 2)
      return "the tiling is not one of the warp-specialized wgmma kernel's";
  } else if (tiling.blockK != getGemmWgmmaBlockK(problem.elementType) ||
             tiling.threads != 128 || tiling.producerThreads != 0 ||
             tiling.blockM % kWgmmaM != 0 || tiling.blockM > 256 ||
             tiling.blockN % 64 != 0 || tiling.blockN > 256 ||
             tiling.stages < 2 ||
             getGemmAccumulatorSets(problem) * tiling.blockM * tiling.blockN /
                     128 >
                 128) {
    return "the tiling is not one of the wgmma kernel's";
  }
  if (tiling.sharedBytes <
      getGemmWgmmaSharedBytes(tiling.blockM, tiling.blockN, tiling.stages,
                              warpSpecialized, isGemmRowChunked(tiling),
                              problem.rhsOperands) +
          tiling.rowBufferBytes)
    return "the tiling's shared memory is too small";
  return "";
}

GemmWgmmaRing memwall::buildGemmWgmmaRing(ImplicitLocOpBuilder &b,
                                          const GemmProblem &problem,
                                          const GemmTiling &tiling, Value tid) {
  assert(tiling.variant == GemmVariant::Wgmma &&
         "only the plain wgmma kernel shares its ring between main loops");
  return MainLoopBuilder(b, problem, tiling, Value(), Value(), tid, Value(),
                         Value(), Value(), 0)
      .buildRing();
}

GemmWgmmaMainLoop memwall::buildGemmWgmmaMainLoop(
    ImplicitLocOpBuilder &b, const GemmProblem &problem,
    const GemmTiling &tiling, Value lhsMap, Value rhsMap, Value tid,
    Value tileRow, Value tileColumn, Value firstK, int64_t kSteps,
    const GemmWgmmaRing *ring, Value stepsBefore, Value siblingRhsMap) {
  assert(
      (!siblingRhsMap || tiling.variant != GemmVariant::WgmmaWarpSpecialized) &&
      "a dual GEMM runs on the plain wgmma kernel");
  MainLoopBuilder builder(b, problem, tiling, lhsMap, rhsMap, tid, tileRow,
                          tileColumn, firstK, kSteps, siblingRhsMap);
  if (tiling.variant != GemmVariant::WgmmaWarpSpecialized)
    return builder.build(ring, stepsBefore);
  assert(!ring && "the warp-specialized kernel builds its own ring");
  // threadIdx.y broadcast from lane 0 (as CUTLASS's canonical_warp_idx_sync):
  // ptxas then knows the branches on it are warp-uniform and keeps the
  // wgmma in them asynchronous (else C7520: "wgmma.mma_async instructions
  // are serialized ... in divergent path").
  Value y = arith::IndexCastOp::create(
      b, b.getI32Type(), gpu::ThreadIdOp::create(b, gpu::Dimension::y));
  Value uniform = gpu::ShuffleOp::create(b, y, 0, 32, gpu::ShuffleMode::IDX)
                      .getShuffleResult();
  return builder.buildWarpSpecialized(
      arith::IndexCastOp::create(b, b.getIndexType(), uniform));
}

void memwall::buildGemmConsumerBarrier(ImplicitLocOpBuilder &b) {
  auto i32 = [&](int64_t value) {
    return arith::ConstantIntOp::create(b, b.getI32Type(), value);
  };
  NVVM::BarrierOp::create(b, Type(), i32(kConsumerBarrierId),
                          i32(kConsumerThreads), {}, Value());
}

Value memwall::storeGemmWgmmaAccumulators(ImplicitLocOpBuilder &b,
                                          const GemmTiling &tiling,
                                          ArrayRef<Value> accumulators,
                                          Value shared, int64_t offset) {
  MLIRContext *context = b.getContext();
  Type f32 = b.getF32Type();
  assert(tiling.variant == GemmVariant::Wgmma &&
         "the warp-specialized loop stages its accumulators itself");
  for (auto [block, accumulator] : llvm::enumerate(accumulators)) {
    int64_t blockOffset = offset + block * kWgmmaM * tiling.blockN * 4;
    Value destination = memref::ViewOp::create(
        b, sharedType(context, {kWgmmaM, tiling.blockN}, f32), shared,
        indexConstant(b, blockOffset), ValueRange{});
    nvgpu::WarpgroupMmaStoreOp::create(b, accumulator, destination);
  }
  gpu::BarrierOp::create(b);
  return memref::ViewOp::create(
      b, sharedType(context, {tiling.blockM, tiling.blockN}, f32), shared,
      indexConstant(b, offset), ValueRange{});
}

void memwall::stageGemmWgmmaAccumulators(ImplicitLocOpBuilder &b,
                                         const GemmTiling &tiling,
                                         ArrayRef<Value> accumulators,
                                         Value shared, Value tid, Value tile,
                                         int64_t denseOffset) {
  Value staged =
      storeGemmWgmmaAccumulators(b, tiling, accumulators, shared, denseOffset);
  int64_t passes = tiling.blockM * tiling.blockN / tiling.threads;
  auto copy = scf::ForOp::create(b, indexConstant(b, 0),
                                 indexConstant(b, passes),
                                 indexConstant(b, 1));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(copy.getBody());
  Value element = arith::AddIOp::create(
      b,
      arith::MulIOp::create(b, copy.getInductionVar(),
                            indexConstant(b, tiling.threads)),
      tid);
  Value row =
      arith::DivUIOp::create(b, element, indexConstant(b, tiling.blockN));
  Value column =
      arith::RemUIOp::create(b, element, indexConstant(b, tiling.blockN));
  Value value = memref::LoadOp::create(b, staged, ValueRange{row, column});
  memref::StoreOp::create(b, value, tile, ValueRange{row, column});
}

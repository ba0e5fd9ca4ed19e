//===- FusionCost.cpp - Cost and legality of a candidate kernel -----------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// See docs/fusion.md for the model: which sets of ops make one kernel, the
// launch geometry of the generated kernels, the register estimate that
// rejects spilling fusions, and the soft roofline that predicts time.
//
//===----------------------------------------------------------------------===//

#include "memwall/Analysis/FusionCost.h"
#include "memwall/Analysis/MemoryAnalysis.h"
#include "memwall/Support/Units.h"

#include "memwall/Analysis/CostAnalysis.h"
#include "memwall/Dialect/MemWall/IR/MemWallTarget.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <numeric>

using namespace mlir;
using namespace memwall;

namespace {
constexpr int64_t kWarpSize = 32;
/// Registers a kernel needs besides the data it holds: indices, pointers,
/// loop state.
constexpr int64_t kBaseRegisters = 24;
/// The occupancy an elementwise kernel keeps when it picks how many vectors
/// a thread loads at once (the ridge where latency hiding stops improving
/// for streaming kernels).
constexpr double kElementwiseOccupancy = 0.5;
/// Occupancy from which a streaming kernel keeps enough 128-bit loads in
/// flight to reach full bandwidth; below it, bandwidth falls proportionally.
constexpr double kFullBandwidthOccupancy = 0.25;
/// Threads of a dequantize kernel's blocks.
constexpr int64_t kDequantizeKernelThreads = 256;

RankedTensorType tensorType(Value value) {
  return cast<RankedTensorType>(value.getType());
}

/// Whether `value` is a tensor of packed sub-byte elements (i4): only the
/// GEMM's dequantizing prologue unpacks them.
bool isPackedTensor(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  return type && isPackedSubByte(type.getElementType());
}

/// How `input` broadcasts to `shape`, if codegen can index it.

std::optional<KernelInput> classifyAccess(Value input,
                                          ArrayRef<int64_t> shape) {
  KernelInput access;
  access.value = input;
  ArrayRef<int64_t> inputShape = tensorType(input).getShape();
  int64_t elements = getNumElements(tensorType(input));
  if (inputShape == shape)
    return access;
  if (elements == 1) {
    access.pattern = AccessPattern::Scalar;
    return access;
  }
  // Drop leading 1s; the rest must be a suffix of `shape`.
  ArrayRef<int64_t> trimmed =
      inputShape.drop_while([](int64_t d) { return d == 1; });
  if (trimmed.size() <= shape.size() &&
      shape.take_back(trimmed.size()) == trimmed) {
    access.pattern = AccessPattern::Suffix;
    access.innerElements = elements;
    return access;
  }
  // Leading dims equal to `shape`'s, the rest 1 (rank must match).
  if (inputShape.size() == shape.size()) {
    size_t leading = 0;
    while (leading < shape.size() && inputShape[leading] == shape[leading])
      ++leading;
    bool restOnes = llvm::all_of(inputShape.drop_front(leading),
                                 [](int64_t d) { return d == 1; });
    if (leading > 0 && restOnes) {
      access.pattern = AccessPattern::Outer;
      access.innerElements =
          CheckedInt::product(shape.drop_front(leading)).saturated();
      return access;
    }
  }
  return std::nullopt;
}

/// Contiguous elements every access pattern keeps together, which a vector
/// width must divide.
int64_t contiguousRun(const KernelInput &input, int64_t runOfFull) {
  switch (input.pattern) {
  case AccessPattern::Full:
    return runOfFull;
  case AccessPattern::Suffix:
  case AccessPattern::Outer:
    return input.innerElements;
  case AccessPattern::Scalar:
    return 0; // any width
  }
  return 1;
}

/// Occupancy of a kernel with `threads` per block, `registers` per thread and
/// `shared` bytes per block.
double occupancyOf(int64_t threads, int64_t registers, int64_t shared,
                   const GPUTarget &target) {
  int64_t warps = (threads + kWarpSize - 1) / kWarpSize;
  int64_t byRegisters =
      kRegistersPerSM / std::max<int64_t>(1, registers * warps * kWarpSize);
  int64_t byThreads = kMaxThreadsPerSM / std::max<int64_t>(1, threads);
  int64_t byShared =
      shared > 0 ? static_cast<int64_t>(target.sharedMemoryPerSMBytes) / shared
                 : kMaxCTAsPerSM;
  int64_t blocks = std::min({byRegisters, byThreads, byShared, kMaxCTAsPerSM});
  return static_cast<double>(blocks * threads) / kMaxThreadsPerSM;
}

/// Calls `visit` on every matmul that reads `value` as its rhs, inside
/// fusions too.
void forEachRhsReader(Value value, function_ref<void(MatmulOp)> visit) {
  for (OpOperand &use : value.getUses()) {
    if (auto matmul = dyn_cast<MatmulOp>(use.getOwner())) {
      if (matmul.getRhs() == value)
        visit(matmul);
    } else if (auto fusion = dyn_cast<FusionOp>(use.getOwner())) {
      forEachRhsReader(
          fusion.getBodyBlock().getArgument(use.getOperandNumber()), visit);
    }
  }
}

bool fail(std::string *whyNot, const Twine &message) {
  if (whyNot)
    *whyNot = message.str();
  return false;
}

class KernelAnalyzer {
public:
  KernelAnalyzer(ArrayRef<Operation *> ops, const GPUTarget &target,
                 std::string *whyNot)
      : target(target), whyNot(whyNot) {
    analysis.ops.assign(ops.begin(), ops.end());
    if (!ops.empty() && ops.front()->getBlock())
      llvm::sort(analysis.ops, [](Operation *a, Operation *b) {
        return a->isBeforeInBlock(b);
      });
    members.insert(ops.begin(), ops.end());
  }

  FailureOr<KernelAnalysis> run() {
    if (!classify() || !collectValues())
      return failure();
    if (analysis.kind == FusionKind::MatmulEpilogue)
      return chooseGemmKernel();
    if (analysis.kind == FusionKind::Attention ||
        analysis.kind == FusionKind::AttentionGrad) {
      predictAttentionTime();
      return std::move(analysis);
    }
    if (analysis.kind == FusionKind::Rope) {
      predictRopeTime();
      return std::move(analysis);
    }
    if (analysis.kind == FusionKind::Dequantize) {
      planDequantizeKernel();
      predictTime();
      return std::move(analysis);
    }
    if (analysis.kind == FusionKind::Horizontal) {
      if (!fitsKernelParameters())
        return failure();
      predictTime();
      return std::move(analysis);
    }
    if (!analyzeKernel())
      return failure();
    predictTime();
    return std::move(analysis);
  }

private:
  bool classify() {
    if (analysis.ops.empty())
      return fail(whyNot, "no ops");
    if (llvm::any_of(analysis.ops, llvm::IsaPred<FlashAttentionOp>))
      return classifyAttention();
    if (llvm::any_of(analysis.ops, llvm::IsaPred<FlashAttentionGradOp>))
      return classifyAttentionGrad();
    if (llvm::any_of(analysis.ops, llvm::IsaPred<RopeOp>) &&
        llvm::none_of(analysis.ops, llvm::IsaPred<MatmulOp>))
      return classifyRope();
    if (llvm::any_of(analysis.ops, [](Operation *op) {
          auto dequantize = dyn_cast<DequantizeOp>(op);
          return dequantize && dequantize.getMaterialize();
        }))
      return classifyDequantize();
    // Independent optimizer updates, several as one multi-tensor launch.
    if (llvm::all_of(analysis.ops, llvm::IsaPred<AdamWOp>)) {
      analysis.kind = FusionKind::Horizontal;
      analysis.precision = MathPrecision::FP32;
      return true;
    }
    for (Operation *op : analysis.ops) {
      if (isElementwiseOp(op))
        continue;
      if (auto dequantize = dyn_cast<DequantizeOp>(op)) {
        dequantizes.push_back(dequantize);
        continue;
      }
      // Checked once the matmul is known (matchGemmLhsHeadsMerge,
      // matchGemmHeadsLayouts).
      if (isGemmHeadsLayoutOp(op)) {
        hasHeadsLayoutOps = true;
        continue;
      }
      bool isAnchor = isRowReductionOp(op) || isa<MatmulOp>(op);
      if (!isAnchor)
        return fail(whyNot, "'" + op->getName().getStringRef() +
                                "' does not run in a generated kernel");
      // A second matmul may join a first as a dual GEMM; more siblings run
      // as one batched cuBLASLt call.
      if (isa_and_nonnull<MatmulOp>(analysis.anchor) && isa<MatmulOp>(op)) {
        if (!analysis.siblingMatmul)
          analysis.siblingMatmul = op;
        else
          moreSiblings.push_back(op);
        continue;
      }
      if (analysis.anchor) {
        if (!isGemmRowNorm(op))
          return fail(whyNot, "a kernel holds at most one row reduction or "
                              "matmul (or a matmul and a layer_norm or "
                              "rms_norm of its result's rows)");
        rowNorm = op;
        continue;
      }
      analysis.anchor = op;
    }
    if (analysis.siblingMatmul &&
        !isDualGemm(cast<MatmulOp>(analysis.anchor),
                    cast<MatmulOp>(analysis.siblingMatmul)))
      return false;
    for (Operation *sibling : moreSiblings)
      if (!isDualGemm(cast<MatmulOp>(analysis.anchor), cast<MatmulOp>(sibling)))
        return false;
    if (analysis.siblingMatmul && rowNorm)
      return fail(whyNot, "a dual GEMM has no layer_norm or rms_norm "
                          "epilogue");
    if (hasHeadsLayoutOps) {
      auto matmul = dyn_cast_or_null<MatmulOp>(analysis.anchor);
      if (!matmul)
        return fail(whyNot, "a reshape, transpose or rope runs in a kernel "
                            "only as the heads layout of a GEMM's operand "
                            "or result");
      auto merge = matchGemmLhsHeadsMerge(analysis.ops, matmul, whyNot);
      if (failed(merge))
        return false;
      analysis.lhsHeadsMerge = *merge;
      SmallVector<Operation *> rest;
      for (Operation *op : analysis.ops)
        if (!*merge || (op != (*merge)->heads && op != (*merge)->merge))
          rest.push_back(op);
      if (llvm::any_of(rest, isGemmHeadsLayoutOp)) {
        if (rowNorm)
          return fail(whyNot, "a GEMM writes its result heads-split only "
                              "without a norm");
        auto layouts =
            matchGemmHeadsLayouts(rest, matmul.getType().getShape(),
                                  analysis.siblingMatmul ? 2 : 1, whyNot);
        if (failed(layouts))
          return false;
        analysis.headsLayouts = std::move(*layouts);
      }
    }
    // A dequantize runs as its matmul's rhs prologue: the main loop reads
    // the stored weights and scales (a dual GEMM's two, or neither).
    for (Operation *op : {analysis.anchor, analysis.siblingMatmul})
      if (auto matmul = dyn_cast_or_null<MatmulOp>(op))
        if (DequantizeOp dequantize = getDequantizeAtUse(matmul.getRhs());
            dequantize && !members.contains(dequantize))
          return fail(whyNot, "a matmul runs with the dequantize of its rhs "
                              "in one kernel");
    for (DequantizeOp dequantize : dequantizes) {
      auto isRhsOf = [&](Operation *op) {
        auto matmul = dyn_cast_or_null<MatmulOp>(op);
        return matmul && matmul.getRhs() == dequantize.getResult();
      };
      // Double quantization: the dequantize of a member's scales.
      auto isScalesOfMember = [&] {
        auto user = dyn_cast<DequantizeOp>(*dequantize->user_begin());
        return user && members.contains(user) &&
               getScalesPrologue(user) == dequantize;
      };
      if (!dequantize.getResult().hasOneUse() ||
          !(isRhsOf(analysis.anchor) || isRhsOf(analysis.siblingMatmul) ||
            isScalesOfMember()))
        return fail(whyNot, "a dequantize runs in a kernel only as the rhs "
                            "prologue of the one matmul that reads it (or "
                            "as the dequantize of that prologue's scales)");
      if (auto scales = dequantize.getScales().getDefiningOp<DequantizeOp>();
          scales && isDequantizeAtUse(scales) && !members.contains(scales))
        return fail(whyNot, "a dequantize runs with the dequantize of its "
                            "scales in one kernel");
    }
    if (!analysis.anchor) {
      analysis.kind = FusionKind::Elementwise;
      analysis.iterationShape.assign(
          tensorType(analysis.ops.back()->getResult(0)).getShape().begin(),
          tensorType(analysis.ops.back()->getResult(0)).getShape().end());
      // The largest result defines the iteration space.
      for (Operation *op : analysis.ops)
        if (getNumElements(op->getResult(0).getType()) >
            computeElements(analysis.iterationShape))
          analysis.iterationShape.assign(
              tensorType(op->getResult(0)).getShape().begin(),
              tensorType(op->getResult(0)).getShape().end());
    } else if (auto matmul = dyn_cast<MatmulOp>(analysis.anchor)) {
      analysis.kind = FusionKind::MatmulEpilogue;
      ArrayRef<int64_t> shape = matmul.getType().getShape();
      analysis.iterationShape.assign(shape.begin(), shape.end());
    } else {
      analysis.kind = FusionKind::Reduction;
      ArrayRef<int64_t> shape =
          tensorType(analysis.anchor->getOperand(0)).getShape();
      analysis.iterationShape.assign(shape.begin(), shape.end());
    }
    return true;
  }

  /// A flash_attention with the views of its operands and output (the
  /// attention kernel, over the attention's result), or one or two ropes
  /// with the views of their inputs (a rope kernel over the first rope's
  /// result).
  bool classifyAttention() {
    FailureOr<AttentionViews> views = matchAttentionViews(analysis.ops, whyNot);
    if (failed(views))
      return false;
    // Named before the views move into the analysis.
    Operation *anchor = views->attention;
    return classifyViews(FusionKind::Attention, anchor, analysis.attention,
                         std::move(*views));
  }
  bool classifyAttentionGrad() {
    FailureOr<AttentionGradViews> views =
        matchAttentionGradViews(analysis.ops, whyNot);
    if (failed(views))
      return false;
    Operation *anchor = views->grad;
    return classifyViews(FusionKind::AttentionGrad, anchor,
                         analysis.attentionGrad, std::move(*views));
  }
  /// A dequantize kernel (a `materialize`d dequantize): it and the
  /// dequantize of its scales, nothing else.
  bool classifyDequantize() {
    auto dequantize = dyn_cast<DequantizeOp>(analysis.ops.back());
    if (!dequantize || !dequantize.getMaterialize() ||
        ArrayRef<Operation *>(analysis.ops) !=
            ArrayRef<Operation *>(getDequantizeKernelOps(dequantize)))
      return fail(whyNot, "a dequantize kernel holds its dequantize and the "
                          "dequantize of its scales (double quantization), "
                          "nothing else");
    if (std::string why = whyNoDequantizeCode(dequantize); !why.empty())
      return fail(whyNot, why);
    analysis.kind = FusionKind::Dequantize;
    analysis.anchor = dequantize;
    ArrayRef<int64_t> shape = dequantize.getType().getShape();
    analysis.iterationShape.assign(shape.begin(), shape.end());
    analysis.precision = MathPrecision::FP32;
    return true;
  }

  /// A dequantize kernel's launch: each thread writes one 16-byte vector of
  /// a row (narrower where the row's length asks), 256 threads a block.
  void planDequantizeKernel() {
    KernelGeometry &geometry = analysis.geometry;
    Type element = getElementTypeOrSelf(analysis.anchor->getResult(0));
    int64_t width = 128 / element.getIntOrFloatBitWidth();
    while (analysis.iterationShape.back() % width != 0)
      width /= 2;
    geometry.vectorWidth = width;
    geometry.threadsPerBlock = kDequantizeKernelThreads;
    geometry.vectorsPerThread = 1;
    geometry.gridSize =
        llvm::divideCeil(computeElements(analysis.iterationShape) / width,
                         geometry.threadsPerBlock);
    geometry.registersPerThread = 32;
    geometry.occupancy = 1;
  }

  bool classifyRope() {
    FailureOr<RopeViews> views = matchRopeViews(analysis.ops, whyNot);
    if (failed(views))
      return false;
    Operation *anchor = views->ropes.front();
    return classifyViews(FusionKind::Rope, anchor, analysis.rope,
                         std::move(*views));
  }
  template <typename Views>
  bool classifyViews(FusionKind kind, Operation *anchor,
                     std::optional<Views> &slot, Views views) {
    analysis.kind = kind;
    analysis.anchor = anchor;
    ArrayRef<int64_t> shape = tensorType(anchor->getResult(0)).getShape();
    analysis.iterationShape.assign(shape.begin(), shape.end());
    slot = std::move(views);
    return true;
  }

  /// A rope kernel moves what its ropes move, in one launch.
  void predictRopeTime() {
    KernelWork &work = analysis.work;
    for (RopeOp rope : analysis.rope->ropes) {
      KernelWork one =
          cast<CostOpInterface>(rope.getOperation()).getKernelWork(target);
      work.flops += one.flops;
      work.bytesRead += one.bytesRead;
      work.bytesWritten += one.bytesWritten;
      work.precision = one.precision;
      work.unit = one.unit;
    }
    analysis.estimate = estimateKernelTime(work, target);
    analysis.timeSeconds = analysis.estimate.timeSeconds;
  }

  /// An attention kernel's time is its flash_attention's (or
  /// flash_attention_grad's): reading and writing through views moves the
  /// same bytes.
  void predictAttentionTime() {
    auto attention = cast<CostOpInterface>(analysis.anchor);
    analysis.precision = attention.getMathPrecision();
    analysis.work = attention.getKernelWork(target);
    analysis.estimate = estimateKernelTime(analysis.work, target);
    analysis.timeSeconds = analysis.estimate.timeSeconds;
  }

  /// Whether `op`, after the anchor, is the one row norm memwall's GEMM can
  /// run in its epilogue: a layer_norm or rms_norm over the last dim of the
  /// matmul's result shape, of a value computed in the kernel.
  bool isGemmRowNorm(Operation *op) {
    auto matmul = dyn_cast<MatmulOp>(analysis.anchor);
    if (!matmul || rowNorm || !isa<LayerNormOp, RmsNormOp>(op))
      return false;
    Value input = op->getOperand(0);
    Operation *def = input.getDefiningOp();
    return def && members.contains(def) &&
           tensorType(input).getShape() == matmul.getType().getShape();
  }

  /// Whether two matmuls can share a kernel as a dual GEMM: one lhs, one
  /// result type, the same rhs type and layouts, and neither reads a value
  /// the kernel computes (the other's result included).
  bool isDualGemm(MatmulOp first, MatmulOp second) {
    auto refuse = [&](const Twine &why) {
      return fail(whyNot, "matmuls share a kernel only as a dual GEMM or a "
                          "batched call, but " +
                              why);
    };
    if (first.getLhs() != second.getLhs())
      return refuse("their lhs differ");
    if (first.getType() != second.getType())
      return refuse("their results differ in shape or type");
    if (first.getRhs().getType() != second.getRhs().getType() ||
        first.getTransposeLhs() != second.getTransposeLhs() ||
        first.getTransposeRhs() != second.getTransposeRhs())
      return refuse("their rhs differ in shape, type or layout");
    // Both products start in the main loop: their operands come from
    // memory (this also keeps either from reading the other's result), an
    // rhs through its own dequantize; both dequantized alike or neither.
    for (MatmulOp matmul : {first, second})
      for (Value operand : matmul->getOperands())
        if (Operation *def = operand.getDefiningOp();
            def && members.contains(def) &&
            !(isa<DequantizeOp>(def) && operand == matmul.getRhs()))
          return refuse("one reads a value computed in the kernel");
    DequantizeOp firstDequantize = getDequantizeAtUse(first.getRhs());
    DequantizeOp secondDequantize = getDequantizeAtUse(second.getRhs());
    if (static_cast<bool>(firstDequantize) !=
            static_cast<bool>(secondDequantize) ||
        (firstDequantize &&
         (firstDequantize.getInput().getType() !=
              secondDequantize.getInput().getType() ||
          firstDequantize.getScales().getType() !=
              secondDequantize.getScales().getType() ||
          static_cast<bool>(firstDequantize.getZeroPoints()) !=
              static_cast<bool>(secondDequantize.getZeroPoints()) ||
          firstDequantize.getCodebookAttr() !=
              secondDequantize.getCodebookAttr() ||
          static_cast<bool>(getScalesPrologue(firstDequantize)) !=
              static_cast<bool>(getScalesPrologue(secondDequantize)))))
      return refuse("their rhs are not dequantized alike");
    return true;
  }

  static int64_t computeElements(ArrayRef<int64_t> shape) {
    return CheckedInt::product(shape).saturated();
  }

  bool collectValues() {
    llvm::SmallPtrSet<void *, 16> seen;
    for (Operation *op : analysis.ops) {
      for (Value operand : op->getOperands()) {
        Operation *def = operand.getDefiningOp();
        if (def && members.contains(def))
          continue;
        // An in-place append writes into its cache's buffer, never reads it.
        if (auto append = dyn_cast<KVCacheAppendOp>(op);
            append && operand == append.getCache() && append.canAppendInPlace())
          continue;
        if (!seen.insert(operand.getAsOpaquePointer()).second)
          continue;
        KernelInput input;
        input.value = operand;
        analysis.inputs.push_back(input);
      }
      // Results used outside, and dead results (still computed and
      // written, like any op the graph keeps).
      for (Value result : op->getResults())
        if (result.use_empty() ||
            llvm::any_of(result.getUsers(), [&](Operation *user) {
              return !members.contains(user);
            }))
          analysis.outputs.push_back(result);
    }
    if (analysis.outputs.empty())
      return fail(whyNot, "the kernel produces nothing used");
    // The group's sums are checked: ops that each fit int64 need not fit
    // together.
    CheckedInt flops = 0, bytesRead = 0, bytesWritten = 0;
    for (Operation *op : analysis.ops) {
      auto cost = cast<CostOpInterface>(op);
      flops += CheckedInt::fromSaturated(cost.getFlops());
    }
    for (const KernelInput &input : analysis.inputs)
      bytesRead += CheckedInt::fromSaturated(getGemmOperandBytes(input.value));
    // A GEMM reads both operands, even one value passed as both.
    if (auto matmul = dyn_cast_or_null<MatmulOp>(analysis.anchor);
        matmul && matmul.getLhs() == matmul.getRhs())
      bytesRead +=
          CheckedInt::fromSaturated(getGemmOperandBytes(matmul.getRhs()));
    for (Value output : analysis.outputs) {
      // An in-place append writes its new rows only.
      auto append = output.getDefiningOp<KVCacheAppendOp>();
      bytesWritten += countTensorBytes(append && append.canAppendInPlace()
                                           ? append.getUpdate().getType()
                                           : output.getType());
    }
    if (flops.overflowed() || (bytesRead + bytesWritten).overflowed())
      return fail(whyNot, "the kernel's FLOPs or bytes are more than memwall "
                          "can count (int64)");
    analysis.flops = *flops.get();
    analysis.bytesRead = *bytesRead.get();
    analysis.bytesWritten = *bytesWritten.get();
    return true;
  }

  /// Elementwise and row-reduction kernels.
  bool analyzeKernel() {
    ArrayRef<int64_t> shape = analysis.iterationShape;
    if (shape.empty())
      return fail(whyNot, "rank-0 results are not generated");
    int64_t elements = computeElements(shape);
    int64_t rowLength = shape.back();
    // Geometry divides by both; an empty kernel has nothing to launch.
    if (elements <= 0 || rowLength <= 0)
      return fail(whyNot, "empty tensors run no generated kernel");
    bool isReduction = analysis.kind == FusionKind::Reduction;
    // Every computed value has the iteration shape, except the result of a
    // reduce, which must leave the kernel directly.
    for (Operation *op : analysis.ops) {
      Value result = op->getResult(0);
      if (isa<ReduceOp>(op)) {
        if (!llvm::all_of(result.getUsers(), [&](Operation *user) {
              return !members.contains(user);
            }))
          return fail(whyNot, "a reduce result cannot feed the same kernel");
        continue;
      }
      if (tensorType(result).getShape() != shape)
        return fail(whyNot, "values of different shapes ([" +
                                shapeString(tensorType(result).getShape()) +
                                "] and [" + shapeString(shape) +
                                "]) cannot share a kernel");
    }
    // Row ops' weight and bias must be [D] suffix inputs; everything else
    // any pattern codegen indexes.
    for (KernelInput &input : analysis.inputs) {
      if (isPackedTensor(input.value))
        return fail(whyNot, "packed i4 is read only by the generated GEMM's "
                            "dequantizing prologue");
      std::optional<KernelInput> access = classifyAccess(input.value, shape);
      if (!access)
        return fail(whyNot,
                    "input of shape [" +
                        shapeString(tensorType(input.value).getShape()) +
                        "] does not broadcast to [" + shapeString(shape) +
                        "] in a way codegen indexes");
      if (isReduction && access->pattern == AccessPattern::Outer &&
          access->innerElements % rowLength != 0)
        return fail(whyNot, "an input broadcast within a row");
      input = *access;
    }

    // The widest vector (up to 128 bits of the narrowest element type) that
    // every access pattern's contiguous run divides.
    int64_t narrowest = 8;
    auto noteType = [&](Value value) {
      narrowest = std::min(
          narrowest, getElementByteSize(tensorType(value).getElementType()));
    };
    for (const KernelInput &input : analysis.inputs)
      noteType(input.value);
    for (Value output : analysis.outputs)
      noteType(output);
    int64_t width = 16 / std::max<int64_t>(1, narrowest);
    int64_t fullRun = isReduction ? rowLength : elements;
    auto divides = [&](int64_t w) {
      if (fullRun % w != 0)
        return false;
      for (const KernelInput &input : analysis.inputs) {
        int64_t run = contiguousRun(input, fullRun);
        if (run != 0 && run % w != 0)
          return false;
      }
      return true;
    };
    while (width > 1 && !divides(width))
      width /= 2;

    KernelGeometry &geometry = analysis.geometry;
    geometry.vectorWidth = width;
    int64_t liveValues = countLiveValues();
    if (isReduction) {
      int64_t rowVectors = rowLength / width;
      int64_t threads =
          rowVectors >= kWarpSize
              ? std::min<int64_t>(512, (rowVectors + kWarpSize - 1) /
                                           kWarpSize * kWarpSize)
              : static_cast<int64_t>(llvm::PowerOf2Ceil(rowVectors));
      geometry.threadsPerBlock = std::max<int64_t>(1, threads);
      geometry.vectorsPerThread = (rowVectors + geometry.threadsPerBlock - 1) /
                                  geometry.threadsPerBlock;
      geometry.gridSize = elements / rowLength;
      // One float per warp for the cross-warp combine.
      geometry.sharedBytes = kWarpSize * 4;
    } else {
      int64_t vectors = elements / width;
      geometry.threadsPerBlock = 256;
      // Several independent vectors per thread keep more loads in flight
      // once the grid fills the GPU many times over: a thread loads all its
      // vectors' inputs first (KernelCodegen.cpp), then computes and stores
      // one vector at a time. Never at the cost of occupancy: more vectors
      // only while the loaded inputs leave half the SM's threads resident.
      int64_t waves = vectors / (geometry.threadsPerBlock *
                                 std::max<unsigned>(1, target.smCount) * 8);
      geometry.vectorsPerThread = waves >= 4 ? 4 : (waves >= 2 ? 2 : 1);
      while (geometry.vectorsPerThread > 1 &&
             occupancyOf(geometry.threadsPerBlock,
                         elementwiseRegisters(geometry.vectorsPerThread, width,
                                              liveValues),
                         0, target) < kElementwiseOccupancy)
        geometry.vectorsPerThread /= 2;
      int64_t perBlock = geometry.threadsPerBlock * geometry.vectorsPerThread;
      geometry.gridSize =
          std::max<int64_t>(1, (vectors + perBlock - 1) / perBlock);
    }
    // A row kernel keeps the thread's share of the row in registers.
    geometry.registersPerThread =
        isReduction
            ? kBaseRegisters + geometry.vectorsPerThread * width * liveValues
            : elementwiseRegisters(geometry.vectorsPerThread, width,
                                   liveValues);
    if (geometry.registersPerThread > kMaxRegistersPerThread)
      return fail(whyNot, "needs about " + Twine(geometry.registersPerThread) +
                              " registers per thread and would spill");
    geometry.occupancy =
        occupancyOf(geometry.threadsPerBlock, geometry.registersPerThread,
                    geometry.sharedBytes, target);
    return true;
  }

  /// Registers of an elementwise kernel's thread: the loaded vectors of
  /// every input of its `vectors` vectors (loaded before the first is used,
  /// held as loaded: a 128-bit vector is 4 registers; a broadcast input is
  /// one value) and one vector's computation in f32.
  int64_t elementwiseRegisters(int64_t vectors, int64_t width,
                               int64_t liveValues) const {
    int64_t perVector = 0;
    for (const KernelInput &input : analysis.inputs)
      perVector +=
          input.pattern == AccessPattern::Scalar ||
                  input.pattern == AccessPattern::Outer
              ? 1
              : llvm::divideCeil(
                    width * getElementByteSize(
                                tensorType(input.value).getElementType()),
                    4);
    return kBaseRegisters + vectors * perVector + width * liveValues;
  }

  /// Per-element values a thread holds at once. In a row kernel everything
  /// computed before the reduction and used after it stays in registers
  /// across the reduction; elementwise kernels hold an op's operands and
  /// result.
  int64_t countLiveValues() {
    if (analysis.kind != FusionKind::Reduction) {
      int64_t most = 1;
      for (Operation *op : analysis.ops)
        most = std::max<int64_t>(most, op->getNumOperands() + 1);
      return most + 1;
    }
    int64_t live = 2; // the row op's input and its result
    for (Operation *op : analysis.ops) {
      if (op == analysis.anchor || !op->isBeforeInBlock(analysis.anchor))
        continue;
      bool usedAfter = llvm::any_of(op->getUsers(), [&](Operation *user) {
        return members.contains(user) && user != analysis.anchor &&
               analysis.anchor->isBeforeInBlock(user);
      });
      live += usedAfter ? 1 : 0;
    }
    return live;
  }

  /// A kernel with a matmul: cuBLASLt with its epilogue (MatmulEpilogue) or
  /// memwall's generated GEMM with any elementwise epilogue (Gemm), as the
  /// module's policy says; with `auto` the faster of those that can run it.
  FailureOr<KernelAnalysis> chooseGemmKernel() {
    GemmBackend policy = getGemmBackendOf(analysis.anchor);
    KernelAnalysis common = analysis;
    std::string whyNotCublas, whyNotGenerated;
    std::optional<KernelAnalysis> cublas, generated;
    auto attempt = [&](FusionKind kind, std::string &why,
                       std::optional<KernelAnalysis> &result) {
      analysis = common;
      analysis.kind = kind;
      std::string *outer = whyNot;
      whyNot = &why;
      bool ok = kind == FusionKind::MatmulEpilogue ? analyzeGemm()
                                                   : analyzeGeneratedGemm();
      whyNot = outer;
      if (!ok)
        return;
      predictTime();
      result = std::move(analysis);
    };
    if (policy != GemmBackend::Generated)
      attempt(FusionKind::MatmulEpilogue, whyNotCublas, cublas);
    if (policy != GemmBackend::CuBlasLt)
      attempt(FusionKind::Gemm, whyNotGenerated, generated);
    // Forced memwall falls back to cuBLASLt only where the generated GEMM
    // cannot run the kernel at all (a layout it cannot tile).
    if (policy == GemmBackend::Generated && !generated) {
      attempt(FusionKind::MatmulEpilogue, whyNotCublas, cublas);
      if (cublas)
        cublas->gemmChoice = "cuBLASLt: " + whyNotGenerated;
    }
    // Forced cuBLASLt likewise falls back where cuBLASLt cannot run the
    // kernel (weights dequantized in the main loop).
    if (policy == GemmBackend::CuBlasLt && !cublas && !dequantizes.empty())
      attempt(FusionKind::Gemm, whyNotGenerated, generated);
    auto micros = [](const KernelAnalysis &kernel) {
      return llvm::formatv("{0:f1} us", kernel.timeSeconds * 1e6).str();
    };
    // A split-K GEMM's last CTA per tile reduces, and a cluster shares
    // rows: say so where it runs.
    auto splitNote = [](const KernelAnalysis &kernel) -> std::string {
      if (kernel.tiling.clusterN > 1)
        return "; each row's norm over a cluster of " +
               std::to_string(kernel.tiling.clusterN) + " CTAs";
      if (kernel.tiling.splitK <= 1)
        return "";
      return "; K split " + std::to_string(kernel.tiling.splitK) +
             " ways, the last CTA of a tile reduces";
    };
    if (cublas && generated) {
      bool useGenerated = generated->timeSeconds < cublas->timeSeconds;
      KernelAnalysis &chosen = useGenerated ? *generated : *cublas;
      chosen.gemmChoice =
          useGenerated
              ? "memwall gemm (" + micros(*generated) + ") over cuBLASLt (" +
                    micros(*cublas) + ")" + splitNote(*generated)
              : "cuBLASLt (" + micros(*cublas) + ") over memwall gemm (" +
                    micros(*generated) + ")";
      return std::move(chosen);
    }
    if (generated) {
      generated->gemmChoice =
          (policy == GemmBackend::Generated
               ? "memwall gemm (--gemm=memwall)"
               : "memwall gemm: cuBLASLt cannot run it: " + whyNotCublas) +
          splitNote(*generated);
      return std::move(*generated);
    }
    if (cublas) {
      if (cublas->gemmChoice.empty())
        cublas->gemmChoice = policy == GemmBackend::CuBlasLt
                                 ? "cuBLASLt (--gemm=cublaslt)"
                                 : "cuBLASLt: " + whyNotGenerated;
      return std::move(*cublas);
    }
    if (policy == GemmBackend::CuBlasLt)
      return fail(whyNot, whyNotCublas), failure();
    if (policy == GemmBackend::Generated)
      return fail(whyNot, whyNotGenerated), failure();
    return fail(whyNot, "neither cuBLASLt (" + whyNotCublas +
                            ") nor the generated GEMM (" + whyNotGenerated +
                            ") runs it"),
           failure();
  }

  /// Matmul plus any elementwise epilogue over its result, run by memwall's
  /// generated GEMM (GemmTiling.h, docs/codegen.md): every epilogue value
  /// has the result's shape, every input the epilogue reads is indexed in a
  /// pattern codegen supports, and the tiling fits the SM.
  bool analyzeGeneratedGemm() {
    auto matmul = cast<MatmulOp>(analysis.anchor);
    std::string why;
    FailureOr<GemmProblem> problem = getGemmProblem(matmul, &why);
    if (failed(problem))
      return fail(whyNot, why);
    // The f32 kernel runs on CUDA cores (FFMA) and is not tuned; its rate is
    // not modelled, so only --gemm=memwall chooses it.
    if (problem->elementType.isF32() &&
        getGemmBackendOf(matmul) != GemmBackend::Generated)
      return fail(whyNot, "the generated GEMM: f32 operands run on its FFMA "
                          "kernel only with --gemm=memwall (its rate is not "
                          "modelled)");
    auto sibling = dyn_cast_or_null<MatmulOp>(analysis.siblingMatmul);
    if (!moreSiblings.empty())
      return fail(whyNot, "the generated GEMM's dual holds two matmuls");
    if (sibling) {
      // isDualGemm matched the operand types and layouts, so the sibling
      // asks the same problem of a second rhs.
      if (failed(getGemmProblem(sibling, &why)))
        return fail(whyNot, why);
      if (problem->elementType.isF32())
        return fail(whyNot, "the generated GEMM: a dual GEMM needs bf16 or "
                            "f16 operands (the FFMA kernel holds one "
                            "product)");
      problem->rhsOperands = 2;
    }
    // The matmul(s), an rhs prologue and an lhs heads merge run in the main
    // loop.
    std::optional<GemmLhsHeadsMerge> merge = analysis.lhsHeadsMerge;
    auto isMatmul = [&](Operation *op) {
      return op == analysis.anchor || op == analysis.siblingMatmul ||
             isa<DequantizeOp>(op) ||
             (merge && (op == merge->heads.getOperation() ||
                        op == merge->merge.getOperation()));
    };
    if (merge) {
      // Each head's rows are read in 16-byte chunks.
      int64_t chunk = 16 / getElementByteSize(problem->elementType);
      if (problem->elementType.isF32() || problem->transposeLhs ||
          problem->batch != 1 || merge->headDim % chunk != 0)
        return fail(whyNot, "the generated GEMM reads a heads-merged lhs on "
                            "its tensor-core kernels, for one [M, K] lhs of "
                            "heads whose rows are whole 16-byte chunks");
      problem->lhsHeads = merge->numHeads;
      problem->lhsHeadDim = merge->headDim;
      problem->lhsSeqLen = merge->seqLen;
    }
    auto isRopePositions = [&](Value value) {
      return !analysis.headsLayouts.empty() &&
             llvm::all_of(value.getUsers(), [&](Operation *user) {
               auto rope = dyn_cast<RopeOp>(user);
               return !members.contains(user) ||
                      (rope && rope.getPositions() == value);
             });
    };
    auto isMatmulBias = [&](Value value) {
      return value == matmul.getBias() ||
             (sibling && value == sibling.getBias());
    };
    // The main loop loads its operands as stored (or dequantizes the rhs,
    // or reads a heads merge): an op computing an operand is no epilogue.
    for (MatmulOp product : {matmul, sibling})
      for (Value operand : product
                               ? ValueRange{product.getLhs(), product.getRhs()}
                               : ValueRange{}) {
        Operation *def = operand.getDefiningOp();
        if (def && members.contains(def) && !isMatmul(def))
          return fail(whyNot, "the generated GEMM has no prologue on its "
                              "operands: '" +
                                  def->getName().getStringRef().str() +
                                  "' runs in its own kernel");
      }
    ArrayRef<int64_t> shape = analysis.iterationShape;
    for (Operation *op : analysis.ops)
      if (!isMatmul(op) && !isGemmHeadsLayoutOp(op) &&
          tensorType(op->getResult(0)).getShape() != shape)
        return fail(whyNot,
                    "the generated GEMM: an epilogue value of shape [" +
                        shapeString(tensorType(op->getResult(0)).getShape()) +
                        "] is not the matmul's [" + shapeString(shape) + "]");
    for (KernelInput &input : analysis.inputs) {
      bool readByEpilogue =
          llvm::any_of(input.value.getUsers(), [&](Operation *user) {
            return !isMatmul(user) && members.contains(user);
          });
      if (readByEpilogue && isPackedTensor(input.value))
        return fail(whyNot, "the generated GEMM: packed i4 is read only by "
                            "its dequantizing prologue");
      // The rope's positions are read by it alone, at a row's position.
      if (isRopePositions(input.value)) {
        input.pattern = AccessPattern::Full;
        input.innerElements = 1;
        continue;
      }
      if (!readByEpilogue) {
        // Operands only the main loop reads: a bias is a suffix [N].
        input.pattern = isMatmulBias(input.value) ? AccessPattern::Suffix
                                                  : AccessPattern::Full;
        input.innerElements =
            input.pattern == AccessPattern::Suffix ? shape.back() : 1;
        continue;
      }
      std::optional<KernelInput> access = classifyAccess(input.value, shape);
      if (!access)
        return fail(whyNot,
                    "the generated GEMM: epilogue input of shape [" +
                        shapeString(tensorType(input.value).getShape()) +
                        "] does not broadcast to [" + shapeString(shape) +
                        "] in a way codegen indexes");
      input = *access;
    }
    // A norm needs whole rows in one CTA; wider than a tile, its input waits
    // in a row buffer of its tensor's element type.
    int64_t rowBufferElementBytes =
        rowNorm ? getElementByteSize(
                      tensorType(rowNorm->getOperand(0)).getElementType())
                : 0;
    if (!analysis.headsLayouts.empty() && problem->batch != 1)
      return fail(whyNot, "the generated GEMM writes heads-split results "
                          "of one GEMM (batch dims folded into M), not of "
                          "batched operands");
    for (GemmHeadsLayout heads : analysis.headsLayouts)
      if (heads.rope)
        problem->epilogueColumnGroup =
            std::lcm(problem->epilogueColumnGroup, heads.headDim);
    FailureOr<GemmTiling> tiling = chooseGemmTiling(
        *problem, target, countLiveValues(), &why,
        /*wholeRows=*/rowNorm != nullptr, rowBufferElementBytes);
    if (failed(tiling))
      return fail(whyNot, why);
    analysis.gemm = *problem;
    analysis.tiling = *tiling;
    addRowChunkRereads();
    // The generated GEMM's efficiency is that of the tile it chooses; held
    // to whole rows, it runs at the ratio of the two tilings' work.
    if (isGemmRowChunked(*tiling))
      if (FailureOr<GemmTiling> free =
              chooseGemmTiling(*problem, target, countLiveValues());
          succeeded(free))
        tileFraction =
            std::min(1.0, getGemmTilingCost(*free, *problem, target) /
                              getGemmTilingCost(*tiling, *problem, target));
    tileFraction *= getGemmVariantRelativeRate(*tiling, target);
    KernelGeometry &geometry = analysis.geometry;
    geometry.threadsPerBlock = tiling->threads;
    geometry.gridSize = tiling->grid[0] * tiling->grid[1] * tiling->grid[2];
    geometry.sharedBytes = tiling->sharedBytes;
    geometry.registersPerThread = tiling->registersPerThread;
    geometry.occupancy = tiling->occupancy;
    analysis.precision = matmul.getMathPrecision();
    return true;
  }

  /// A row-chunked GEMM (a norm over N wider than the tile) reads each CTA's
  /// A tile once per column chunk (in a cluster, every CTA of it does).
  /// While the CTAs running at once keep their A tiles (one per cluster)
  /// and B within L2, the re-reads are L2 hits; otherwise each is DRAM
  /// traffic again.
  void addRowChunkRereads() {
    const GemmTiling &tiling = analysis.tiling;
    if (!isGemmRowChunked(tiling))
      return;
    auto matmul = cast<MatmulOp>(analysis.anchor);
    const GemmProblem &problem = analysis.gemm;
    int64_t elementBytes = getElementByteSize(problem.elementType);
    int64_t ctas = tiling.grid[0] * tiling.grid[1] * tiling.grid[2];
    int64_t resident = std::min<int64_t>(
        ctas, tiling.ctasPerSM * static_cast<int64_t>(target.smCount));
    // The CTAs of a cluster read the same A tile.
    CheckedInt working =
        CheckedInt(llvm::divideCeil(resident, tiling.clusterN)) *
            tiling.blockM * problem.k * elementBytes +
        CheckedInt::fromSaturated(getGemmOperandBytes(matmul.getRhs()));
    if (!working.overflowed() &&
        *working.get() <= static_cast<int64_t>(target.l2Bytes))
      return;
    analysis.bytesRead =
        (CheckedInt(analysis.bytesRead) +
         CheckedInt::fromSaturated(getGemmOperandBytes(matmul.getLhs())) *
             (tiling.clusterN * tiling.rowChunks - 1))
            .saturated();
  }

  /// Matmul plus what cuBLASLt's epilogue applies: a bias, a residual add
  /// (beta = 1), then relu or tanh-GELU, as a single-use chain.
  bool analyzeGemm() {
    auto matmul = cast<MatmulOp>(analysis.anchor);
    if (rowNorm)
      return fail(whyNot, "cuBLASLt has no layer_norm or rms_norm epilogue");
    if (!dequantizes.empty())
      return fail(whyNot, "cuBLASLt does not dequantize weights in its main "
                          "loop");
    if (analysis.lhsHeadsMerge)
      return fail(whyNot, "cuBLASLt reads its lhs as stored, not through a "
                          "heads merge");
    Type elementType = matmul.getLhs().getType().getElementType();
    if (!isa<Float32Type, BFloat16Type, Float16Type>(elementType))
      return fail(whyNot, "only f32, bf16 and f16 matmuls run through "
                          "cuBLASLt");
    if (analysis.siblingMatmul)
      return analyzeBatchedGemm();
    GemmEpilogue &epilogue = analysis.epilogue;
    epilogue.bias = matmul.getBias();
    ArrayRef<int64_t> shape = analysis.iterationShape;
    Value current = matmul.getResult();
    for (Operation *op : analysis.ops) {
      if (op == analysis.anchor)
        continue;
      if (!current.hasOneUse() || *current.getUsers().begin() != op)
        return fail(whyNot, "a matmul epilogue must be a single-use chain "
                            "(cuBLASLt writes one result)");
      if (epilogue.activation != GemmEpilogue::Activation::None)
        return fail(whyNot, "nothing can follow the epilogue's activation");
      if (auto add = dyn_cast<AddOp>(op)) {
        Value other = add.getLhs() == current ? add.getRhs() : add.getLhs();
        if (tensorType(other).getElementType() !=
            tensorType(current).getElementType())
          return fail(whyNot, "epilogue operands must share the matmul's type");
        ArrayRef<int64_t> otherShape = tensorType(other).getShape();
        ArrayRef<int64_t> trimmed =
            otherShape.drop_while([](int64_t d) { return d == 1; });
        if (trimmed.size() == 1 && trimmed[0] == shape.back() &&
            !epilogue.bias && shape.size() >= 1) {
          epilogue.bias = other;
        } else if (otherShape == shape && !epilogue.residual) {
          epilogue.residual = other;
        } else {
          return fail(whyNot, "cuBLASLt adds one [N] bias and one "
                              "result-shaped residual");
        }
      } else if (isa<ReluOp>(op)) {
        epilogue.activation = GemmEpilogue::Activation::Relu;
      } else if (auto gelu = dyn_cast<GeluOp>(op)) {
        if (gelu.getApproximation() != GeluApproximation::Tanh)
          return fail(whyNot, "cuBLASLt's GELU epilogue is the tanh "
                              "approximation; erf GELU runs in its own kernel");
        epilogue.activation = GemmEpilogue::Activation::GeluTanh;
      } else {
        return fail(whyNot, "'" + op->getName().getStringRef() +
                                "' is not a cuBLASLt epilogue");
      }
      current = op->getResult(0);
    }
    if (epilogue.bias) {
      ArrayRef<int64_t> biasShape = tensorType(epilogue.bias).getShape();
      if (computeElements(biasShape) != shape.back())
        return fail(whyNot, "the bias must have N elements");
    }
    analysis.precision = matmul.getMathPrecision();
    for (KernelInput &input : analysis.inputs)
      input.pattern = tensorType(input.value).getShape() == shape
                          ? AccessPattern::Full
                          : AccessPattern::Suffix;
    return true;
  }

  /// Sibling matmuls (isDualGemm) as one strided-batched cuBLASLt call, as
  /// vLLM's merged QKV and gate/up weights run: the weights are the batch
  /// (memwall.stack_view places them side by side in the arena), the lhs is
  /// shared (batch stride 0), and each product is one batch of the result.
  /// So every rhs is a function argument of its own that no other matmul
  /// reads as its rhs (each weight lies in one stack), the rhs is one
  /// matrix and the lhs is read as stored, and nothing follows: cuBLASLt
  /// writes each product whole.
  bool analyzeBatchedGemm() {
    SmallVector<MatmulOp> matmuls{cast<MatmulOp>(analysis.anchor),
                                  cast<MatmulOp>(analysis.siblingMatmul)};
    for (Operation *op : moreSiblings)
      matmuls.push_back(cast<MatmulOp>(op));
    auto refuse = [&](const Twine &why) {
      return fail(whyNot, "cuBLASLt runs sibling matmuls as one batched call "
                          "only " +
                              why);
    };
    if (analysis.ops.size() != matmuls.size())
      return refuse("with no epilogue (it writes each product whole)");
    llvm::SmallPtrSet<Value, 4> weights;
    for (MatmulOp matmul : matmuls) {
      if (matmul.getBias())
        return refuse("with no bias");
      if (matmul.getTransposeLhs() || matmul.getRhs().getType().getRank() != 2)
        return refuse("of one rhs matrix and an lhs read as stored");
      Value weight = getValueOutsideFusions(matmul.getRhs());
      auto argument = dyn_cast<BlockArgument>(weight);
      if (!argument ||
          !isa_and_nonnull<func::FuncOp>(argument.getOwner()->getParentOp()))
        return refuse("when every rhs is a function argument (the arena "
                      "places them side by side)");
      if (!weights.insert(weight).second)
        return refuse("of distinct rhs");
      bool readElsewhere = false;
      forEachRhsReader(weight, [&](MatmulOp reader) {
        readElsewhere |= !members.contains(reader);
      });
      if (readElsewhere)
        return refuse("when no other matmul reads an rhs (each lies in one "
                      "stack of the arena)");
    }
    analysis.batchedMatmuls.assign(matmuls.begin(), matmuls.end());
    analysis.precision = matmuls.front().getMathPrecision();
    for (KernelInput &input : analysis.inputs)
      input.pattern = AccessPattern::Full;
    return true;
  }

  /// A horizontal kernel takes every buffer as a pointer parameter: at most
  /// kMaxKernelParameterBytes of them (the fuser starts another launch).
  bool fitsKernelParameters() {
    int64_t bytes = static_cast<int64_t>(analysis.inputs.size()) *
                    kKernelPointerParameterBytes;
    if (bytes <= kMaxKernelParameterBytes)
      return true;
    return fail(whyNot, "its " + Twine(analysis.inputs.size()) +
                            " buffers take " + Twine(bytes) +
                            " bytes of kernel parameters, more than the " +
                            Twine(kMaxKernelParameterBytes) + " a launch has");
  }

  /// The one time model (Roofline.h) on the kernel's FLOPs and traffic: a
  /// GEMM at its shape class's efficiency, a generated kernel at the
  /// bandwidth its occupancy sustains.
  void predictTime() {
    KernelWork work;
    if (analysis.kind == FusionKind::MatmulEpilogue ||
        analysis.kind == FusionKind::Gemm) {
      work = cast<CostOpInterface>(analysis.anchor).getKernelWork(target);
      if (analysis.kind == FusionKind::Gemm) {
        work.unit = ComputeUnit::GeneratedGemm;
        work.computeFraction = tileFraction;
        // Fewer CTAs than SMs stream from as many SMs only (measured on an
        // H100: the 64 CTAs of the 1x4096x4096 wgmma GEMM pulled 0.90 TB/s,
        // 0.30 of the copy rate; docs/PERFORMANCE.md).
        const GemmTiling &tiling = analysis.tiling;
        double ctas = static_cast<double>(tiling.grid[0]) * tiling.grid[1] *
                      tiling.grid[2];
        work.bandwidthFraction =
            std::min(1.0, ctas / std::max(target.smCount, 1u));
        // Each CTA row of tiles dequantizes the whole rhs it reads.
        work.cudaCoreInstructions = 0;
        for (Operation *op : {analysis.anchor, analysis.siblingMatmul})
          if (auto product = dyn_cast_or_null<MatmulOp>(op))
            work.cudaCoreInstructions +=
                getDequantizePrologueWork(product, tiling.blockM);
      }
      // A dual GEMM's (a batched call's) shape class is that of the
      // product with every rhs side by side (N doubled, tripled).
      if (analysis.siblingMatmul) {
        MatmulOp::Dims dims = cast<MatmulOp>(analysis.anchor).getDims();
        int64_t products = 2 + static_cast<int64_t>(moreSiblings.size());
        work.gemmShape =
            classifyGemm(dims.batch, dims.m, products * dims.n, dims.k);
      }
    } else if (analysis.kind != FusionKind::Horizontal) {
      work.bandwidthFraction =
          std::min(1.0, analysis.geometry.occupancy / kFullBandwidthOccupancy);
    }
    if (analysis.kind == FusionKind::Dequantize)
      work.cudaCoreInstructions =
          static_cast<double>(computeElements(analysis.iterationShape)) *
          getDequantizeKernelInstructions(cast<DequantizeOp>(analysis.anchor));
    work.flops = static_cast<double>(analysis.flops);
    work.bytesRead = static_cast<double>(analysis.bytesRead);
    work.bytesWritten = static_cast<double>(analysis.bytesWritten);
    work.precision = analysis.precision;
    work.launchesKernel = true;
    if (analysis.kind == FusionKind::Gemm && analysis.tiling.splitK > 1)
      splitWork(work);
    analysis.work = work;
    analysis.estimate = estimateKernelTime(work, target);
    analysis.timeSeconds = analysis.estimate.timeSeconds;
  }

  /// Split-K: every CTA writes its f32 partials of [splitK, rhsOperands,
  /// M, N] and the last CTA of each tile reads them all back, in the one
  /// kernel.
  void splitWork(KernelWork &work) {
    double partials =
        static_cast<double>((CheckedInt(getGemmSplitKPartialElements(
                                 analysis.tiling, analysis.gemm)) *
                             4)
                                .saturated());
    work.bytesRead += partials;
    work.bytesWritten += partials;
  }

  static std::string shapeString(ArrayRef<int64_t> shape) {
    std::string text;
    for (int64_t d : shape)
      text += (text.empty() ? "" : ", ") + std::to_string(d);
    return text;
  }

  const GPUTarget &target;
  std::string *whyNot;
  KernelAnalysis analysis;
  llvm::SmallPtrSet<Operation *, 16> members;
  /// A layer_norm or rms_norm in a matmul's epilogue (memwall's GEMM only).
  Operation *rowNorm = nullptr;
  /// Matmuls beyond the sibling: a batched cuBLASLt call's third and on.
  SmallVector<Operation *> moreSiblings;
  /// The ops hold a reshape, transpose or rope (a heads layout, or refused).
  bool hasHeadsLayoutOps = false;
  /// Dequantizes making the matmuls' rhs (their main loop's prologue).
  SmallVector<DequantizeOp, 2> dequantizes;
  /// The generated GEMM's tiling's work against the one it would choose
  /// without a norm (below 1 when row-chunked).
  double tileFraction = 1;
};
} // namespace

bool memwall::isGemmHeadsLayoutOp(Operation *op) {
  return isa<ReshapeOp, TransposeOp, RopeOp, KVCacheAppendOp>(op);
}

Value GemmHeadsLayout::getOutput() const {
  if (append)
    return append->getResult(0);
  return rope ? rope->getResult(0) : heads->getResult(0);
}

/// Whether `permutation` swaps the two dims before the last.
static bool swapsSequenceAndHeads(ArrayRef<int64_t> permutation) {
  int64_t rank = static_cast<int64_t>(permutation.size());
  if (rank < 3)
    return false;
  for (int64_t i = 0; i < rank; ++i) {
    int64_t expected =
        i == rank - 3 ? rank - 2 : (i == rank - 2 ? rank - 3 : i);
    if (permutation[i] != expected)
      return false;
  }
  return true;
}

/// Whether `split` is `whole` [.., N] with its last dim split in two: [..,
/// H, D], H·D = N.
static bool splitsLastDim(ArrayRef<int64_t> whole, ArrayRef<int64_t> split) {
  return !whole.empty() && split.size() == whole.size() + 1 &&
         split.drop_back(2) == whole.drop_back() &&
         split[split.size() - 2] * split.back() == whole.back();
}

/// `op` as a `First` whose one user is a `Second` of its block, and that
/// user; empty otherwise.
template <typename First, typename Second>
static SmallVector<Operation *, 2> getSingleUsePair(Operation *op) {
  auto first = dyn_cast<First>(op);
  if (!first || !first->getResult(0).hasOneUse())
    return {};
  auto second = dyn_cast<Second>(*first->getUsers().begin());
  if (!second || second->getBlock() != first->getBlock())
    return {};
  return {first, second};
}

SmallVector<Operation *, 2> memwall::getGemmHeadsMergeOps(Operation *op) {
  return getSingleUsePair<TransposeOp, ReshapeOp>(op);
}

FailureOr<std::optional<GemmLhsHeadsMerge>>
memwall::matchGemmLhsHeadsMerge(ArrayRef<Operation *> ops, MatmulOp matmul,
                                std::string *whyNot) {
  llvm::SmallPtrSet<Operation *, 16> members(ops.begin(), ops.end());
  auto refuse = [&](const Twine &why) {
    fail(whyNot, "a GEMM reads a heads-merged lhs through a transpose of "
                 "[.., H, S, D] to [.., S, H, D] and a reshape to [.., S, "
                 "H·D], but " +
                     why);
    return failure();
  };
  std::optional<GemmLhsHeadsMerge> found;
  for (Operation *op : ops) {
    auto transpose = dyn_cast<TransposeOp>(op);
    if (!transpose)
      continue;
    Operation *def = transpose.getInput().getDefiningOp();
    if (def && members.contains(def))
      continue;
    if (found)
      return refuse("the kernel holds two");
    if (!swapsSequenceAndHeads(transpose.getPermutation()))
      return refuse("the transpose does not swap H and S");
    SmallVector<Operation *, 2> chain = getGemmHeadsMergeOps(transpose);
    if (chain.empty() || !members.contains(chain.back()))
      return refuse("the transpose feeds no reshape of the kernel");
    auto reshape = cast<ReshapeOp>(chain.back());
    ArrayRef<int64_t> from = transpose.getType().getShape();
    ArrayRef<int64_t> to = reshape.getType().getShape();
    if (!splitsLastDim(to, from))
      return refuse("the reshape does not merge the last two dims");
    if (reshape.getResult() != matmul.getLhs() ||
        !llvm::all_of(reshape->getUsers(), [&](Operation *user) {
          return members.contains(user) && isa<MatmulOp>(user);
        }))
      return refuse("the reshape is not the lhs of the kernel's matmuls "
                    "alone");
    found = GemmLhsHeadsMerge{transpose, reshape, from[from.size() - 2],
                              from.back(), from[from.size() - 3]};
  }
  return found;
}

SmallVector<Operation *, 2> memwall::getGemmHeadsSplitOps(Operation *op) {
  return getSingleUsePair<ReshapeOp, TransposeOp>(op);
}

SmallVector<Operation *, 2> memwall::getLayoutStep(Operation *op) {
  if (isa<RopeOp, SliceOp, ConcatOp>(op))
    return {op};
  if (auto append = dyn_cast<KVCacheAppendOp>(op);
      append && append.canAppendInPlace())
    return {op};
  SmallVector<Operation *, 2> step = getGemmHeadsSplitOps(op);
  return step.empty() ? getGemmHeadsMergeOps(op) : step;
}

bool memwall::isFoldableLayoutOp(Operation *op) {
  return isGemmHeadsLayoutOp(op) || isa<SliceOp, ConcatOp>(op);
}

/// The bytes of one element of `value`'s tensor type.
static int64_t elementBytes(Value value) {
  return std::max<int64_t>(
      1, tensorType(value).getElementType().getIntOrFloatBitWidth() / 8);
}

/// Why a kernel moving `accessBytes` at a time cannot address `layout` of
/// `bytes`-byte elements ("" when it can): the last dim must be dense, and
/// the offset and every other stride whole accesses.
static std::string whyNotAddressable(const StridedLayout &layout, int64_t bytes,
                                     int64_t accessBytes) {
  if (layout.strides.back() != 1 && layout.shape.back() != 1)
    return "its last dim is not contiguous";
  auto aligned = [&](int64_t elements) {
    return elements * bytes % accessBytes == 0;
  };
  if (!aligned(layout.offset))
    return "it starts " + std::to_string(layout.offset * bytes) +
           " bytes into its buffer, not a multiple of " +
           std::to_string(accessBytes);
  for (auto [size, stride] :
       llvm::zip_equal(ArrayRef(layout.shape).drop_back(),
                       ArrayRef(layout.strides).drop_back()))
    if (size != 1 && !aligned(stride))
      return "a stride of " + std::to_string(stride * bytes) +
             " bytes is not a multiple of " + std::to_string(accessBytes);
  return "";
}

/// Where `operand` (named `name` in diagnostics) lies in the kernel input it
/// is a view of: back from it through the views of `members` (each read by
/// the next alone, added to `placed`) to a kernel input. Fails through
/// `refuse` for another op on the way, a view no strided layout describes,
/// or one that a kernel moving `accessBytes` at a time cannot address.
static FailureOr<std::pair<Value, StridedLayout>>
traceOperandView(Value operand, StringRef name, int64_t accessBytes,
                 const llvm::SmallPtrSetImpl<Operation *> &members,
                 llvm::SmallPtrSetImpl<Operation *> &placed,
                 function_ref<LogicalResult(const Twine &)> refuse) {
  SmallVector<Operation *> chain;
  Value value = operand;
  while (Operation *def = value.getDefiningOp()) {
    if (!members.contains(def))
      break;
    if (!isViewOp(def))
      return refuse(name + " is computed in the kernel by '" +
                    def->getName().getStringRef() + "'");
    if (!def->getResult(0).hasOneUse())
      return refuse("a view making " + name + " is read elsewhere too");
    chain.push_back(def);
    placed.insert(def);
    value = def->getOperand(0);
  }
  std::optional<StridedLayout> layout =
      StridedLayout::contiguous(tensorType(value).getShape());
  for (Operation *op : llvm::reverse(chain))
    if (!(layout = layout->through(op)))
      return refuse("the reshape making " + name +
                    " is no strided view of its input");
  if (std::string why =
          whyNotAddressable(*layout, elementBytes(value), accessBytes);
      !why.empty())
    return refuse("the view " + name + " reads: " + why);
  return std::make_pair(value, std::move(*layout));
}

namespace {
/// What may end the views a kernel writes a result through, besides
/// reshapes and transposes.
enum class ViewEnd {
  None,
  /// A concat (attention's gradients packed).
  Concat,
  /// An in-place KV-cache append of the result (a rope writing k's new rows
  /// into the cache).
  CacheAppend,
};
} // namespace

/// Where `result` (named `name` in diagnostics) lands in the kernel output
/// it is written through: forward from it through the views of `members`
/// that take it (reshapes and transposes, each reading the one before
/// alone, and what `end` allows last) to a kernel output, added to
/// `placed`. Fails through `refuse` for another op on the way, a result
/// read both through a view and as it is, a layout that is no strided view
/// of the output, or one that stores of `accessBytes` cannot address. A
/// concat's other operands are the caller's to check.
static FailureOr<std::pair<Value, StridedLayout>>
traceResultView(Value result, StringRef name, int64_t accessBytes, ViewEnd end,
                const llvm::SmallPtrSetImpl<Operation *> &members,
                llvm::SmallPtrSetImpl<Operation *> &placed,
                function_ref<LogicalResult(const Twine &)> refuse) {
  SmallVector<OpOperand *> chain;
  Value output = result;
  while (llvm::any_of(output.getUsers(), [&](Operation *user) {
    return members.contains(user);
  })) {
    if (!output.hasOneUse())
      return refuse(name + " is read both through a layout and as it is");
    OpOperand &use = *output.getUses().begin();
    Operation *user = use.getOwner();
    auto append = dyn_cast<KVCacheAppendOp>(user);
    bool ends = (end == ViewEnd::Concat && isa<ConcatOp>(user)) ||
                (end == ViewEnd::CacheAppend && append &&
                 append.canAppendInPlace() && use.get() == append.getUpdate());
    if (!isa<ReshapeOp, TransposeOp>(user) && !ends)
      return refuse(name + " is read in the kernel by '" +
                    user->getName().getStringRef() + "'");
    if (!chain.empty() &&
        isa<ConcatOp, KVCacheAppendOp>(chain.back()->getOwner()))
      return refuse("what " + name + " is written into is read in the kernel");
    chain.push_back(&use);
    placed.insert(user);
    output = user->getResult(0);
  }
  std::optional<StridedLayout> layout =
      StridedLayout::contiguous(tensorType(output).getShape());
  for (OpOperand *use : llvm::reverse(chain))
    if (!(layout = layout->before(use->getOwner(), use->getOperandNumber())))
      return refuse(name + "'s layout is no strided view of the kernel's "
                           "output");
  if (std::string why =
          whyNotAddressable(*layout, elementBytes(output), accessBytes);
      !why.empty())
    return refuse("the view " + name + " is written through: " + why);
  return std::make_pair(output, std::move(*layout));
}

FailureOr<RopeViews> memwall::matchRopeViews(ArrayRef<Operation *> ops,
                                             std::string *whyNot) {
  llvm::SmallPtrSet<Operation *, 16> members(ops.begin(), ops.end());
  auto refuse = [&](const Twine &why) {
    return fail(whyNot, "a rope kernel rotates one rope, or two of one "
                        "element type, head dim and positions, reading "
                        "their inputs through reshapes, transposes and "
                        "slices and writing their results through reshapes "
                        "and transposes, but " +
                            why),
           failure();
  };
  RopeViews views;
  llvm::SmallPtrSet<Operation *, 16> placed;
  for (Operation *op : ops)
    if (auto rope = dyn_cast<RopeOp>(op)) {
      views.ropes.push_back(rope);
      placed.insert(rope);
    }
  if (views.ropes.empty() || views.ropes.size() > 2)
    return refuse("the kernel holds " + Twine(views.ropes.size()));
  RopeOp first = views.ropes.front();
  for (RopeOp rope : views.ropes) {
    RankedTensorType type = rope.getType(), firstType = first.getType();
    if (rope.getPositions() != first.getPositions() ||
        rope.getTheta() != first.getTheta() ||
        rope.getLlama3ScalingAttr() != first.getLlama3ScalingAttr() ||
        rope.getInverse() != first.getInverse() ||
        type.getElementType() != firstType.getElementType() ||
        type.getDimSize(0) != firstType.getDimSize(0) ||
        type.getDimSize(2) != firstType.getDimSize(2) ||
        type.getDimSize(3) != firstType.getDimSize(3))
      return refuse("the two differ");
    if (Operation *def = rope.getPositions().getDefiningOp();
        def && members.contains(def))
      return refuse("the positions are computed in the kernel");
    // Rows of pairs are moved in vectors of at least 4 bytes.
    FailureOr<std::pair<Value, StridedLayout>> view = traceOperandView(
        rope.getInput(), "its input", 4, members, placed, refuse);
    if (failed(view))
      return failure();
    views.sources.push_back(view->first);
    views.inputs.push_back(std::move(view->second));
    FailureOr<std::pair<Value, StridedLayout>> output =
        traceResultView(rope.getResult(), "its result", 4, ViewEnd::CacheAppend,
                        members, placed, refuse);
    if (failed(output))
      return failure();
    views.outputs.push_back(output->first);
    views.outputLayouts.push_back(std::move(output->second));
  }
  for (Operation *op : ops)
    if (!placed.contains(op))
      return refuse("'" + op->getName().getStringRef() +
                    "' makes none of their inputs");
  return views;
}

/// The one op of type `OpT` among `ops`; fails through `refuse` for none
/// or two.
template <typename OpT>
static FailureOr<OpT>
findTheOne(ArrayRef<Operation *> ops,
           function_ref<LogicalResult(const Twine &)> refuse) {
  OpT found;
  for (Operation *op : ops) {
    auto candidate = dyn_cast<OpT>(op);
    if (!candidate)
      continue;
    if (found)
      return refuse("the kernel holds two '" + OpT::getOperationName() + "'");
    found = candidate;
  }
  if (!found)
    return refuse("the kernel holds no '" + OpT::getOperationName() + "'");
  return found;
}

/// traceOperandView for each of an attention kernel's `operands` (named
/// `names`), whose tiles are copied in 16-byte chunks, into `sources` and
/// `layouts`.
static LogicalResult
traceAttentionOperands(ArrayRef<Value> operands, ArrayRef<StringLiteral> names,
                       const llvm::SmallPtrSetImpl<Operation *> &members,
                       llvm::SmallPtrSetImpl<Operation *> &placed,
                       function_ref<LogicalResult(const Twine &)> refuse,
                       MutableArrayRef<Value> sources,
                       MutableArrayRef<StridedLayout> layouts) {
  for (auto [i, operand] : llvm::enumerate(operands)) {
    FailureOr<std::pair<Value, StridedLayout>> view =
        traceOperandView(operand, names[i], 16, members, placed, refuse);
    if (failed(view))
      return failure();
    sources[i] = view->first;
    layouts[i] = std::move(view->second);
  }
  return success();
}

FailureOr<AttentionViews>
memwall::matchAttentionViews(ArrayRef<Operation *> ops, std::string *whyNot) {
  llvm::SmallPtrSet<Operation *, 16> members(ops.begin(), ops.end());
  auto refuse = [&](const Twine &why) {
    return fail(whyNot, "attention reads q, k and v and writes its output "
                        "through reshapes, transposes and slices it can "
                        "index, but " +
                            why),
           failure();
  };
  AttentionViews views;
  FailureOr<FlashAttentionOp> found = findTheOne<FlashAttentionOp>(ops, refuse);
  if (failed(found))
    return failure();
  FlashAttentionOp attention = views.attention = *found;
  llvm::SmallPtrSet<Operation *, 16> placed{attention};
  static constexpr StringLiteral kOperandNames[] = {"q", "k", "v"};
  if (failed(traceAttentionOperands(
          {attention.getQuery(), attention.getKey(), attention.getValue()},
          kOperandNames, members, placed, refuse, views.sources,
          views.operands)))
    return failure();
  if (Value mask = attention.getMask())
    if (Operation *def = mask.getDefiningOp(); def && members.contains(def))
      return refuse("its mask is computed in the kernel");
  for (Operation *user : attention.getLse().getUsers())
    if (members.contains(user))
      return refuse("its log-sum-exp is read in the kernel");
  // Rows are stored as pairs of elements.
  FailureOr<std::pair<Value, StridedLayout>> output =
      traceResultView(attention.getResult(), "its output",
                      2 * elementBytes(attention.getResult()), ViewEnd::None,
                      members, placed, refuse);
  if (failed(output))
    return failure();
  views.output = output->first;
  views.outputLayout = std::move(output->second);
  for (Operation *op : ops)
    if (!placed.contains(op))
      return refuse("'" + op->getName().getStringRef() +
                    "' makes none of its operands or output");
  return views;
}

FailureOr<AttentionGradViews>
memwall::matchAttentionGradViews(ArrayRef<Operation *> ops,
                                 std::string *whyNot) {
  llvm::SmallPtrSet<Operation *, 16> members(ops.begin(), ops.end());
  auto refuse = [&](const Twine &why) {
    return fail(whyNot, "attention's backward reads q, k, v, the output and "
                        "its gradient and writes dq, dk and dv through "
                        "reshapes, transposes, slices and a concat of the "
                        "three it can index, but " +
                            why),
           failure();
  };
  AttentionGradViews views;
  FailureOr<FlashAttentionGradOp> found =
      findTheOne<FlashAttentionGradOp>(ops, refuse);
  if (failed(found))
    return failure();
  FlashAttentionGradOp grad = views.grad = *found;
  llvm::SmallPtrSet<Operation *, 16> placed{grad};
  static constexpr StringLiteral kOperandNames[] = {"q", "k", "v", "out",
                                                    "the output's gradient"};
  if (failed(traceAttentionOperands({grad.getQuery(), grad.getKey(),
                                     grad.getValue(), grad.getOut(),
                                     grad.getGrad()},
                                    kOperandNames, members, placed, refuse,
                                    views.sources, views.operands)))
    return failure();
  for (Value operand : std::array<Value, 2>{grad.getLse(), grad.getMask()})
    if (Operation *def = operand ? operand.getDefiningOp() : nullptr;
        def && members.contains(def))
      return refuse("its log-sum-exp or mask is computed in the kernel");
  static constexpr StringLiteral kResultNames[] = {"dq", "dk", "dv"};
  for (auto [i, result] : llvm::enumerate(grad.getResults())) {
    // Rows are stored as pairs of elements.
    FailureOr<std::pair<Value, StridedLayout>> output =
        traceResultView(result, kResultNames[i], 2 * elementBytes(result),
                        ViewEnd::Concat, members, placed, refuse);
    if (failed(output))
      return failure();
    views.outputs[i] = output->first;
    views.outputLayouts[i] = std::move(output->second);
  }
  // A concat packs the gradients only: every operand is one of them.
  for (Value output : views.outputs)
    if (auto concat = output.getDefiningOp<ConcatOp>())
      if (llvm::count(views.outputs, output) !=
          static_cast<int64_t>(concat.getInputs().size()))
        return refuse("a concat in the kernel packs more than its gradients");
  for (Operation *op : ops)
    if (!placed.contains(op))
      return refuse("'" + op->getName().getStringRef() +
                    "' makes none of its operands or gradients");
  return views;
}

double memwall::predictLayoutKernelsSeconds(ArrayRef<Operation *> ops,
                                            const GPUTarget &target) {
  double seconds = 0;
  for (Operation *op : ops)
    seconds +=
        estimateOpRoofline(cast<CostOpInterface>(op), target).timeSeconds;
  return seconds;
}

FailureOr<SmallVector<GemmHeadsLayout, 2>>
memwall::matchGemmHeadsLayouts(ArrayRef<Operation *> ops,
                               ArrayRef<int64_t> resultShape, int64_t products,
                               std::string *whyNot) {
  SmallVector<GemmHeadsLayout, 2> layouts;
  llvm::SmallPtrSet<Operation *, 16> members(ops.begin(), ops.end());
  auto refuse = [&](const Twine &why) {
    fail(whyNot, "a GEMM's result is written heads-split by a reshape of "
                 "[.., S, N] to [.., S, H, D], a transpose to [.., H, S, D] "
                 "and an optional rope, but " +
                     why);
    return failure();
  };
  auto layoutOf = [&](Value value, auto member) -> GemmHeadsLayout * {
    for (GemmHeadsLayout &layout : layouts)
      if (Operation *op = layout.*member; op && op->getResult(0) == value)
        return &layout;
    return nullptr;
  };
  for (Operation *op : ops) {
    if (!isGemmHeadsLayoutOp(op))
      continue;
    Value input = op->getOperand(0);
    // With S or H 1 the heads transpose moves no element and is a reshape
    // (TransposeOp's canonicalization).
    if (GemmHeadsLayout *layout = layoutOf(input, &GemmHeadsLayout::split);
        layout && isa<ReshapeOp>(op)) {
      ArrayRef<int64_t> split = tensorType(input).getShape();
      SmallVector<int64_t> swapped(split);
      std::swap(swapped[swapped.size() - 3], swapped[swapped.size() - 2]);
      if (layout->heads ||
          tensorType(op->getResult(0)).getShape() != ArrayRef<int64_t>(swapped))
        return refuse("a reshape of the heads split does not swap S and H");
      layout->heads = op;
      continue;
    }
    if (auto reshape = dyn_cast<ReshapeOp>(op)) {
      ArrayRef<int64_t> from = tensorType(input).getShape();
      ArrayRef<int64_t> to = reshape.getType().getShape();
      Operation *def = input.getDefiningOp();
      if (!def || !members.contains(def) || from != resultShape)
        return refuse("the reshape's input is not a value of the matmul's "
                      "shape computed in the kernel");
      if (from.size() < 2 || !splitsLastDim(from, to))
        return refuse("the reshape does not split the last dim in two");
      if (static_cast<int64_t>(layouts.size()) == products)
        return refuse("the kernel holds more heads layouts than products");
      GemmHeadsLayout &layout = layouts.emplace_back();
      layout.split = reshape;
      layout.numHeads = to[to.size() - 2];
      layout.headDim = to.back();
      layout.seqLen = from[from.size() - 2];
    } else if (auto transpose = dyn_cast<TransposeOp>(op)) {
      GemmHeadsLayout *layout = layoutOf(input, &GemmHeadsLayout::split);
      if (!layout || layout->heads)
        return refuse("the transpose reads no reshape of the layout");
      if (!swapsSequenceAndHeads(transpose.getPermutation()))
        return refuse("the transpose does not swap S and H");
      layout->heads = transpose;
    } else if (auto rope = dyn_cast<RopeOp>(op)) {
      GemmHeadsLayout *layout = layoutOf(input, &GemmHeadsLayout::heads);
      if (!layout || layout->rope)
        return refuse("the rope reads no transpose of the layout");
      if (layout->headDim % 2 != 0)
        return refuse("the head dim is odd");
      layout->rope = rope;
    } else {
      auto append = cast<KVCacheAppendOp>(op);
      GemmHeadsLayout *layout =
          llvm::find_if(layouts, [&](const GemmHeadsLayout &candidate) {
            return candidate.heads && !candidate.append &&
                   candidate.getOutput() == append.getUpdate();
          });
      if (layout == layouts.end())
        return refuse("the KV-cache append's update is no layout's result");
      if (!append.canAppendInPlace())
        return refuse("the KV cache is not a function argument only the "
                      "append reads, so it is copied by a kernel of its own");
      layout->append = append;
      layout->cacheLength = append.getCache().getType().getDimSize(2);
      layout->cacheRows = append.getType().getDimSize(2);
    }
  }
  // Each value of a layout feeds only the next op of it (or leaves the
  // kernel) and a rope's result leaves it, so the epilogue's other ops
  // never wait for a layout.
  auto feedsOnly = [&](Value value, Operation *next) {
    return llvm::all_of(value.getUsers(), [&](Operation *user) {
      return user == next || !members.contains(user);
    });
  };
  for (GemmHeadsLayout layout : layouts) {
    if (!layout.heads)
      return refuse("the reshape has no transpose after it");
    Operation *afterHeads =
        layout.rope ? layout.rope.getOperation() : layout.append.getOperation();
    if (!feedsOnly(layout.split.getResult(), layout.heads) ||
        !feedsOnly(layout.heads->getResult(0), afterHeads) ||
        (layout.rope && !feedsOnly(layout.rope.getResult(), layout.append)))
      return refuse("another op of the kernel reads a value of the layout");
  }
  return layouts;
}

FailureOr<KernelAnalysis> memwall::analyzeKernel(ArrayRef<Operation *> ops,
                                                 const GPUTarget &target,
                                                 std::string *whyNot) {
  return KernelAnalyzer(ops, target, whyNot).run();
}

DequantizeOp memwall::getRhsPrologue(MatmulOp matmul) {
  auto dequantize = matmul.getRhs().getDefiningOp<DequantizeOp>();
  if (!dequantize || dequantize->getBlock() != matmul->getBlock() ||
      !dequantize.getResult().hasOneUse() || dequantize.getMaterialize())
    return DequantizeOp();
  return dequantize;
}

DequantizeOp memwall::getScalesPrologue(DequantizeOp dequantize) {
  auto scales = dequantize.getScales().getDefiningOp<DequantizeOp>();
  if (!scales || scales->getBlock() != dequantize->getBlock() ||
      !scales.getResult().hasOneUse())
    return DequantizeOp();
  return scales;
}

std::string memwall::whyNoDequantizeCode(DequantizeOp dequantize) {
  Type stored = dequantize.getInput().getType().getElementType();
  if (!stored.isInteger(8) && !stored.isInteger(4) &&
      !isa<Float8E4M3FNType, Float8E5M2Type>(stored))
    return "the generated code dequantizes i8, i4, f8E4M3FN or f8E5M2 "
           "weights";
  if (dequantize.getScales().getType().getRank() != 2)
    return "the generated code dequantizes rank-2 weights";
  if (dequantize.getCodebook() && !stored.isInteger(4))
    return "the generated code looks codes up in 16-entry (i4) codebooks";
  if (DequantizeOp scales = getScalesPrologue(dequantize);
      scales && (!scales.getInput().getType().getElementType().isInteger(8) ||
                 scales.getZeroPoints() || scales.getCodebook()))
    return "the generated code dequantizes double-quantized scales stored "
           "as i8 with scales of their own, no zero points or codebook";
  return "";
}

SmallVector<Operation *, 2>
memwall::getDequantizeKernelOps(DequantizeOp dequantize) {
  SmallVector<Operation *, 2> ops;
  if (DequantizeOp scales = getScalesPrologue(dequantize))
    ops.push_back(scales);
  ops.push_back(dequantize);
  return ops;
}

namespace {
/// An unfused copy of a function in a scratch module with the module's
/// attributes (target, GEMM policy): each kernel's ops in one block, so
/// that other kernels than memwall-fuse's can be analysed without changing
/// the function.
struct UnfusedCopy {
  explicit UnfusedCopy(func::FuncOp function) {
    OpBuilder builder(function.getContext());
    scratch = ModuleOp::create(function.getLoc());
    if (auto module = function->getParentOfType<ModuleOp>())
      (*scratch)->setAttrs(module->getAttrDictionary());
    builder.setInsertionPointToEnd(scratch->getBody());
    IRMapping mapping;
    copy = cast<func::FuncOp>(builder.clone(*function, mapping));
    for (Operation &op : function.getBody().front().without_terminator()) {
      Operation *copied = mapping.lookup(&op);
      auto fusion = dyn_cast<FusionOp>(copied);
      if (!fusion) {
        opsOf[&op] = {copied};
        continue;
      }
      Block &inner = fusion.getBodyBlock();
      for (auto [argument, input] :
           llvm::zip_equal(inner.getArguments(), fusion.getInputs()))
        argument.replaceAllUsesWith(input);
      auto yield = cast<YieldOp>(inner.getTerminator());
      fusion->replaceAllUsesWith(yield.getValues());
      SmallVector<Operation *> ops;
      for (Operation &member : inner.without_terminator())
        ops.push_back(&member);
      for (Operation *member : ops)
        member->moveBefore(fusion);
      yield.erase();
      fusion.erase();
      opsOf[&op] = std::move(ops);
    }
  }

  OwningOpRef<ModuleOp> scratch;
  func::FuncOp copy;
  /// Each op of the function's body: its ops in the copy (a fusion's, its
  /// body's).
  DenseMap<Operation *, SmallVector<Operation *>> opsOf;
};
} // namespace

/// The report's locations of `ops`.
static std::vector<std::string> reportLocations(ArrayRef<Operation *> ops) {
  std::vector<std::string> locs;
  for (Operation *op : ops)
    locs.push_back(formatLocationForReport(op->getLoc()));
  return locs;
}

static std::string formatMicros(double seconds) {
  return llvm::formatv("{0:f1} us", seconds * 1e6).str();
}

std::vector<FusionRefusal>
memwall::explainUnfusedGemmConsumers(func::FuncOp function,
                                     const GPUTarget &target) {
  std::vector<FusionRefusal> refusals;
  if (function.isExternal())
    return refusals;
  Block &body = function.getBody().front();
  auto holdsMatmul = [](Operation *op) {
    if (isa<MatmulOp>(op))
      return true;
    auto fusion = dyn_cast<FusionOp>(op);
    return fusion && llvm::any_of(fusion.getBodyBlock(), [](Operation &inner) {
             return isa<MatmulOp>(inner);
           });
  };
  // What memwall-fuse may merge into a GEMM's kernel.
  auto mergeable = [&](Operation *op) {
    return isElementwiseOp(op) || isRowReductionOp(op) ||
           !getGemmHeadsSplitOps(op).empty() || isa<RopeOp>(op) ||
           (isa<FusionOp>(op) && !holdsMatmul(op) &&
            cast<FusionOp>(op).getKind() != FusionKind::Attention &&
            cast<FusionOp>(op).getKind() != FusionKind::AttentionGrad &&
            cast<FusionOp>(op).getKind() != FusionKind::Horizontal);
  };
  SmallVector<std::pair<Operation *, Operation *>> pairs;
  for (Operation &op : body.without_terminator()) {
    if (!holdsMatmul(&op))
      continue;
    llvm::SmallSetVector<Operation *, 4> consumers;
    for (Value result : op.getResults())
      for (Operation *user : result.getUsers())
        if (user->getBlock() == &body && mergeable(user))
          consumers.insert(user);
    for (Operation *consumer : consumers)
      pairs.emplace_back(&op, consumer);
    // A heads merge left as a transpose kernel before the GEMM's lhs (a
    // fusion's lhs is the input its body's matmul reads).
    Value lhs;
    if (auto matmul = dyn_cast<MatmulOp>(&op)) {
      lhs = matmul.getLhs();
    } else {
      auto fusion = cast<FusionOp>(&op);
      for (auto matmul : fusion.getBodyBlock().getOps<MatmulOp>())
        if (auto argument = dyn_cast<BlockArgument>(matmul.getLhs()))
          lhs = fusion.getInputs()[argument.getArgNumber()];
    }
    if (Operation *reshape = lhs ? lhs.getDefiningOp() : nullptr)
      if (Operation *transpose = reshape->getOperand(0).getDefiningOp();
          transpose && transpose->getBlock() == &body &&
          getGemmHeadsMergeOps(transpose).size() == 2)
        pairs.emplace_back(transpose, &op);
  }
  // Layout kernels left around attention, its backward or a rope (views
  // none could index): the chain of them making each operand, and a heads
  // merge of attention's output or gradients.
  SmallVector<std::pair<SmallVector<Operation *>, SmallVector<Operation *>>>
      viewChains;
  for (Operation &op : body.without_terminator()) {
    auto fusion = dyn_cast<FusionOp>(&op);
    bool attention =
        isa<FlashAttentionOp, FlashAttentionGradOp>(&op) ||
        (fusion && (fusion.getKind() == FusionKind::Attention ||
                    fusion.getKind() == FusionKind::AttentionGrad));
    if (!attention && !isa<RopeOp>(&op) &&
        !(fusion && fusion.getKind() == FusionKind::Rope))
      continue;
    for (Value operand : op.getOperands()) {
      SmallVector<Operation *> chain;
      for (Operation *def = operand.getDefiningOp();
           def && def->getBlock() == &body && isViewOp(def);
           def = def->getOperand(0).getDefiningOp())
        chain.insert(chain.begin(), def);
      if (llvm::any_of(chain, llvm::IsaPred<TransposeOp, SliceOp>))
        viewChains.emplace_back(std::move(chain),
                                SmallVector<Operation *>{&op});
    }
    if (attention)
      for (Operation *user :
           llvm::SetVector<Operation *>(llvm::from_range, op.getUsers()))
        if (SmallVector<Operation *, 2> merge = getGemmHeadsMergeOps(user);
            !merge.empty() && user->getBlock() == &body)
          viewChains.emplace_back(
              SmallVector<Operation *>{&op},
              SmallVector<Operation *>(merge.begin(), merge.end()));
  }
  if (pairs.empty() && viewChains.empty())
    return refusals;

  UnfusedCopy unfused(function);
  DenseMap<Operation *, SmallVector<Operation *>> &opsOf = unfused.opsOf;

  // The copy's memory over its steps, to say when a merge that saves time
  // was kept apart because it would raise the peak (memwall-fuse's rule).
  MemoryLiveness liveness(unfused.copy);
  StepMemory memory(liveness);

  // A heads split is one step: the reshape and its transpose; layout ops
  // run apart as their own kernels (a reshape as none).
  auto apartSeconds = [&](ArrayRef<Operation *> ops) -> FailureOr<double> {
    if (llvm::all_of(ops, isFoldableLayoutOp))
      return predictLayoutKernelsSeconds(ops, target);
    FailureOr<KernelAnalysis> kernel = analyzeKernel(ops, target);
    if (failed(kernel))
      return failure();
    return kernel->timeSeconds;
  };
  // `op`'s ops in the copy, with the rest of the layout step it starts.
  auto opsWithStep = [&](Operation *op) {
    SmallVector<Operation *> ops(opsOf[op]);
    for (Operation *next : getLayoutStep(op))
      if (next != op)
        ops.append(opsOf[next]);
    return ops;
  };
  auto explain = [&](ArrayRef<Operation *> first,
                     ArrayRef<Operation *> second) {
    SmallVector<Operation *> merged(first);
    merged.append(second.begin(), second.end());
    FusionRefusal refusal;
    refusal.producer = reportLocations(first);
    refusal.consumer = reportLocations(second);
    std::string why;
    FailureOr<KernelAnalysis> kernel = analyzeKernel(merged, target, &why);
    FailureOr<double> apartFirst = apartSeconds(first);
    FailureOr<double> apartSecond = apartSeconds(second);
    if (failed(kernel)) {
      refusal.reason = why;
    } else if (succeeded(apartFirst) && succeeded(apartSecond)) {
      refusal.reason = "one kernel (" +
                       (kernel->gemmChoice.empty() ? std::string("memwall gemm")
                                                   : kernel->gemmChoice) +
                       ") predicts " + formatMicros(kernel->timeSeconds) +
                       ", apart " + formatMicros(*apartFirst) + " + " +
                       formatMicros(*apartSecond);
      double peak = memory.peakWith(memory.plan(merged));
      if (kernel->timeSeconds < *apartFirst + *apartSecond &&
          peak > memory.getLimit())
        refusal.reason += ", but it would raise the peak from " +
                          formatSI(memory.getLimit(), "B") + " to " +
                          formatSI(peak, "B") +
                          " (what its first op reads would live until its "
                          "last)";
    } else {
      return;
    }
    refusals.push_back(std::move(refusal));
  };
  for (auto [producer, consumer] : pairs)
    explain(opsWithStep(producer), opsWithStep(consumer));
  // A view chain and its reader, or attention and its output's views.
  for (const auto &[producers, consumers] : viewChains) {
    SmallVector<Operation *> first, second;
    for (Operation *op : producers)
      first.append(opsOf[op]);
    for (Operation *op : consumers)
      second.append(opsOf[op]);
    explain(first, second);
  }
  return refusals;
}

std::vector<FusionRefusal>
memwall::explainDequantizeKernels(func::FuncOp function,
                                  const GPUTarget &target) {
  std::vector<FusionRefusal> reasons;
  if (function.isExternal())
    return reasons;
  Block &body = function.getBody().front();
  // Each dequantize kernel (a materialized dequantize, or the fusion of it)
  // and the kernel of the one op reading its weight.
  SmallVector<std::pair<Operation *, Operation *>> kernels;
  for (Operation &op : body.without_terminator()) {
    auto fusion = dyn_cast<FusionOp>(&op);
    auto dequantize = dyn_cast<DequantizeOp>(&op);
    if (!(dequantize && dequantize.getMaterialize()) &&
        !(fusion && fusion.getKind() == FusionKind::Dequantize))
      continue;
    if (op.getNumResults() != 1 || !op.getResult(0).hasOneUse())
      continue;
    Operation *reader = *op.getResult(0).getUsers().begin();
    if (reader->getBlock() == &body)
      kernels.emplace_back(&op, reader);
  }
  if (kernels.empty())
    return reasons;
  UnfusedCopy unfused(function);
  for (auto [kernelOp, readerOp] : kernels) {
    SmallVector<Operation *> ops = unfused.opsOf[kernelOp];
    auto dequantize = dyn_cast<DequantizeOp>(ops.back());
    MatmulOp matmul;
    for (Operation *op : unfused.opsOf[readerOp])
      if (auto product = dyn_cast<MatmulOp>(op);
          product && dequantize && product.getRhs() == dequantize.getResult())
        matmul = product;
    if (!matmul)
      continue;
    FailureOr<KernelAnalysis> kernel = analyzeKernel(ops, target);
    FailureOr<KernelAnalysis> gemm = analyzeKernel({matmul}, target);
    if (failed(kernel) || failed(gemm))
      continue;
    // The main loop's alternative: the same ops without `materialize`.
    dequantize.setMaterialize(false);
    ops.push_back(matmul);
    std::string why;
    FailureOr<KernelAnalysis> prologue = analyzeKernel(ops, target, &why);
    ops.pop_back();
    FusionRefusal reason;
    reason.producer = reportLocations(ops);
    reason.consumer = reportLocations({matmul});
    reason.reason =
        formatMicros(kernel->timeSeconds) + " + " +
        formatMicros(gemm->timeSeconds) + ", against " +
        (succeeded(prologue)
             ? formatMicros(prologue->timeSeconds) + " in the GEMM's main loop"
             : "the GEMM's main loop, which cannot run it: " + why);
    reasons.push_back(std::move(reason));
  }
  return reasons;
}

FailureOr<KernelAnalysis> memwall::analyzeFusion(FusionOp fusion,
                                                 const GPUTarget &target,
                                                 std::string *whyNot) {
  SmallVector<Operation *> ops;
  for (Operation &op : fusion.getBodyBlock().without_terminator())
    ops.push_back(&op);
  return analyzeKernel(ops, target, whyNot);
}

bool memwall::isKernelCandidate(Operation *op) {
  auto dequantize = dyn_cast<DequantizeOp>(op);
  return isa<FusionOp, MatmulOp>(op) || isElementwiseOp(op) ||
         isRowReductionOp(op) || (dequantize && dequantize.getMaterialize());
}

FailureOr<KernelAnalysis> memwall::analyzeOpKernel(Operation *op,
                                                   const GPUTarget &target,
                                                   std::string *whyNot) {
  if (auto fusion = dyn_cast<FusionOp>(op))
    return analyzeFusion(fusion, target, whyNot);
  // A matmul reading a dequantize at use runs with it (memwall-fuse puts
  // both in one kernel), unfused too.
  if (auto matmul = dyn_cast<MatmulOp>(op))
    if (DequantizeOp dequantize = getRhsPrologue(matmul)) {
      SmallVector<Operation *, 3> ops{dequantize, op};
      if (DequantizeOp scales = getScalesPrologue(dequantize))
        ops.insert(ops.begin(), scales);
      return analyzeKernel(ops, target, whyNot);
    }
  // A dequantize kernel dequantizes its scales (double quantization).
  if (auto dequantize = dyn_cast<DequantizeOp>(op);
      dequantize && dequantize.getMaterialize())
    return analyzeKernel(getDequantizeKernelOps(dequantize), target, whyNot);
  if (isKernelCandidate(op))
    return analyzeKernel({op}, target, whyNot);
  if (whyNot)
    *whyNot = "not a kernel candidate";
  return failure();
}

FusionCostAnalysis::FusionCostAnalysis(Operation *root) {
  FailureOr<GPUTarget> resolved = getTargetOf(root);
  if (failed(resolved))
    return;
  target = std::move(*resolved);
  root->walk([&](Operation *op) {
    if (op == root || !isKernelCandidate(op))
      return;
    Entry entry;
    FailureOr<KernelAnalysis> kernel =
        analyzeOpKernel(op, *target, &entry.whyNot);
    if (succeeded(kernel))
      entry.kernel = std::move(*kernel);
    kernels.try_emplace(op, std::move(entry));
  });
}

FailureOr<GPUTarget> FusionCostAnalysis::getTarget() const {
  if (!target)
    return failure();
  return *target;
}

const KernelAnalysis *FusionCostAnalysis::lookup(Operation *op) const {
  auto it = kernels.find(op);
  if (it == kernels.end() || !it->second.kernel)
    return nullptr;
  return &*it->second.kernel;
}

StringRef FusionCostAnalysis::getWhyNot(Operation *op) const {
  auto it = kernels.find(op);
  if (it == kernels.end())
    return "not a kernel candidate";
  return it->second.whyNot;
}

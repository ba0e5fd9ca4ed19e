//===- MemWall.h - memwall dialect, attributes and ops ----------*- C++ -*-===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_DIALECT_MEMWALL_IR_MEMWALL_H
#define MEMWALL_DIALECT_MEMWALL_IR_MEMWALL_H

#include "memwall/Hardware/GPUTarget.h"
#include "memwall/Hardware/Roofline.h"
#include "memwall/Support/CheckedInt.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace memwall {
namespace detail {
/// Sum of the byte sizes of all tensor operands / results of `op`.
int64_t sumOperandBytes(mlir::Operation *op);
int64_t sumResultBytes(mlir::Operation *op);
/// `op` (a CostOpInterface op) as a kernel on the CUDA cores.
KernelWork defaultKernelWork(mlir::Operation *op);
/// The check every memwall op's verifier ends with (CostOpInterface's
/// verifier): each tensor it reads or writes, and its FLOPs and bytes, are
/// countable in int64, so nothing computed from verified IR wraps.
mlir::LogicalResult verifyCountable(mlir::Operation *op);
/// Re-runs the type inference of `op` (an InferTypeOpInterface op) and fails
/// with "result type X does not match the inferred type Y" when the result
/// types differ, or with inference's own error.
mlir::LogicalResult verifyInferredResultType(mlir::Operation *op);
} // namespace detail

/// Ops whose spelled-out result type must be the inferred one, checked
/// before the op's verifier (which may rely on the inferred shapes) and
/// reported once. InferTypeOpInterface's own check runs after the op's
/// verifier and adds a generic "failed to infer returned types" to every
/// inference error.
template <typename ConcreteType>
class InferredResultType
    : public mlir::OpTrait::TraitBase<ConcreteType, InferredResultType> {
public:
  static mlir::LogicalResult verifyTrait(mlir::Operation *op) {
    return detail::verifyInferredResultType(op);
  }
};

/// Bytes one element of `elementType` occupies in memory (i1 takes a byte).
int64_t getElementByteSize(mlir::Type elementType);
/// Whether `elementType` is stored packed, several elements a byte (i4: two,
/// the even element in the low nibble); i1 is not (it takes a byte).
bool isPackedSubByte(mlir::Type elementType);
/// Elements and bytes of a statically shaped tensor (0 for anything else),
/// overflowed when they do not fit int64.
CheckedInt countElements(mlir::Type type);
CheckedInt countTensorBytes(mlir::Type type);
/// The same as int64 counts: kUncountable when they do not fit, which
/// verified IR never holds.
int64_t getTensorByteSize(mlir::Type type);
int64_t getNumElements(mlir::Type type);
/// Fails with "<type> has 2^64 elements, more than memwall can count
/// (int64)" (or the same for its bytes), after what `emitError` starts,
/// when a statically shaped tensor type's counts do not fit int64.
mlir::LogicalResult
verifyCountableTensor(mlir::Type type,
                      llvm::function_ref<mlir::InFlightDiagnostic()> emitError);
/// Tensor-core precision a contraction on `elementType` runs at.
MathPrecision getContractionPrecision(mlir::Type elementType);

/// Ops computed independently per output element from the elements of their
/// (broadcast) operands (ElementwiseOpInterface): add, sub, mul, div, scale,
/// gelu, silu, relu, tanh, swiglu, activation_grad, broadcast and
/// float-to-float casts. Fusion and codegen treat them alike.
bool isElementwiseOp(mlir::Operation *op);
/// The operand whose buffer `result` takes instead of a new one (docs/
/// memory.md, "In place"), or null: a backward elementwise op, or elementwise
/// fusion that reads it only through elementwise ops of its shape, reading a
/// value of the result's type that nothing else reads and that owns its
/// buffer (an op's result, not a view or an argument). Each element is read
/// before the same thread writes it, so the kernel may overwrite it.
mlir::Value getReusedOperand(mlir::OpResult result);
/// Ops that reduce along the last axis of one input, row by row
/// (RowReductionOpInterface): layer_norm, rms_norm, softmax on the last
/// axis, reduce over only the last axis.
bool isRowReductionOp(mlir::Operation *op);

/// The shape of a language-model head and its loss (linear_cross_entropy
/// and its gradient): positions (rows of the logits), vocabulary size V and
/// hidden size D, and the chunks of vocabulary columns the ops compute the
/// logits in.
struct LinearHeadDims {
  int64_t tokens = 0, vocab = 0, hidden = 0;
  /// Column chunks the vocabulary is computed in.
  static constexpr int64_t kVocabChunks = 8;
  /// Columns of one chunk: V / kVocabChunks rounded up to 128 (a GEMM
  /// tile), at most V; and how many chunks that makes.
  int64_t getChunkColumns() const;
  int64_t getChunks() const;
  /// Of `hidden` [..., D] times `weight` ([V, D] when `transposeWeight`,
  /// else [D, V]), both verified.
  static LinearHeadDims get(mlir::RankedTensorType hidden,
                            mlir::RankedTensorType weight,
                            bool transposeWeight);
};

/// What a vector-Jacobian product rule (AutodiffOpInterface::buildVJP) builds
/// with: a builder placed in the backward, the location of the op's backward
/// and memwall-autodiff's gradient bookkeeping (implemented by the driver).
class VJPBuilder {
public:
  explicit VJPBuilder(mlir::MLIRContext *context) : builder(context) {}
  virtual ~VJPBuilder() = default;

  mlir::OpBuilder &getBuilder() { return builder; }
  /// The location of the backward of the op being differentiated.
  mlir::Location getLoc() const { return *loc; }
  void setLoc(mlir::Location where) { loc = where; }

  /// Whether the loss is differentiated through `value` (it leads to a
  /// trainable argument): rules build nothing for values that do not.
  virtual bool needsGradient(mlir::Value value) const = 0;
  /// Adds `gradient` to the gradient of `value`, converted to
  /// gradientType(value); nothing when `gradient` is null or `value` needs
  /// none.
  virtual void accumulate(mlir::Value value, mlir::Value gradient) = 0;

  /// Fails with "'op' has no vector-Jacobian product: <why>".
  static mlir::LogicalResult notDifferentiable(mlir::Operation *op,
                                               const llvm::Twine &why);

  /// The type a gradient of `value` is kept in: fp8 values get bf16
  /// gradients (fp8 is a storage format for GEMM inputs, not a gradient
  /// precision).
  static mlir::RankedTensorType gradientType(mlir::Value value);
  /// `value` cast to `type`'s element type (itself when it has it).
  mlir::Value castTo(mlir::Value value, mlir::RankedTensorType type);
  /// Sums `gradient` (shaped like a broadcast result) down to `target`'s
  /// shape: the VJP of NumPy broadcasting.
  mlir::Value reduceToShape(mlir::Value gradient, mlir::Value target);
  /// `value * factor`.
  mlir::Value scale(mlir::Value value, double factor);

private:
  mlir::OpBuilder builder;
  std::optional<mlir::Location> loc;
};
} // namespace memwall

#include "memwall/Dialect/MemWall/IR/MemWallDialect.h.inc"
#include "memwall/Dialect/MemWall/IR/MemWallEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "memwall/Dialect/MemWall/IR/MemWallAttrs.h.inc"

#include "memwall/Dialect/MemWall/IR/MemWallInterfaces.h.inc"

#define GET_OP_CLASSES
#include "memwall/Dialect/MemWall/IR/MemWallOps.h.inc"

#define GET_OP_CLASSES
#include "memwall/Dialect/MemWall/IR/MemWallHostOps.h.inc"

#define GET_OP_CLASSES
#include "memwall/Dialect/MemWall/IR/MemWallKernelOps.h.inc"

namespace memwall {
/// The `memwall.kind` of argument `index` of `function` (input when unset).
ArgKind getArgKind(mlir::FunctionOpInterface function, unsigned index);
/// Whether argument `index` is a weight training updates: a weight without
/// `memwall.frozen`.
bool isTrainableWeight(mlir::FunctionOpInterface function, unsigned index);
/// The layer a generated op belongs to by its name: "layers.12.mlp.fc" (or a
/// fused "layers.12.mlp.fc+layers.12.mlp.act") -> 12; nullopt otherwise.
std::optional<int64_t> parseLayerIndex(llvm::StringRef name);
/// The pass of a training step `op` belongs to: memwall-autodiff's
/// MemWallDialect::kPhaseAttrName ("backward", "optimizer") on `op`, or on
/// its ancestor directly in the function (a fused kernel's), "forward" when
/// neither has one.
llvm::StringRef getPhaseOf(mlir::Operation *op);

/// Weight-only quantization scales (docs/cost-model.md): one 16-bit scale
/// per output channel for 8-bit storage, one per group of kInt4GroupSize
/// weights along the contraction dimension for i4 (AWQ/GPTQ's layout).
constexpr int64_t kInt4GroupSize = 128;
constexpr int64_t kQuantScaleBytes = 2;
/// Whether `cast` is a dequantize at use: it widens quantized storage (i4,
/// i8 or an 8-bit float) to a wider float and only matmuls read the result
/// (directly or inside a fusion). Such a cast runs inside the GEMM: no
/// kernel, no traffic, no buffer of its own.
bool isDequantizeAtUse(CastOp cast);
/// Whether `dequantize` is a dequantize at use: not `materialize`d, and
/// only matmuls read its result (directly or inside a fusion), or only
/// dequantizes at use or materialized read it as their scales (double
/// quantization). It runs inside the kernel reading it: no kernel, no
/// traffic, no buffer of its own.
bool isDequantizeAtUse(DequantizeOp dequantize);
/// The dequantize at use defining `value` (a GEMM's dequantized rhs), or
/// null: none, or one `materialize`d (its GEMM reads the written tensor).
DequantizeOp getDequantizeAtUse(mlir::Value value);
/// QLoRA's 4-bit NormalFloat codebook (Dettmers et al. 2023, as
/// bitsandbytes ships it): 16 values in [-1, 1], code 7 exactly zero.
llvm::ArrayRef<float> getNF4Codebook();
/// NF4's layout: one absmax scale per kNF4BlockSize weights along K, and
/// those scales quantized to i8 with one f32 scale per
/// kNF4ScaleBlockSize of them (double quantization).
constexpr int64_t kNF4BlockSize = 64;
constexpr int64_t kNF4ScaleBlockSize = 256;
/// Whether `value` is quantization metadata: a weight read only as the
/// scales or zero points of memwall.dequantize ops (or as the input or
/// scales of a dequantize so read, double quantization). Its bytes are
/// the quantized weight's; it is not a parameter of the model.
bool isQuantizationMetadata(mlir::Value value);
/// CUDA-core instructions the generated GEMM's rhs prologue spends on one
/// element `dequantize` makes (decode, the multiply by its scale, the
/// rounding and the store to shared memory; more to unpack i4, look a code
/// up and dequantize double-quantized scales), counted in the PTX
/// GemmCodegen emits (docs/cost-model.md).
double getDequantizePrologueInstructions(DequantizeOp dequantize);
/// CUDA-core instructions a dequantize kernel (a `materialize`d
/// dequantize) spends on one element it writes, counted in the PTX
/// DequantizeCodegen emits (docs/cost-model.md).
double getDequantizeKernelInstructions(DequantizeOp dequantize);
/// What the dequantize at use of `matmul`'s rhs adds to its GEMM's work:
/// each weight element is dequantized once per CTA row of tiles (`tileRows`
/// rows of the product, ceil(batch · M / tileRows) times), in CUDA-core
/// instructions; 0 without one.
double getDequantizePrologueWork(MatmulOp matmul, int64_t tileRows);
/// Rows of the product a generated GEMM's CTA usually covers (the tile
/// rows of chooseGemmTiling's large tiles): what op-level costs assume
/// before a tiling is chosen.
constexpr int64_t kTypicalGemmTileRows = 128;
/// Bytes a GEMM reads for `operand`: when a dequantize at use made it, the
/// quantized bytes plus the scales (themselves quantized, with their
/// scales), else the operand's own bytes.
int64_t getGemmOperandBytes(mlir::Value operand);
/// The AdamW updates `op` runs: itself, or the body of a horizontal fusion
/// (one multi-tensor launch); none for any other op.
llvm::SmallVector<AdamWOp> getOptimizerUpdates(mlir::Operation *op);
/// What `value` names outside fusions: a fusion body's argument is the
/// fusion's operand.
mlir::Value getValueOutsideFusions(mlir::Value value);
} // namespace memwall

#endif // MEMWALL_DIALECT_MEMWALL_IR_MEMWALL_H

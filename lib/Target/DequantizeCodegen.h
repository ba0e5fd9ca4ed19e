//===- DequantizeCodegen.h - memwall.dequantize in generated code -*- C++
//-*-===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The arithmetic of memwall.dequantize for one element, emitted alike in a
// generated GEMM's rhs prologue and in a dequantize kernel, and that kernel:
// a `materialize`d dequantize writing the dequantized tensor, 16 bytes a
// thread (docs/codegen.md, "Dequantize kernels").
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_LIB_TARGET_DEQUANTIZECODEGEN_H
#define MEMWALL_LIB_TARGET_DEQUANTIZECODEGEN_H

#include "ElementwiseEmitter.h"
#include "KernelBuilding.h"

#include "memwall/Analysis/FusionCost.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace memwall {

/// One element of `dequantize`: its stored code decoded (or looked up in
/// its codebook), minus its block's zero point, times its block's scale,
/// in f32 (the caller rounds it once to the result type). Reads the scales,
/// zero points and a double-quantized scale's codes and scales through
/// `buffers`' memrefs, flat and row-major.
class DequantizeEmitter : IndexArithmetic {
public:
  DequantizeEmitter(mlir::ImplicitLocOpBuilder &b, ElementwiseEmitter &buffers,
                    DequantizeOp dequantize)
      : IndexArithmetic(b), b(b), buffers(buffers), dequantize(dequantize) {}

  /// The i4 in the low (`odd` = 0) or high (`odd` = 1, an index) nibble of
  /// the i8 `byte`, sign-extended to i8 (the even element of a packed pair
  /// is in the low nibble).
  static mlir::Value unpackI4(mlir::ImplicitLocOpBuilder &b, mlir::Value byte,
                              mlir::Value odd);

  /// `stored` (an i8, a sign-extended i4 or an 8-bit float) in f32: its
  /// codebook value, else its value.
  mlir::Value decode(mlir::Value stored);
  /// Element `scaleIndex` (flat) of the scales in f32: loaded, or
  /// dequantized from their i8 codes and scales (double quantization) and
  /// rounded to the scales' type, as their own dequantize is defined.
  mlir::Value loadScale(mlir::Value scaleIndex);
  /// decode(stored), minus zero point `scaleIndex` if any, times scale
  /// `scaleIndex`.
  mlir::Value dequantizeElement(mlir::Value stored, mlir::Value scaleIndex);

private:
  mlir::Value lookUpCodebook(llvm::ArrayRef<float> codebook,
                             mlir::Value stored);

  mlir::ImplicitLocOpBuilder &b;
  ElementwiseEmitter &buffers;
  DequantizeOp dequantize;
};

/// Emits the dequantize kernel `analysis` describes (FusionKind::Dequantize)
/// into `gpuModule`: parameters are the analysis's inputs, then the output.
mlir::FailureOr<mlir::gpu::GPUFuncOp>
emitDequantizeKernel(mlir::gpu::GPUModuleOp gpuModule, llvm::StringRef name,
                     const KernelAnalysis &analysis);

} // namespace memwall

#endif // MEMWALL_LIB_TARGET_DEQUANTIZECODEGEN_H

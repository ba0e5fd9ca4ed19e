//===- FusionCostTest.cpp - kernel legality, geometry and cost by hand ----===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// analyzeKernel against numbers worked out by hand from docs/fusion.md: the
// soft roofline, vector widths, launch geometry, the register estimate that
// rejects spilling kernels, occupancy, and the legality rules.
//
//===----------------------------------------------------------------------===//

#include "memwall/Analysis/FusionCost.h"
#include "memwall/Dialect/MemWall/IR/MemWallTarget.h"
#include "memwall/Registration.h"

#include "TestTargets.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/FormatVariadic.h"

#include "gtest/gtest.h"

#include <cmath>

using namespace mlir;
using namespace memwall;

namespace {
using memwall::testing::roundTarget;

class FusionCostTest : public ::testing::Test {
protected:
  FusionCostTest() {
    DialectRegistry registry;
    registerMemWallDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }

  /// The ops of `func.func @f(<args>) { <body> }`, in order.
  SmallVector<Operation *> parseOps(StringRef args, StringRef body) {
    std::string source =
        ("func.func @f(" + args + ") {\n" + body + "\n  return\n}").str();
    module = parseSourceString<ModuleOp>(source, &context);
    EXPECT_TRUE(module) << source;
    SmallVector<Operation *> ops;
    if (module)
      for (Operation &op :
           (*module->getOps<func::FuncOp>().begin()).getBody().front())
        if (!isa<func::ReturnOp>(op))
          ops.push_back(&op);
    return ops;
  }

  /// Sets the parsed module's memwall.gemm policy.
  void setGemmBackend(StringRef policy) {
    (*module)->setAttr(kGemmBackendAttrName, StringAttr::get(&context, policy));
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
  GPUTarget target = roundTarget();
};
} // namespace

TEST_F(FusionCostTest, ElementwiseChainWithBiasBroadcast) {
  SmallVector<Operation *> ops = parseOps(
      "%x: tensor<64x1024xbf16>, %b: tensor<1024xbf16>",
      "%0 = memwall.add %x, %b : tensor<64x1024xbf16>, tensor<1024xbf16> -> "
      "tensor<64x1024xbf16>\n"
      "%1 = memwall.relu %0 : tensor<64x1024xbf16>");
  FailureOr<KernelAnalysis> kernel = analyzeKernel(ops, target);
  ASSERT_TRUE(succeeded(kernel));
  EXPECT_EQ(kernel->kind, FusionKind::Elementwise);
  ASSERT_EQ(kernel->inputs.size(), 2u);
  EXPECT_EQ(kernel->inputs[0].pattern, AccessPattern::Full);
  EXPECT_EQ(kernel->inputs[1].pattern, AccessPattern::Suffix);
  EXPECT_EQ(kernel->inputs[1].innerElements, 1024);
  ASSERT_EQ(kernel->outputs.size(), 1u);
  // bf16: 8 elements per 128-bit access; 65536 / 8 = 8192 vectors, far
  // fewer than 4 waves of 256 x 100 x 8, so one vector per thread and
  // 8192 / 256 = 32 blocks.
  EXPECT_EQ(kernel->geometry.vectorWidth, 8);
  EXPECT_EQ(kernel->geometry.threadsPerBlock, 256);
  EXPECT_EQ(kernel->geometry.vectorsPerThread, 1);
  EXPECT_EQ(kernel->geometry.gridSize, 32);
  // Loaded: one 128-bit vector of x and one of b, 4 registers each; live
  // values: the add's 2 operands + result, + 1 = 4; 24 + 8 + 8 * 4.
  EXPECT_EQ(kernel->geometry.registersPerThread, 64);
  // 65536 / (64 * 256) = 4 blocks of 256 threads of 2048: occupancy 0.5.
  EXPECT_DOUBLE_EQ(kernel->geometry.occupancy, 0.5);
  // Reads x (131072 B) and b (2048 B) once, writes 131072 B; the add's
  // result never reaches memory.
  EXPECT_EQ(kernel->bytesRead, 131072 + 2048);
  EXPECT_EQ(kernel->bytesWritten, 131072);
  EXPECT_EQ(kernel->flops, 2 * 65536);
  double compute = 2 * 65536 / 10e12;
  double memory = (131072 + 2048 + 131072) / 1e12;
  EXPECT_NEAR(kernel->timeSeconds,
              std::pow(std::pow(compute, 4) + std::pow(memory, 4), 0.25) + 2e-6,
              1e-15);
}

TEST_F(FusionCostTest, ElementwiseVectorsPerThreadNeverCostOccupancy) {
  // 2048 x 11008 bf16 (Llama-2-7B's prefill MLP): 2818048 vectors of 8, 13
  // waves of 256 x 100 SMs x 8, so up to 4 vectors per thread.
  auto geometry = [&](StringRef body) {
    SmallVector<Operation *> ops = parseOps(
        "%g: tensor<2048x11008xbf16>, %u: tensor<2048x11008xbf16>", body);
    FailureOr<KernelAnalysis> kernel = analyzeKernel(ops, target);
    EXPECT_TRUE(succeeded(kernel));
    return succeeded(kernel) ? kernel->geometry : KernelGeometry();
  };
  // One input: 24 + 4 vectors x 4 registers + 8 x 3 live values = 64
  // registers, 4 blocks of 256: occupancy 0.5, so all 4 vectors.
  KernelGeometry gelu =
      geometry("%0 = memwall.gelu %g : tensor<2048x11008xbf16>");
  EXPECT_EQ(gelu.vectorsPerThread, 4);
  EXPECT_EQ(gelu.registersPerThread, 64);
  EXPECT_DOUBLE_EQ(gelu.occupancy, 0.5);
  EXPECT_EQ(gelu.gridSize, 2818048 / (256 * 4));
  // SwiGLU's two inputs: 4 vectors would take 24 + 4 x 8 + 8 x 4 = 88
  // registers (occupancy 0.25), 2 vectors 72 (0.375); one vector, 64
  // registers, keeps 0.5.
  KernelGeometry swiglu =
      geometry("%0 = memwall.swiglu %g, %u : tensor<2048x11008xbf16>");
  EXPECT_EQ(swiglu.vectorsPerThread, 1);
  EXPECT_EQ(swiglu.registersPerThread, 64);
  EXPECT_DOUBLE_EQ(swiglu.occupancy, 0.5);
  EXPECT_EQ(swiglu.gridSize, 2818048 / 256);
}

TEST_F(FusionCostTest, LayerNormRowKernelGeometry) {
  SmallVector<Operation *> ops = parseOps(
      "%x: tensor<512x1024xf32>, %g: tensor<1024xf32>, %b: tensor<1024xf32>",
      "%0 = memwall.layer_norm %x, %g, %b : tensor<512x1024xf32>, "
      "tensor<1024xf32>, tensor<1024xf32>");
  FailureOr<KernelAnalysis> kernel = analyzeKernel(ops, target);
  ASSERT_TRUE(succeeded(kernel));
  EXPECT_EQ(kernel->kind, FusionKind::Reduction);
  // f32: 4 per access; a row of 1024 is 256 vectors: 256 threads, 1 each,
  // one block per row, 32 floats of shared memory for the warp partials.
  EXPECT_EQ(kernel->geometry.vectorWidth, 4);
  EXPECT_EQ(kernel->geometry.threadsPerBlock, 256);
  EXPECT_EQ(kernel->geometry.vectorsPerThread, 1);
  EXPECT_EQ(kernel->geometry.gridSize, 512);
  EXPECT_EQ(kernel->geometry.sharedBytes, 128);
  // The row's input and the result: 24 + 1 * 4 * 2.
  EXPECT_EQ(kernel->geometry.registersPerThread, 32);
}

TEST_F(FusionCostTest, FusionThatWouldSpillIsRejected) {
  // Rows of 49152 f32 = 12288 vectors over 512 threads: 24 vectors (96
  // floats) per thread. Softmax alone: 24 + 96 * 2 = 216 registers.
  SmallVector<Operation *> ops = parseOps(
      "%x: tensor<16x49152xf32>, %y: tensor<16x49152xf32>",
      "%0 = memwall.add %x, %y : tensor<16x49152xf32>, tensor<16x49152xf32> "
      "-> tensor<16x49152xf32>\n"
      "%1 = memwall.softmax %0 : tensor<16x49152xf32>\n"
      "%2 = memwall.mul %1, %0 : tensor<16x49152xf32>, tensor<16x49152xf32> "
      "-> tensor<16x49152xf32>");
  FailureOr<KernelAnalysis> softmax = analyzeKernel({ops[1]}, target);
  ASSERT_TRUE(succeeded(softmax));
  EXPECT_EQ(softmax->geometry.vectorsPerThread, 24);
  EXPECT_EQ(softmax->geometry.registersPerThread, 216);
  // Keeping the sum alive across the reduction for the multiply adds 96:
  // 312 > 255.
  std::string whyNot;
  EXPECT_TRUE(failed(analyzeKernel(ops, target, &whyNot)));
  EXPECT_EQ(whyNot, "needs about 312 registers per thread and would spill");
}

TEST_F(FusionCostTest, ErfGeluIsNotACuBLASLtEpilogue) {
  SmallVector<Operation *> ops = parseOps(
      "%x: tensor<8x16xbf16>, %w: tensor<16x32xbf16>",
      "%0 = memwall.matmul %x, %w : tensor<8x16xbf16>, tensor<16x32xbf16> -> "
      "tensor<8x32xbf16>\n"
      "%1 = memwall.gelu %0 : tensor<8x32xbf16>");
  setGemmBackend("cublaslt");
  std::string whyNot;
  EXPECT_TRUE(failed(analyzeKernel(ops, target, &whyNot)));
  EXPECT_NE(whyNot.find("tanh approximation"), std::string::npos);
}

// The same group under `auto`: only the generated GEMM can run it, so it
// does, with the epilogue reading nothing but the accumulator.
TEST_F(FusionCostTest, ErfGeluRunsInTheGeneratedGemmsEpilogue) {
  SmallVector<Operation *> ops = parseOps(
      "%x: tensor<8x16xbf16>, %w: tensor<16x32xbf16>",
      "%0 = memwall.matmul %x, %w : tensor<8x16xbf16>, tensor<16x32xbf16> -> "
      "tensor<8x32xbf16>\n"
      "%1 = memwall.gelu %0 : tensor<8x32xbf16>");
  FailureOr<KernelAnalysis> kernel = analyzeKernel(ops, target);
  ASSERT_TRUE(succeeded(kernel));
  EXPECT_EQ(kernel->kind, FusionKind::Gemm);
  EXPECT_EQ(kernel->gemm.m, 8);
  EXPECT_EQ(kernel->gemm.n, 32);
  EXPECT_EQ(kernel->gemm.k, 16);
  ASSERT_EQ(kernel->outputs.size(), 1u);
  EXPECT_EQ(kernel->outputs[0], ops[1]->getResult(0));
  EXPECT_EQ(kernel->geometry.threadsPerBlock, kernel->tiling.threads);
  EXPECT_EQ(kernel->gemmChoice.rfind("memwall gemm: cuBLASLt cannot run it: "
                                     "cuBLASLt's GELU epilogue",
                                     0),
            0u)
      << kernel->gemmChoice;
}

// 4096^3 bf16 + relu on the round target (bf16 peak 100 TFLOP/s, 1 TB/s,
// cuBLAS at 1.0 of the peak, the generated GEMM at 0.5): both can run it;
// auto takes cuBLASLt, --gemm=memwall the generated GEMM, timed at half the
// rate: compute (2 * 4096^3 + 4096^2 for the relu) / 50e12 = 2.749 ms,
// memory (two 32 MiB operands read, one written) 100.66 us, soft roofline
// (c^4 + m^4)^(1/4) + 2 us.
TEST_F(FusionCostTest, TheGemmPolicyPicksTheFasterKernelOrTheForcedOne) {
  SmallVector<Operation *> ops =
      parseOps("%x: tensor<4096x4096xbf16>, %w: tensor<4096x4096xbf16>",
               "%0 = memwall.matmul %x, %w : tensor<4096x4096xbf16>, "
               "tensor<4096x4096xbf16> -> tensor<4096x4096xbf16>\n"
               "%1 = memwall.relu %0 : tensor<4096x4096xbf16>");
  FailureOr<KernelAnalysis> automatic = analyzeKernel(ops, target);
  ASSERT_TRUE(succeeded(automatic));
  EXPECT_EQ(automatic->kind, FusionKind::MatmulEpilogue);
  EXPECT_EQ(automatic->gemmChoice.rfind("cuBLASLt (", 0), 0u)
      << automatic->gemmChoice;
  setGemmBackend("memwall");
  FailureOr<KernelAnalysis> forced = analyzeKernel(ops, target);
  ASSERT_TRUE(succeeded(forced));
  EXPECT_EQ(forced->kind, FusionKind::Gemm);
  EXPECT_EQ(forced->gemmChoice, "memwall gemm (--gemm=memwall)");
  double compute = (2.0 * 4096 * 4096 * 4096 + 4096.0 * 4096) / 50e12;
  double memory = 3.0 * 4096 * 4096 * 2 / 1e12;
  double expected =
      std::pow(std::pow(compute, 4) + std::pow(memory, 4), 0.25) + 2e-6;
  EXPECT_NEAR(forced->timeSeconds, expected, 1e-9);
  EXPECT_GT(forced->timeSeconds, automatic->timeSeconds);
}

TEST_F(FusionCostTest, MatmulBiasResidualGeluTanhEpilogue) {
  SmallVector<Operation *> ops = parseOps(
      "%x: tensor<8x16xbf16>, %w: tensor<16x32xbf16>, %b: tensor<32xbf16>, "
      "%r: tensor<8x32xbf16>",
      "%0 = memwall.matmul %x, %w bias %b : tensor<8x16xbf16>, "
      "tensor<16x32xbf16>, tensor<32xbf16> -> tensor<8x32xbf16>\n"
      "%1 = memwall.add %r, %0 : tensor<8x32xbf16>, tensor<8x32xbf16> -> "
      "tensor<8x32xbf16>\n"
      "%2 = memwall.gelu %1 tanh : tensor<8x32xbf16>");
  FailureOr<KernelAnalysis> kernel = analyzeKernel(ops, target);
  ASSERT_TRUE(succeeded(kernel));
  EXPECT_EQ(kernel->kind, FusionKind::MatmulEpilogue);
  EXPECT_TRUE(kernel->epilogue.bias);
  EXPECT_TRUE(kernel->epilogue.residual);
  EXPECT_EQ(kernel->epilogue.activation, GemmEpilogue::Activation::GeluTanh);
  EXPECT_EQ(kernel->precision, MathPrecision::BF16);
}

TEST_F(FusionCostTest, BroadcastCodegenCannotIndexIsRejected) {
  // [4, 1, 8] over [4, 6, 8] is neither a suffix nor leading dims + 1s.
  SmallVector<Operation *> ops = parseOps(
      "%x: tensor<4x6x8xf32>, %y: tensor<4x1x8xf32>",
      "%0 = memwall.add %x, %y : tensor<4x6x8xf32>, tensor<4x1x8xf32> -> "
      "tensor<4x6x8xf32>");
  std::string whyNot;
  EXPECT_TRUE(failed(analyzeKernel(ops, target, &whyNot)));
  EXPECT_NE(whyNot.find("does not broadcast"), std::string::npos);
}

TEST_F(FusionCostTest, PerRowInputIsAnOuterBroadcast) {
  SmallVector<Operation *> ops = parseOps(
      "%x: tensor<4x6x8xf32>, %s: tensor<4x6x1xf32>",
      "%0 = memwall.mul %x, %s : tensor<4x6x8xf32>, tensor<4x6x1xf32> -> "
      "tensor<4x6x8xf32>");
  FailureOr<KernelAnalysis> kernel = analyzeKernel(ops, target);
  ASSERT_TRUE(succeeded(kernel));
  EXPECT_EQ(kernel->inputs[1].pattern, AccessPattern::Outer);
  EXPECT_EQ(kernel->inputs[1].innerElements, 8);
  // 8 f32 per row: a 4-wide vector never straddles two rows.
  EXPECT_EQ(kernel->geometry.vectorWidth, 4);
}

TEST_F(FusionCostTest, TwoRowReductionsCannotShareAKernel) {
  SmallVector<Operation *> ops = parseOps(
      "%x: tensor<4x8xf32>", "%0 = memwall.softmax %x : tensor<4x8xf32>\n"
                             "%1 = memwall.softmax %0 : tensor<4x8xf32>");
  std::string whyNot;
  EXPECT_TRUE(failed(analyzeKernel(ops, target, &whyNot)));
  EXPECT_EQ(whyNot, "a kernel holds at most one row reduction or matmul (or "
                    "a matmul and a layer_norm or rms_norm of its result's "
                    "rows)");
}

// A matmul and an rms_norm over its rows (N = 512, wider than every tile):
// only the generated GEMM runs it, row-chunked (grid.x = 1, a row buffer of
// bf16), writing the norm alone. The 100 CTAs' A tiles fit the 50 MiB L2,
// so A's re-reads per chunk are no DRAM traffic; in a 256 KiB L2 they are.
TEST_F(FusionCostTest, MatmulAndRmsNormRunRowChunkedInTheGeneratedGemm) {
  SmallVector<Operation *> ops = parseOps(
      "%x: tensor<4096x64xbf16>, %w: tensor<512x64xbf16>, %g: "
      "tensor<512xbf16>",
      "%0 = memwall.matmul %x, %w {transpose_rhs} : tensor<4096x64xbf16>, "
      "tensor<512x64xbf16> -> tensor<4096x512xbf16>\n"
      "%1 = memwall.rms_norm %0, %g eps 1.000000e-06 : tensor<4096x512xbf16>, "
      "tensor<512xbf16>");
  FailureOr<KernelAnalysis> kernel = analyzeKernel(ops, target);
  ASSERT_TRUE(succeeded(kernel));
  EXPECT_EQ(kernel->kind, FusionKind::Gemm);
  EXPECT_EQ(kernel->gemmChoice, "memwall gemm: cuBLASLt cannot run it: "
                                "cuBLASLt has no layer_norm or rms_norm "
                                "epilogue");
  const GemmTiling &tiling = kernel->tiling;
  EXPECT_EQ(tiling.rowChunks, llvm::divideCeil(512, tiling.blockN));
  EXPECT_GT(tiling.rowChunks, 1);
  EXPECT_EQ(tiling.grid[0], 1);
  EXPECT_EQ(tiling.rowBufferBytes, tiling.blockM * (512 + 8) * 2);
  ASSERT_EQ(kernel->outputs.size(), 1u);
  EXPECT_EQ(kernel->outputs[0], ops[1]->getResult(0));
  int64_t lhsBytes = 4096 * 64 * 2;
  EXPECT_EQ(kernel->bytesRead, lhsBytes + 512 * 64 * 2 + 512 * 2);
  EXPECT_EQ(kernel->bytesWritten, 4096 * 512 * 2);

  // 64 CTAs' A tiles (64 x 64 bf16 each) and B are 576 KiB.
  target.l2Bytes = 256 << 10;
  FailureOr<KernelAnalysis> smallL2 = analyzeKernel(ops, target);
  ASSERT_TRUE(succeeded(smallL2));
  EXPECT_EQ(smallL2->bytesRead,
            kernel->bytesRead + (smallL2->tiling.rowChunks - 1) * lhsBytes);
}

// Held to 64-row tiles by its row buffer, the row-chunked GEMM runs at the
// chooser's ratio of its work to the free tile's: never faster than the
// generated GEMM with the norm apart.
TEST_F(FusionCostTest, RowChunkedGemmRunsAtItsTilesEfficiency) {
  SmallVector<Operation *> ops = parseOps(
      "%x: tensor<65536x1024xbf16>, %w: tensor<1024x1024xbf16>, %g: "
      "tensor<1024xbf16>",
      "%0 = memwall.matmul %x, %w {transpose_rhs} : tensor<65536x1024xbf16>, "
      "tensor<1024x1024xbf16> -> tensor<65536x1024xbf16>\n"
      "%1 = memwall.rms_norm %0, %g eps 1.000000e-06 : "
      "tensor<65536x1024xbf16>, tensor<1024xbf16>");
  FailureOr<KernelAnalysis> fused = analyzeKernel(ops, target);
  setGemmBackend("memwall");
  FailureOr<KernelAnalysis> alone = analyzeKernel({ops[0]}, target);
  ASSERT_TRUE(succeeded(fused) && succeeded(alone));
  EXPECT_EQ(fused->tiling.blockM, 64);
  EXPECT_LT(fused->work.computeFraction, 1);
  EXPECT_EQ(alone->work.computeFraction, 1);
  EXPECT_NEAR(fused->estimate.computeSeconds * fused->work.computeFraction,
              alone->estimate.computeSeconds, 1e-2 * alone->timeSeconds);
}

// N = 4096 bf16: 64 rows of the row buffer alone exceed a CTA's shared
// memory; neither kernel can run the norm in the epilogue, and why says so.
TEST_F(FusionCostTest, NormTooWideForTheRowBufferIsNotFused) {
  SmallVector<Operation *> ops = parseOps(
      "%x: tensor<256x64xbf16>, %w: tensor<4096x64xbf16>, %g: "
      "tensor<4096xbf16>",
      "%0 = memwall.matmul %x, %w {transpose_rhs} : tensor<256x64xbf16>, "
      "tensor<4096x64xbf16> -> tensor<256x4096xbf16>\n"
      "%1 = memwall.layer_norm %0, %g eps 1.000000e-05 : "
      "tensor<256x4096xbf16>, tensor<4096xbf16>");
  std::string whyNot;
  EXPECT_TRUE(failed(analyzeKernel(ops, target, &whyNot)));
  EXPECT_NE(whyNot.find("cuBLASLt has no layer_norm or rms_norm epilogue"),
            std::string::npos)
      << whyNot;
  EXPECT_NE(whyNot.find("525312 of them the row buffer of 64 rows of N = "
                        "4096"),
            std::string::npos)
      << whyNot;
}

// Llama's gate and up projections read the same x: one dual GEMM kernel
// computes both (x loaded once per tile) with SwiGLU as its epilogue.
// cuBLASLt runs sibling matmuls only without an epilogue, so the generated
// GEMM runs it, at the skinny class's 0.5 (M = 16). Decode-shaped, its one row
// of tiles leaves SMs idle, so K is split: the split kernel reads x once (128
// KiB) + both weights (2 x 86 MiB) and writes f32 partials of both products per
// split, the last CTA of each tile reads them and writes the SwiGLU, in one
// kernel. Against cuBLASLt at its full rate on skinny GEMMs (this
// target's), the two GEMMs and the SwiGLU kernel apart are faster, by less
// than one launch.
TEST_F(FusionCostTest, DualGemmReadsTheSharedLhsOnceAndSplitsKInOneKernel) {
  SmallVector<Operation *> ops = parseOps(
      "%x: tensor<16x4096xbf16>, %wg: tensor<11008x4096xbf16>, "
      "%wu: tensor<11008x4096xbf16>",
      "%0 = memwall.matmul %x, %wg {transpose_rhs} : tensor<16x4096xbf16>, "
      "tensor<11008x4096xbf16> -> tensor<16x11008xbf16>\n"
      "%1 = memwall.matmul %x, %wu {transpose_rhs} : tensor<16x4096xbf16>, "
      "tensor<11008x4096xbf16> -> tensor<16x11008xbf16>\n"
      "%2 = memwall.swiglu %0, %1 : tensor<16x11008xbf16>");
  FailureOr<KernelAnalysis> dual = analyzeKernel(ops, target);
  ASSERT_TRUE(succeeded(dual));
  EXPECT_EQ(dual->kind, FusionKind::Gemm);
  EXPECT_EQ(dual->anchor, ops[0]);
  EXPECT_EQ(dual->siblingMatmul, ops[1]);
  EXPECT_EQ(dual->gemm.rhsOperands, 2);
  EXPECT_EQ(dual->gemmChoice,
            "memwall gemm: cuBLASLt cannot run it: cuBLASLt runs sibling "
            "matmuls as one batched call only with no epilogue (it writes "
            "each product whole); K split " +
                std::to_string(dual->tiling.splitK) +
                " ways, the last CTA of a tile reduces");
  ASSERT_EQ(dual->inputs.size(), 3u);
  ASSERT_EQ(dual->outputs.size(), 1u);
  EXPECT_EQ(dual->outputs[0], ops[2]->getResult(0));
  double weight = 11008.0 * 4096 * 2;
  EXPECT_EQ(dual->bytesRead, 16 * 4096 * 2 + 2 * weight);
  EXPECT_EQ(dual->bytesWritten, 16 * 11008 * 2);
  int64_t swigluFlops = cast<CostOpInterface>(ops[2]).getFlops();
  EXPECT_EQ(dual->flops, 2 * (2 * 16 * 4096 * 11008LL) + swigluFlops);
  // Split K: fewer tiles than the target's 100 SMs, as many splits as give
  // every SM a CTA.
  const GemmTiling &tiling = dual->tiling;
  int64_t tiles = tiling.grid[0] * tiling.grid[1];
  ASSERT_LT(tiles, 100);
  EXPECT_EQ(tiling.splitK, (100 + tiles - 1) / tiles);
  double partials = tiling.splitK * 2.0 * 16 * 11008 * 4;
  double ctas = static_cast<double>(tiles * tiling.splitK);
  // One kernel: the operands and the partials written, the last CTAs'
  // partials read and SwiGLU written, at the CTAs' share of the bandwidth
  // (all of it here), one launch.
  ASSERT_GE(ctas, 100);
  double compute = dual->flops / 50e12;
  double memory = (dual->bytesRead + 2 * partials + dual->bytesWritten) / 1e12;
  EXPECT_NEAR(dual->timeSeconds,
              std::pow(std::pow(compute, 4) + std::pow(memory, 4), 0.25) + 2e-6,
              1e-9);
  EXPECT_EQ(dual->work.extraLaunches, 0);
  double apart = 0;
  for (Operation *op : ops)
    apart += analyzeKernel({op}, target)->timeSeconds;
  EXPECT_GT(dual->timeSeconds, apart);
  EXPECT_LT(dual->timeSeconds - apart, 2e-6);
}

// Compute-bound (4096^3 each), the dual GEMM runs both products at the
// generated GEMM's 0.5 where cuBLASLt runs each at 1.0: apart is faster,
// so memwall-fuse leaves them apart (the saved traffic hides under compute).
TEST_F(FusionCostTest, ComputeBoundDualGemmLosesToFasterCuBLASLt) {
  SmallVector<Operation *> ops = parseOps(
      "%x: tensor<4096x4096xbf16>, %wg: tensor<4096x4096xbf16>, "
      "%wu: tensor<4096x4096xbf16>",
      "%0 = memwall.matmul %x, %wg : tensor<4096x4096xbf16>, "
      "tensor<4096x4096xbf16> -> tensor<4096x4096xbf16>\n"
      "%1 = memwall.matmul %x, %wu : tensor<4096x4096xbf16>, "
      "tensor<4096x4096xbf16> -> tensor<4096x4096xbf16>\n"
      "%2 = memwall.swiglu %0, %1 : tensor<4096x4096xbf16>");
  FailureOr<KernelAnalysis> dual = analyzeKernel(ops, target);
  ASSERT_TRUE(succeeded(dual));
  EXPECT_EQ(dual->kind, FusionKind::Gemm);
  // Two accumulator sets leave out the 128x256 and 128x128 tiles.
  EXPECT_LT(dual->tiling.blockM * dual->tiling.blockN, 128 * 128);
  double apart = 0;
  for (Operation *op : ops)
    apart += analyzeKernel({op}, target)->timeSeconds;
  EXPECT_GT(dual->timeSeconds, apart);
}

// Sibling matmuls of one lhs whose weights are function arguments run as
// one strided-batched cuBLASLt call (vLLM's merged QKV weight): x read once,
// each weight and product once, one launch instead of three.
TEST_F(FusionCostTest,
       SiblingMatmulsOnWeightArgumentsAreOneBatchedCuBLASLtCall) {
  SmallVector<Operation *> ops =
      parseOps("%x: tensor<64x64xbf16>, %a: tensor<64x64xbf16>, "
               "%b: tensor<64x64xbf16>, %c: tensor<64x64xbf16>",
               "%0 = memwall.matmul %x, %a : tensor<64x64xbf16>, "
               "tensor<64x64xbf16> -> tensor<64x64xbf16>\n"
               "%1 = memwall.matmul %x, %b : tensor<64x64xbf16>, "
               "tensor<64x64xbf16> -> tensor<64x64xbf16>\n"
               "%2 = memwall.matmul %x, %c : tensor<64x64xbf16>, "
               "tensor<64x64xbf16> -> tensor<64x64xbf16>");
  setGemmBackend("cublaslt");
  FailureOr<KernelAnalysis> batched = analyzeKernel(ops, target);
  ASSERT_TRUE(succeeded(batched));
  EXPECT_EQ(batched->kind, FusionKind::MatmulEpilogue);
  EXPECT_EQ(batched->batchedMatmuls, SmallVector<Operation *>(ops));
  EXPECT_EQ(batched->flops, 3 * 2 * 64 * 64 * 64);
  EXPECT_EQ(batched->bytesRead, 4 * 64 * 64 * 2);
  EXPECT_EQ(batched->bytesWritten, 3 * 64 * 64 * 2);
  double apart = 0;
  for (Operation *op : ops)
    apart += analyzeKernel({op}, target)->timeSeconds;
  EXPECT_LT(batched->timeSeconds, apart);
}

// Each weight lies in one stack of the arena and cuBLASLt writes each
// product whole: an epilogue, a computed rhs and a weight another matmul
// reads as its rhs keep the matmuls apart.
TEST_F(FusionCostTest, BatchedCuBLASLtCallNeedsBareProductsOfUnsharedWeights) {
  SmallVector<Operation *> ops =
      parseOps("%x: tensor<64x64xbf16>, %y: tensor<64x64xbf16>, "
               "%a: tensor<64x64xbf16>, %b: tensor<64x64xbf16>",
               "%0 = memwall.matmul %x, %a : tensor<64x64xbf16>, "
               "tensor<64x64xbf16> -> tensor<64x64xbf16>\n"
               "%1 = memwall.matmul %x, %b : tensor<64x64xbf16>, "
               "tensor<64x64xbf16> -> tensor<64x64xbf16>\n"
               "%2 = memwall.relu %1 : tensor<64x64xbf16>\n"
               "%3 = memwall.relu %b : tensor<64x64xbf16>\n"
               "%4 = memwall.matmul %x, %3 : tensor<64x64xbf16>, "
               "tensor<64x64xbf16> -> tensor<64x64xbf16>\n"
               "%5 = memwall.matmul %y, %a : tensor<64x64xbf16>, "
               "tensor<64x64xbf16> -> tensor<64x64xbf16>");
  setGemmBackend("cublaslt");
  std::string why;
  EXPECT_TRUE(failed(analyzeKernel({ops[0], ops[1], ops[2]}, target, &why)));
  EXPECT_EQ(why, "cuBLASLt runs sibling matmuls as one batched call only "
                 "with no epilogue (it writes each product whole)");
  EXPECT_TRUE(failed(analyzeKernel({ops[1], ops[4]}, target, &why)));
  EXPECT_EQ(why, "cuBLASLt runs sibling matmuls as one batched call only "
                 "when every rhs is a function argument (the arena places "
                 "them side by side)");
  EXPECT_TRUE(failed(analyzeKernel({ops[0], ops[1]}, target, &why)));
  EXPECT_EQ(why, "cuBLASLt runs sibling matmuls as one batched call only "
                 "when no other matmul reads an rhs (each lies in one stack "
                 "of the arena)");
  // Without %5 reading %a, the two are one call.
  ops[5]->erase();
  EXPECT_TRUE(succeeded(analyzeKernel({ops[0], ops[1]}, target, &why)));
}

// A dual GEMM's epilogue has no norm (no row buffer for two products).
TEST_F(FusionCostTest, DualGemmWithANormIsRefused) {
  SmallVector<Operation *> ops =
      parseOps("%x: tensor<64x64xbf16>, %a: tensor<64x64xbf16>, "
               "%b: tensor<64x64xbf16>, %g: tensor<64xbf16>",
               "%0 = memwall.matmul %x, %a : tensor<64x64xbf16>, "
               "tensor<64x64xbf16> -> tensor<64x64xbf16>\n"
               "%1 = memwall.matmul %x, %b : tensor<64x64xbf16>, "
               "tensor<64x64xbf16> -> tensor<64x64xbf16>\n"
               "%2 = memwall.swiglu %0, %1 : tensor<64x64xbf16>\n"
               "%3 = memwall.rms_norm %2, %g eps 1.000000e-06 : "
               "tensor<64x64xbf16>, tensor<64xbf16>");
  setGemmBackend("memwall");
  std::string why;
  EXPECT_TRUE(failed(analyzeKernel(ops, target, &why)));
  EXPECT_EQ(why, "a dual GEMM has no layer_norm or rms_norm epilogue");
}

TEST_F(FusionCostTest, F32DualGemmIsRefused) {
  SmallVector<Operation *> ops =
      parseOps("%x: tensor<64x64xf32>, %a: tensor<64x64xf32>, "
               "%b: tensor<64x64xf32>",
               "%0 = memwall.matmul %x, %a : tensor<64x64xf32>, "
               "tensor<64x64xf32> -> tensor<64x64xf32>\n"
               "%1 = memwall.matmul %x, %b : tensor<64x64xf32>, "
               "tensor<64x64xf32> -> tensor<64x64xf32>\n"
               "%2 = memwall.swiglu %0, %1 : tensor<64x64xf32>");
  setGemmBackend("memwall");
  std::string why;
  EXPECT_TRUE(failed(analyzeKernel(ops, target, &why)));
  EXPECT_EQ(why, "the generated GEMM: a dual GEMM needs bf16 or f16 operands "
                 "(the FFMA kernel holds one product)");
}

// Two matmuls share a kernel only as a dual GEMM.
TEST_F(FusionCostTest, MatmulsThatAreNoDualGemmCannotShareAKernel) {
  auto whyNot = [&](StringRef args, StringRef body) {
    SmallVector<Operation *> ops = parseOps(args, body);
    std::string why;
    EXPECT_TRUE(failed(analyzeKernel(ops, target, &why)));
    return why;
  };
  EXPECT_EQ(whyNot("%x: tensor<64x64xbf16>, %y: tensor<64x64xbf16>, "
                   "%a: tensor<64x64xbf16>",
                   "%0 = memwall.matmul %x, %a : tensor<64x64xbf16>, "
                   "tensor<64x64xbf16> -> tensor<64x64xbf16>\n"
                   "%1 = memwall.matmul %y, %a : tensor<64x64xbf16>, "
                   "tensor<64x64xbf16> -> tensor<64x64xbf16>"),
            "matmuls share a kernel only as a dual GEMM or a batched call, but "
            "their lhs "
            "differ");
  EXPECT_EQ(
      whyNot("%x: tensor<64x64xbf16>, %a: tensor<64x64xbf16>, "
             "%b: tensor<64x128xbf16>",
             "%0 = memwall.matmul %x, %a : tensor<64x64xbf16>, "
             "tensor<64x64xbf16> -> tensor<64x64xbf16>\n"
             "%1 = memwall.matmul %x, %b : tensor<64x64xbf16>, "
             "tensor<64x128xbf16> -> tensor<64x128xbf16>"),
      "matmuls share a kernel only as a dual GEMM or a batched call, but their "
      "results differ in shape or type");
  EXPECT_EQ(whyNot("%x: tensor<64x64xbf16>, %a: tensor<64x64xbf16>",
                   "%0 = memwall.matmul %x, %a : tensor<64x64xbf16>, "
                   "tensor<64x64xbf16> -> tensor<64x64xbf16>\n"
                   "%1 = memwall.matmul %x, %0 : tensor<64x64xbf16>, "
                   "tensor<64x64xbf16> -> tensor<64x64xbf16>"),
            "matmuls share a kernel only as a dual GEMM or a batched call, but "
            "one reads a "
            "value computed in the kernel");
}

// k = x·w [2, 8, 64] split into 2 heads of 32, [2, 2, 8, 32], appended
// after the 5 rows of a [2, 2, 5, 32] cache: the epilogue writes rows 5..12
// of each head of 13 into the cache's buffer. The kernel reads x (2 x 8 x
// 64 x 2 B = 2048) and w (64 x 64 x 2 B = 8192), not the cache, and writes
// the 2 x 2 x 8 x 32 new elements (2048 B), not the 13-row cache (3328 B).
TEST_F(FusionCostTest, AGemmWritesItsHeadsIntoAKVCacheInPlace) {
  StringRef args = "%x: tensor<2x8x64xbf16>, %w: tensor<64x64xbf16>, "
                   "%c: tensor<2x2x5x32xbf16>";
  std::string layout =
      "%0 = memwall.matmul %x, %w : tensor<2x8x64xbf16>, "
      "tensor<64x64xbf16> -> tensor<2x8x64xbf16>\n"
      "%1 = memwall.reshape %0 [2, 8, 2, 32] : tensor<2x8x64xbf16> -> "
      "tensor<2x8x2x32xbf16>\n"
      "%2 = memwall.transpose %1 [0, 2, 1, 3] : tensor<2x8x2x32xbf16> -> "
      "tensor<2x2x8x32xbf16>\n"
      "%3 = memwall.kv_cache_append %c, %2 : tensor<2x2x5x32xbf16>, "
      "tensor<2x2x8x32xbf16> -> tensor<2x2x13x32xbf16>";
  SmallVector<Operation *> ops = parseOps(args, layout);
  ASSERT_EQ(ops.size(), 4u);
  FailureOr<KernelAnalysis> kernel = analyzeKernel(ops, target);
  ASSERT_TRUE(succeeded(kernel));
  EXPECT_EQ(kernel->kind, FusionKind::Gemm);
  ASSERT_EQ(kernel->headsLayouts.size(), 1u);
  GemmHeadsLayout heads = kernel->headsLayouts.front();
  EXPECT_EQ(heads.append.getOperation(), ops[3]);
  EXPECT_EQ(heads.getOutput(), ops[3]->getResult(0));
  EXPECT_EQ(heads.seqLen, 8);
  EXPECT_EQ(heads.cacheLength, 5);
  EXPECT_EQ(heads.cacheRows, 13);
  ASSERT_EQ(kernel->inputs.size(), 2u);
  ASSERT_EQ(kernel->outputs.size(), 1u);
  EXPECT_EQ(kernel->outputs.front(), ops[3]->getResult(0));
  EXPECT_EQ(kernel->bytesRead, 2048 + 8192);
  EXPECT_EQ(kernel->bytesWritten, 2048);

  // A cache something else reads is copied by its own kernel.
  ops = parseOps(args, layout + "\n%4 = memwall.scale %c by 2.0 : "
                                "tensor<2x2x5x32xbf16>");
  ops.pop_back();
  std::string why;
  EXPECT_TRUE(failed(analyzeKernel(ops, target, &why)));
  EXPECT_NE(why.find("the KV cache is not a function argument only the "
                     "append reads, so it is copied by a kernel of its own"),
            std::string::npos)
      << why;
}

TEST_F(FusionCostTest, AttentionReadsAPackedProjectionAndWritesHeadsMerged) {
  // GPT-2's layout, B = 2, S = 16, 2 heads of 64: k is columns [128, 256)
  // of the [2, 16, 384] projection, element (b, h, s, d) at
  // b·16·384 + s·384 + 128 + h·64 + d; the output (b, h, s, d) lands at
  // b·16·128 + s·128 + h·64 + d of [2, 16, 128].
  SmallVector<Operation *> ops = parseOps(
      "%qkv: tensor<2x16x384xbf16>",
      "%q = memwall.slice %qkv offsets [0, 0, 0] sizes [2, 16, 128] : "
      "tensor<2x16x384xbf16> -> tensor<2x16x128xbf16>\n"
      "%qs = memwall.reshape %q [2, 16, 2, 64] : tensor<2x16x128xbf16> -> "
      "tensor<2x16x2x64xbf16>\n"
      "%qh = memwall.transpose %qs [0, 2, 1, 3] : tensor<2x16x2x64xbf16> -> "
      "tensor<2x2x16x64xbf16>\n"
      "%k = memwall.slice %qkv offsets [0, 0, 128] sizes [2, 16, 128] : "
      "tensor<2x16x384xbf16> -> tensor<2x16x128xbf16>\n"
      "%ks = memwall.reshape %k [2, 16, 2, 64] : tensor<2x16x128xbf16> -> "
      "tensor<2x16x2x64xbf16>\n"
      "%kh = memwall.transpose %ks [0, 2, 1, 3] : tensor<2x16x2x64xbf16> -> "
      "tensor<2x2x16x64xbf16>\n"
      "%v = memwall.slice %qkv offsets [0, 0, 256] sizes [2, 16, 128] : "
      "tensor<2x16x384xbf16> -> tensor<2x16x128xbf16>\n"
      "%vs = memwall.reshape %v [2, 16, 2, 64] : tensor<2x16x128xbf16> -> "
      "tensor<2x16x2x64xbf16>\n"
      "%vh = memwall.transpose %vs [0, 2, 1, 3] : tensor<2x16x2x64xbf16> -> "
      "tensor<2x2x16x64xbf16>\n"
      "%o, %lse = memwall.flash_attention %qh, %kh, %vh causal scale 0.125 "
      "block_q 64 block_kv 64 splits 1 : (tensor<2x2x16x64xbf16>, "
      "tensor<2x2x16x64xbf16>, tensor<2x2x16x64xbf16>) -> "
      "(tensor<2x2x16x64xbf16>, tensor<2x2x16xf32>)\n"
      "%t = memwall.transpose %o [0, 2, 1, 3] : tensor<2x2x16x64xbf16> -> "
      "tensor<2x16x2x64xbf16>\n"
      "%m = memwall.reshape %t [2, 16, 128] : tensor<2x16x2x64xbf16> -> "
      "tensor<2x16x128xbf16>");
  FailureOr<KernelAnalysis> kernel = analyzeKernel(ops, target);
  ASSERT_TRUE(succeeded(kernel));
  EXPECT_EQ(kernel->kind, FusionKind::Attention);
  ASSERT_TRUE(kernel->attention);
  const AttentionViews &views = *kernel->attention;
  Value qkv = ops.front()->getOperand(0);
  for (Value source : views.sources)
    EXPECT_EQ(source, qkv);
  const StridedLayout &k = views.operands[1];
  EXPECT_EQ(k.offset, 128);
  EXPECT_EQ(ArrayRef<int64_t>(k.strides),
            ArrayRef<int64_t>({6144, 64, 384, 1}));
  EXPECT_EQ(k.offsetOf({1, 1, 5, 7}), 6144 + 5 * 384 + 128 + 64 + 7);
  EXPECT_EQ(views.output, ops.back()->getResult(0));
  EXPECT_EQ(views.outputLayout.offsetOf({1, 1, 5, 7}), 2048 + 5 * 128 + 64 + 7);
  // The packed projection is read once; the output and the log-sum-exp
  // are written; the slices and transposes move nothing.
  EXPECT_EQ(kernel->bytesRead, 2 * 16 * 384 * 2);
  EXPECT_EQ(kernel->bytesWritten, 2 * 16 * 128 * 2 + 2 * 2 * 16 * 4);
  // Its time is the attention's.
  auto attention = cast<FlashAttentionOp>(kernel->anchor);
  EXPECT_DOUBLE_EQ(
      kernel->timeSeconds,
      estimateKernelTime(attention.getKernelWork(target), target).timeSeconds);

  // A slice starting 8 bytes into a row is no view the 16-byte tile copies
  // can address.
  SmallVector<Operation *> shifted = parseOps(
      "%x: tensor<2x16x132xbf16>, %k: tensor<2x2x16x64xbf16>",
      "%q = memwall.slice %x offsets [0, 0, 4] sizes [2, 16, 128] : "
      "tensor<2x16x132xbf16> -> tensor<2x16x128xbf16>\n"
      "%qs = memwall.reshape %q [2, 16, 2, 64] : tensor<2x16x128xbf16> -> "
      "tensor<2x16x2x64xbf16>\n"
      "%qh = memwall.transpose %qs [0, 2, 1, 3] : tensor<2x16x2x64xbf16> -> "
      "tensor<2x2x16x64xbf16>\n"
      "%o, %lse = memwall.flash_attention %qh, %k, %k scale 0.125 "
      "block_q 64 block_kv 64 splits 1 : (tensor<2x2x16x64xbf16>, "
      "tensor<2x2x16x64xbf16>, tensor<2x2x16x64xbf16>) -> "
      "(tensor<2x2x16x64xbf16>, tensor<2x2x16xf32>)");
  std::string why;
  EXPECT_TRUE(failed(analyzeKernel(shifted, target, &why)));
  EXPECT_NE(why.find("the view q reads: it starts 8 bytes into its buffer"),
            std::string::npos)
      << why;
}

TEST_F(FusionCostTest, AttentionsBackwardWritesItsGradientsIntoThePackedOne) {
  // The backward of the layout above, B = 2, S = 16, 2 heads of 64: q, k and
  // v read from the packed [2, 16, 384] projection, the output from its
  // heads-merged [2, 16, 128] copy, the output's gradient through its heads
  // split; dq, dk and dv written through heads merges into the concat's
  // packed [2, 16, 384] gradient: dv's element (b, h, s, d) lands at
  // b·16·384 + s·384 + 256 + h·64 + d.
  std::string body;
  auto heads = [&](StringRef name, StringRef input) {
    body += ("%" + name + "s = memwall.reshape " + input +
             " [2, 16, 2, 64] : tensor<2x16x128xbf16> -> "
             "tensor<2x16x2x64xbf16>\n%" +
             name + "h = memwall.transpose %" + name +
             "s [0, 2, 1, 3] : tensor<2x16x2x64xbf16> -> "
             "tensor<2x2x16x64xbf16>\n")
                .str();
  };
  for (auto [name, column] : {std::pair{"q", 0}, {"k", 128}, {"v", 256}}) {
    body += llvm::formatv("%{0} = memwall.slice %qkv offsets [0, 0, {1}] "
                          "sizes [2, 16, 128] : tensor<2x16x384xbf16> -> "
                          "tensor<2x16x128xbf16>\n",
                          name, column)
                .str();
    heads(name, ("%" + Twine(name)).str());
  }
  heads("o", "%merged");
  heads("g", "%merged_grad");
  body += "%dq, %dk, %dv = memwall.flash_attention_grad %qh, %kh, %vh, %oh, "
          "%gh, %lse causal scale 0.125 block_q 64 block_kv 64 : "
          "(tensor<2x2x16x64xbf16>, tensor<2x2x16x64xbf16>, "
          "tensor<2x2x16x64xbf16>, tensor<2x2x16x64xbf16>, "
          "tensor<2x2x16x64xbf16>, tensor<2x2x16xf32>) -> "
          "(tensor<2x2x16x64xbf16>, tensor<2x2x16x64xbf16>, "
          "tensor<2x2x16x64xbf16>)\n";
  for (StringRef name : {"dq", "dk", "dv"})
    body += ("%" + name + "t = memwall.transpose %" + name +
             " [0, 2, 1, 3] : tensor<2x2x16x64xbf16> -> "
             "tensor<2x16x2x64xbf16>\n%" +
             name + "m = memwall.reshape %" + name +
             "t [2, 16, 128] : tensor<2x16x2x64xbf16> -> "
             "tensor<2x16x128xbf16>\n")
                .str();
  body += "%packed = memwall.concat %dqm, %dkm, %dvm axis 2 : "
          "tensor<2x16x128xbf16>, tensor<2x16x128xbf16>, "
          "tensor<2x16x128xbf16> -> tensor<2x16x384xbf16>";
  SmallVector<Operation *> ops =
      parseOps("%qkv: tensor<2x16x384xbf16>, %merged: tensor<2x16x128xbf16>, "
               "%merged_grad: tensor<2x16x128xbf16>, %lse: tensor<2x2x16xf32>",
               body);
  FailureOr<KernelAnalysis> kernel = analyzeKernel(ops, target);
  ASSERT_TRUE(succeeded(kernel));
  EXPECT_EQ(kernel->kind, FusionKind::AttentionGrad);
  ASSERT_TRUE(kernel->attentionGrad);
  const AttentionGradViews &views = *kernel->attentionGrad;
  auto function = *module->getOps<func::FuncOp>().begin();
  Value qkv = function.getArgument(0);
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(views.sources[i], qkv);
  EXPECT_EQ(views.sources[3], function.getArgument(1));
  EXPECT_EQ(views.sources[4], function.getArgument(2));
  EXPECT_EQ(views.operands[1].offsetOf({1, 1, 5, 7}),
            6144 + 5 * 384 + 128 + 64 + 7);
  // out (b, h, s, d) at b·16·128 + s·128 + h·64 + d of the merged output.
  EXPECT_EQ(views.operands[3].offsetOf({1, 1, 5, 7}), 2048 + 5 * 128 + 64 + 7);
  Value packed = ops.back()->getResult(0);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(views.outputs[i], packed);
    EXPECT_EQ(views.outputLayouts[i].offset, 128 * i);
    EXPECT_EQ(ArrayRef<int64_t>(views.outputLayouts[i].strides),
              ArrayRef<int64_t>({6144, 64, 384, 1}));
  }
  EXPECT_EQ(views.outputLayouts[2].offsetOf({1, 1, 5, 7}),
            6144 + 5 * 384 + 256 + 64 + 7);
  // Reads the packed projection, both merged tensors and the log-sum-exp
  // once; writes the packed gradient; its time is the backward's.
  ASSERT_EQ(kernel->inputs.size(), 4u);
  EXPECT_EQ(kernel->bytesWritten, 2 * 16 * 384 * 2);
  auto grad = cast<FlashAttentionGradOp>(kernel->anchor);
  EXPECT_DOUBLE_EQ(
      kernel->timeSeconds,
      estimateKernelTime(grad.getKernelWork(target), target).timeSeconds);

  // A concat packing something besides the gradients is no output view.
  std::string why;
  ops = parseOps(
      "%x: tensor<2x2x16x64xbf16>, %lse: tensor<2x2x16xf32>, "
      "%other: tensor<2x16x128xbf16>",
      "%dq, %dk, %dv = memwall.flash_attention_grad %x, %x, %x, %x, %x, %lse "
      "scale 0.125 block_q 64 block_kv 64 : (tensor<2x2x16x64xbf16>, "
      "tensor<2x2x16x64xbf16>, tensor<2x2x16x64xbf16>, "
      "tensor<2x2x16x64xbf16>, tensor<2x2x16x64xbf16>, tensor<2x2x16xf32>) "
      "-> (tensor<2x2x16x64xbf16>, tensor<2x2x16x64xbf16>, "
      "tensor<2x2x16x64xbf16>)\n"
      "%t = memwall.transpose %dq [0, 2, 1, 3] : tensor<2x2x16x64xbf16> -> "
      "tensor<2x16x2x64xbf16>\n"
      "%m = memwall.reshape %t [2, 16, 128] : tensor<2x16x2x64xbf16> -> "
      "tensor<2x16x128xbf16>\n"
      "%c = memwall.concat %m, %other axis 2 : tensor<2x16x128xbf16>, "
      "tensor<2x16x128xbf16> -> tensor<2x16x256xbf16>");
  EXPECT_TRUE(failed(analyzeKernel(ops, target, &why)));
  EXPECT_NE(why.find("a concat in the kernel packs more than its gradients"),
            std::string::npos)
      << why;
}

TEST_F(FusionCostTest, QAndKRopesShareOneKernelThroughTheirHeadsSplits) {
  // 4 query heads and 2 KV heads of 64 at 16 positions: one kernel reads
  // both [1, 16, H·64] projections through their heads splits.
  SmallVector<Operation *> ops = parseOps(
      "%xq: tensor<1x16x256xbf16>, %xk: tensor<1x16x128xbf16>, %p: "
      "tensor<16xi64>",
      "%qs = memwall.reshape %xq [1, 16, 4, 64] : tensor<1x16x256xbf16> -> "
      "tensor<1x16x4x64xbf16>\n"
      "%qh = memwall.transpose %qs [0, 2, 1, 3] : tensor<1x16x4x64xbf16> -> "
      "tensor<1x4x16x64xbf16>\n"
      "%ks = memwall.reshape %xk [1, 16, 2, 64] : tensor<1x16x128xbf16> -> "
      "tensor<1x16x2x64xbf16>\n"
      "%kh = memwall.transpose %ks [0, 2, 1, 3] : tensor<1x16x2x64xbf16> -> "
      "tensor<1x2x16x64xbf16>\n"
      "%qr = memwall.rope %qh, %p : tensor<1x4x16x64xbf16>, tensor<16xi64>\n"
      "%kr = memwall.rope %kh, %p : tensor<1x2x16x64xbf16>, tensor<16xi64>");
  FailureOr<KernelAnalysis> kernel = analyzeKernel(ops, target);
  ASSERT_TRUE(succeeded(kernel));
  EXPECT_EQ(kernel->kind, FusionKind::Rope);
  ASSERT_TRUE(kernel->rope);
  ASSERT_EQ(kernel->rope->ropes.size(), 2u);
  // k's element (b, h, s, d) at s·128 + h·64 + d of its projection.
  EXPECT_EQ(ArrayRef<int64_t>(kernel->rope->inputs[1].strides),
            ArrayRef<int64_t>({2048, 64, 128, 1}));
  // Both ropes' traffic in one launch: reads 16·(256 + 128)·2 B and the
  // positions (8 B each), writes the same activations.
  EXPECT_EQ(kernel->outputs.size(), 2u);
  EXPECT_EQ(kernel->bytesRead, 16 * 384 * 2 + 16 * 8);
  EXPECT_EQ(kernel->bytesWritten, 16 * 384 * 2);

  // Ropes of different positions are two kernels.
  SmallVector<Operation *> apart = parseOps(
      "%q: tensor<1x4x16x64xbf16>, %k: tensor<1x2x16x64xbf16>, %p: "
      "tensor<16xi64>, %p2: tensor<16xi64>",
      "%qr = memwall.rope %q, %p : tensor<1x4x16x64xbf16>, tensor<16xi64>\n"
      "%kr = memwall.rope %k, %p2 : tensor<1x2x16x64xbf16>, tensor<16xi64>");
  std::string why;
  EXPECT_TRUE(failed(analyzeKernel(apart, target, &why)));
  EXPECT_NE(why.find("the two differ"), std::string::npos) << why;
}

TEST_F(FusionCostTest, AdamWUpdatesShareOneLaunchAndItsParameterSpace) {
  SmallVector<Operation *> ops = parseOps(
      "%p: tensor<1024xbf16>, %g: tensor<1024xbf16>, %m: tensor<1024xf32>, "
      "%v: tensor<1024xf32>, %w: tensor<1024xf32>, %q: tensor<512xf32>, "
      "%h: tensor<512xf32>, %n: tensor<512xf32>, %u: tensor<512xf32>",
      "%0:4 = memwall.adamw %p, %g, %m, %v master %w lr 1.0e-03 : "
      "(tensor<1024xbf16>, tensor<1024xbf16>, tensor<1024xf32>, "
      "tensor<1024xf32>, tensor<1024xf32>) -> (tensor<1024xbf16>, "
      "tensor<1024xf32>, tensor<1024xf32>, tensor<1024xf32>)\n"
      "%1:3 = memwall.adamw %q, %h, %n, %u lr 1.0e-03 : (tensor<512xf32>, "
      "tensor<512xf32>, tensor<512xf32>, tensor<512xf32>) -> "
      "(tensor<512xf32>, tensor<512xf32>, tensor<512xf32>)");
  FailureOr<KernelAnalysis> kernel = analyzeKernel(ops, target);
  ASSERT_TRUE(succeeded(kernel));
  EXPECT_EQ(kernel->kind, FusionKind::Horizontal);
  EXPECT_EQ(kernel->inputs.size(), 9u);
  EXPECT_EQ(kernel->outputs.size(), 7u);
  // Read: 1024 x (2 + 2 + 4 + 4 + 4) and 512 x 4 x 4; written: 1024 x (2 +
  // 4 + 4 + 4) and 512 x 3 x 4. 16 FLOPs per parameter.
  EXPECT_EQ(kernel->bytesRead, 16384 + 8192);
  EXPECT_EQ(kernel->bytesWritten, 14336 + 6144);
  EXPECT_EQ(kernel->flops, 16 * 1536);
  // One launch for both, the traffic at the full bandwidth.
  double compute = 16 * 1536 / 10e12;
  double memory = (24576 + 20480) / 1e12;
  EXPECT_NEAR(kernel->timeSeconds,
              std::pow(std::pow(compute, 4) + std::pow(memory, 4), 0.25) + 2e-6,
              1e-15);
}

TEST_F(FusionCostTest, AdamWUpdatesBeyondTheLaunchsParameterSpaceAreRefused) {
  // With master weights an update takes 5 buffers, 40 bytes of pointers:
  // 102 fit in 4096 bytes (4080), 103 (4120) do not.
  auto updates = [&](int count) {
    std::string args, body;
    for (int i = 0; i < count; ++i) {
      for (StringRef name : {"p", "g"})
        args += llvm::formatv("%{0}{1}: tensor<64xbf16>, ", name, i).str();
      for (StringRef name : {"m", "v", "w"})
        args += llvm::formatv("%{0}{1}: tensor<64xf32>, ", name, i).str();
      body += llvm::formatv(
                  "%r{0}:4 = memwall.adamw %p{0}, %g{0}, %m{0}, %v{0} master "
                  "%w{0} lr 1.0e-03 : (tensor<64xbf16>, tensor<64xbf16>, "
                  "tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) -> "
                  "(tensor<64xbf16>, tensor<64xf32>, tensor<64xf32>, "
                  "tensor<64xf32>)\n",
                  i)
                  .str();
    }
    args.resize(args.size() - 2);
    return parseOps(args, body);
  };
  SmallVector<Operation *> fitting = updates(102);
  FailureOr<KernelAnalysis> kernel = analyzeKernel(fitting, target);
  ASSERT_TRUE(succeeded(kernel));
  EXPECT_EQ(kernel->inputs.size(), 510u);
  std::string whyNot;
  SmallVector<Operation *> tooMany = updates(103);
  EXPECT_TRUE(failed(analyzeKernel(tooMany, target, &whyNot)));
  EXPECT_EQ(whyNot, "its 515 buffers take 4120 bytes of kernel parameters, "
                    "more than the 4096 a launch has");
}
